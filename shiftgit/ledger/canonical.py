"""Canonical ledger bytes, and what a reader of ledger JSON needs without the data model.

Importing the model builds some twenty dataclasses (the largest import cost of an agent hook), so the
hot paths (agent hooks, `Store.document`) use this module instead: the canonical form, the run id
pattern and the schema version (mirrors of `model.RUN_ID_PATTERN` and `model.SCHEMA_VERSION`; a test
keeps them equal).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

SCHEMA_VERSION = 2
RUN_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"


def canonical_bytes(document: Mapping[str, Any]) -> bytes:
    """Sorted keys, two-space indent, UTF-8, trailing newline: same content, same blob."""
    return (json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
