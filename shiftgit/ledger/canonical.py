"""Canonical ledger bytes, and what a reader of ledger JSON needs without the data model.

Importing the model builds some twenty dataclasses (the largest import cost of an agent hook), so the
hot paths (agent hooks, `Store.document`) use this module instead: the canonical form, the run id
pattern and the schema version (mirrors of `model.RUN_ID_PATTERN` and `model.SCHEMA_VERSION`; a test
keeps them equal).
"""

from __future__ import annotations

from shiftgit import rawjson

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

SCHEMA_VERSION = 2
RUN_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_RUN_CHARS = _ALNUM | frozenset("._-")


def is_run_id(text: str) -> bool:
    """RUN_ID_PATTERN matches the whole of `text` (a test checks they agree), said without re: the commit gate and
    the agent hooks do not import it."""
    return 0 < len(text) <= 64 and text[0] in _ALNUM and _RUN_CHARS.issuperset(text)


def is_ref_name(run: str) -> bool:
    """A run id git can name a ref with (`refs/shift/*/<run>`, git check-ref-format): no `..`, no ending in `.`
    or `.lock`. Runs are listed only under such names: a directory named otherwise is skipped and named."""
    return is_run_id(run) and ".." not in run and not run.endswith((".", ".lock"))


def canonical_bytes(document: Mapping[str, Any]) -> bytes:
    """Sorted keys, two-space indent, UTF-8, trailing newline: same content, same blob."""
    return (canonical_text(document) + "\n").encode("utf-8")


def canonical_text(value: Any, depth: int = 0) -> str:
    """`json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)`, each line after the first indented
    DEPTH levels more: the same text, three times faster (json's own encoder with an indent is pure Python
    and yields a piece at a time). A value it does not know (a non-string key, a custom type) goes to json."""
    try:
        return _encode(value, "\n" + "  " * depth)
    except (TypeError, RecursionError):
        import json  # here: json loads re, which the commit gate does without

        return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)


_string = rawjson.encode_basestring  # what json.dumps(ensure_ascii=False) writes a string with


def _encode(value: Any, newline: str) -> str:
    """VALUE as json.dumps writes it, as its `_make_iterencode` tests types; NEWLINE: a line break and the indent
    of the line VALUE starts on."""
    if type(value) is str:  # the common case first
        return _string(value)
    if isinstance(value, str):
        return _string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    inner = newline + "  "
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        return "[" + inner + ("," + inner).join([_encode(item, inner) for item in value]) + newline + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        if not all(isinstance(key, str) for key in value):
            raise TypeError("a key json converts")
        return "{" + inner + ("," + inner).join([_string(key) + ": " + (_string(item) if type(item) is str else
                                                                          _encode(item, inner))
                                                 for key, item in sorted(value.items())]) + newline + "}"
    raise TypeError(f"{type(value).__name__} is for json to judge")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def v1_to_v2(document: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 (issue 9): acceptance checks are named commands; a schema 1 one was free text nothing ran,
    kept as `text` with no command (`never_attempted` until amended with `--accept NAME=CMD`)."""
    out = dict(document, schema_version=2)
    contract = out.get("contract")
    if isinstance(contract, dict) and isinstance(contract.get("accept"), list):
        accept = [{"name": f"accept-{index}", "argv": [], "text": text} if isinstance(text, str) else text
                  for index, text in enumerate(contract["accept"], 1)]
        out["contract"] = dict(contract, accept=accept)
    return out


def current(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """A schema 1 document as schema 2 reads it (the gate compares like with like); others as they are."""
    if isinstance(document, dict) and document.get("schema_version") == 1:
        return v1_to_v2(document)
    return document
