"""Contract templates: `.shift/templates/NAME.json` (schema `schema/template.schema.json`).

A template holds contract defaults (`contract`), constraints every run from it starts with, and the
fields a start from it must end up with (`required`). `start --template NAME` fills what the command
line left empty and refuses a start that leaves a required field empty, naming the fields.
`insights --suggest NAME --apply` writes suggestions from earlier runs into one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shiftgit import rawjson
from shiftgit.errors import LedgerError, UsageError
from shiftgit.ledger.canonical import canonical_bytes
from shiftgit.ledger.files import write_atomic
from shiftgit.ledger.store import Store

TEMPLATE_VERSION = 1
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
# template field -> ContractInput attribute
FIELDS = {"goal": "goal", "stop_when": "stop_when", "owner": "owner", "time_budget": "minutes",
          "token_budget": "tokens", "cost_budget": "cost", "allow": "allow", "forbid": "forbid",
          "artifacts": "artifacts", "accept": "accept", "scope": "scope", "constraints": "constraints"}
FLAGS = {"goal": "--goal", "stop_when": "--stop-when", "owner": "--owner", "time_budget": "--time-budget",
         "token_budget": "--token-budget", "cost_budget": "--cost-budget", "allow": "--allow", "forbid": "--forbid",
         "artifacts": "--artifact", "accept": "--accept", "scope": "--scope", "constraints": "--constraint"}


def path(store: Store, name: str) -> Path:
    if not NAME.match(name):
        raise UsageError(f"bad template name {name!r}: use 1-64 of a-z 0-9 . _ - (e.g. billing)")
    return store.inside("templates", f"{name}.json")


def names(store: Store) -> list[str]:
    folder = store.inside("templates")
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def load(store: Store, name: str) -> dict[str, Any]:
    """The template, schema-checked; an unknown or invalid one is one clear error (exit 2)."""
    where = path(store, name)
    try:
        data = where.read_bytes()
    except FileNotFoundError:
        known = ", ".join(names(store)) or "none yet"
        raise UsageError(f"no template {name!r} ({store.rel(where)} does not exist; templates here: {known}); "
                         f"create it, or write one from earlier runs with `shiftgit insights --suggest {name} "
                         "--apply`; nothing was started") from None
    return parse(data, store.rel(where))


def read_optional(store: Store, name: str) -> dict[str, Any] | None:
    where = path(store, name)
    return parse(where.read_bytes(), store.rel(where)) if where.exists() else None


def parse(data: bytes, label: str) -> dict[str, Any]:
    from shiftgit.ledger.schema import schema_errors

    try:
        document = rawjson.loads(data)
    except ValueError as exc:
        raise LedgerError(f"{label}: corrupt JSON ({exc}); fix the template, nothing was started") from None
    problems = schema_errors(document, "template.schema.json")
    if problems:
        raise LedgerError(f"{label}: invalid template: {'; '.join(problems[:3])}; nothing was started")
    if document.get("schema_version", 0) > TEMPLATE_VERSION:
        raise LedgerError(f"{label} has schema_version {document['schema_version']}, newer than this shiftgit "
                          "knows; upgrade shiftgit: pip install -U shiftgit")
    return dict(document)


def apply(template: Mapping[str, Any], spec: Any) -> Any:
    """The ContractInput with the template's defaults where the command line gave nothing; its constraints added."""
    defaults = template.get("contract") or {}
    changes: dict[str, Any] = {}
    for field, attr in FIELDS.items():
        if field == "constraints" or field not in defaults:
            continue
        given = getattr(spec, attr)
        if given in (None, "", ()):
            value = defaults[field]
            changes[attr] = tuple(value) if isinstance(value, list) else value
    extra = [c for c in template.get("constraints") or [] if c not in spec.constraints]
    if extra:
        changes["constraints"] = (*extra, *spec.constraints)
    return spec._replace(**changes)


def missing(template: Mapping[str, Any], spec: Any) -> list[str]:
    """The required fields the filled contract still leaves empty."""
    return [field for field in template.get("required") or [] if getattr(spec, FIELDS[field]) in (None, "", ())]


def refuse_missing(name: str, fields: list[str]) -> UsageError:
    flags = ", ".join(f"{f} ({FLAGS[f]})" for f in fields)
    return UsageError(f"template {name!r} requires {flags}, left empty; give them on the command line; nothing "
                      "was started")


def fill(store: Store, name: str, spec: Any) -> tuple[Any, dict[str, Any]]:
    """`start --template NAME`: the filled ContractInput and what the ledger records of the template; a required
    field left empty is refused, naming the fields."""
    template = load(store, name)
    typed = spec
    spec = apply(template, spec)
    lacking = missing(template, spec)
    if lacking:
        raise refuse_missing(name, lacking)
    # commands the template gave (a committed file: anyone's) are not the user's to trust by starting the run
    untyped = [attr for attr in ("accept", "inspect", "escalate_when") if getattr(spec, attr) != getattr(typed, attr)]
    return spec, {"name": name, "sha256": digest(template), "constraints": list(template.get("constraints") or []),
                  "untyped": untyped}


def digest(template: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_bytes(dict(template))).hexdigest()


def write(store: Store, name: str, document: Mapping[str, Any]) -> Path:
    from shiftgit.ledger.schema import schema_errors

    problems = schema_errors(dict(document), "template.schema.json")
    if problems:  # built by shiftgit: a bug, keep the traceback
        raise AssertionError("refusing to write an invalid template: " + "; ".join(problems))
    where = path(store, name)
    where.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(where, canonical_bytes(dict(document)), is_json=True)
    return where
