"""What the commit path reads of a raw ledger without the ledger model: run ids and the checkpoint.

Stdlib only, and small: the commit gate's process imports it (no re: its import costs the gate ~15 ms here).
"""

from __future__ import annotations

from _collections_abc import Mapping  # = collections.abc's, without the collections package

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from typing import Any

RUN_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"  # = ledger.RUN_ID_PATTERN (a test keeps them equal)
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_RUN_CHARS = _ALNUM | frozenset("._-")


def is_run_id(text: str) -> bool:
    """RUN_ID_PATTERN matches the whole of `text` (a test checks they agree), said without re."""
    return 0 < len(text) <= 64 and text[0] in _ALNUM and _RUN_CHARS.issuperset(text)


def checkpoint_of(ledger: Any) -> dict[str, Any] | None:
    """The ledger's current checkpoint (raw JSON), when it has one with an id."""
    point = ledger.get("checkpoint") if isinstance(ledger, Mapping) else None
    return dict(point) if isinstance(point, Mapping) and point.get("id") else None
