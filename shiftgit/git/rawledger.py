"""What the commit path reads of a raw ledger without the ledger model: run ids and the checkpoint.

Stdlib only, and small: the commit gate's process imports it (no re: its import costs the gate ~15 ms here).
"""

from __future__ import annotations

from _collections_abc import Mapping  # = collections.abc's, without the collections package

from shiftgit.ledger.canonical import RUN_ID_PATTERN as RUN_ID_PATTERN  # = ledger.RUN_ID_PATTERN (a test checks)
from shiftgit.ledger.canonical import is_run_id as is_run_id

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from typing import Any


def checkpoint_of(ledger: Any) -> dict[str, Any] | None:
    """The ledger's current checkpoint (raw JSON), when it has one with an id."""
    point = ledger.get("checkpoint") if isinstance(ledger, Mapping) else None
    return dict(point) if isinstance(point, Mapping) and point.get("id") else None
