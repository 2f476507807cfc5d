"""Load the JSON Schema and validate documents against it; migrate old schema versions."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from shiftgit import textsafe
from shiftgit.errors import LedgerError
from shiftgit.ledger.canonical import v1_to_v2
from shiftgit.ledger.model import SCHEMA_VERSION, Ledger
from shiftgit.ledger.quickschema import schema_text as schema_text  # defined there: no model needed

# version -> function upgrading a document of that version to version + 1
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: v1_to_v2}


@cache
def _validator(name: str) -> Any:
    import jsonschema

    schema = json.loads(schema_text(name))
    return jsonschema.Draft202012Validator(schema)


def _json_path(error: Any) -> str:
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def schema_errors(document: Any, name: str = "ledger.schema.json") -> list[str]:
    """Every schema error as 'JSON path: message', in document order.

    A document quickschema vouches for has none; any other is judged by jsonschema (imported only then).
    """
    from shiftgit.ledger.quickschema import is_valid

    if is_valid(document, name):
        return []
    errors = sorted(_validator(name).iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{_json_path(e)}: {e.message}" for e in errors]


def check_version(document: Any, where: str) -> None:
    """Refuse a newer schema than this shiftgit knows, before anything else reads it."""
    if not isinstance(document, Mapping):
        raise LedgerError(f"{where}: not a JSON object; restore it with `git checkout -- {where}`")
    version = document.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise LedgerError(
            f"{where}: schema_version {version} is newer than this shiftgit knows ({SCHEMA_VERSION}); "
            "upgrade shiftgit (pip install -U shiftgit)"
        )


def migrate(document: dict[str, Any]) -> dict[str, Any]:
    version = document.get("schema_version")
    while isinstance(version, int) and version < SCHEMA_VERSION and version in MIGRATIONS:
        document = MIGRATIONS[version](document)
        version = document.get("schema_version")
    return document


def _no_constant(name: str) -> Any:
    """NaN and Infinity are not JSON: a ledger holding one is corrupt (it would disable a budget for good)."""
    raise ValueError(f"{name} is not a JSON number")


def parse_ledger(text: str | bytes, where: str) -> Ledger:
    """Raw JSON -> validated Ledger. Raises LedgerError naming the file and every problem."""
    try:
        document = json.loads(text, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nested thousands deep
        raise LedgerError(f"{where}: corrupt JSON ({exc}); it was left untouched — "
                          f"restore it with `git checkout -- {where}` or fix it by hand") from None
    check_version(document, where)
    document = migrate(document)
    problems = schema_errors(document)
    if problems:
        raise LedgerError(f"{where}: invalid ledger: {summary(problems)} — fix it (`shiftgit validate` lists every "
                          f"problem), or restore it with `git checkout -- {where}`")
    try:
        return Ledger.from_dict(document)
    except (TypeError, ValueError, KeyError) as exc:  # what the schema allows and a record cannot hold (a hand-made
        raise LedgerError(f"{where}: invalid ledger: {summary([_record_problem(exc)])} — fix it, or restore it with "
                          f"`git checkout -- {where}`") from None


def _record_problem(exc: Exception) -> str:
    """A record's refusal in the ledger's words: `Effect.__init__() missing 1 required keyword-only argument:
    'created_at'` is an "effect record without 'created_at'" (a field the schema leaves optional, the record needs)."""
    import re

    missing = re.fullmatch(r"(\w+)\.__init__\(\) missing \d+ required keyword-only arguments?: (.+)", str(exc))
    if not isinstance(exc, TypeError) or missing is None:
        return str(exc)
    kind = re.sub(r"(?<!^)(?=[A-Z])", " ", missing.group(1)).lower()
    return f"{kind} record without {missing.group(2)}"


SHOWN_PROBLEMS = 3
PROBLEM_CAP = 160


def summary(problems: list[str]) -> str:
    """The first few problems, each on one line and cut short (a value in a message may be anything)."""
    shown = "; ".join(textsafe.one_line(p, PROBLEM_CAP) for p in problems[:SHOWN_PROBLEMS])
    more = len(problems) - SHOWN_PROBLEMS
    return shown + (f" (+{more} more)" if more > 0 else "")
