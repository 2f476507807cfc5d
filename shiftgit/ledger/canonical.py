"""Canonical ledger bytes, and what a reader of ledger JSON needs without the data model.

Importing the model builds some twenty dataclasses (the largest import cost of an agent hook), so the
hot paths (agent hooks, `Store.document`) use this module instead: the canonical form, the run id
pattern and the schema version (mirrors of `model.RUN_ID_PATTERN` and `model.SCHEMA_VERSION`; a test
keeps them equal).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 2
RUN_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"


def canonical_bytes(document: Mapping[str, Any]) -> bytes:
    """Sorted keys, two-space indent, UTF-8, trailing newline: same content, same blob."""
    return (json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


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
