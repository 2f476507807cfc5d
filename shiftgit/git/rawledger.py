"""What the commit path reads of a raw ledger without the ledger model: run ids, the checkpoint, a parse it shares.

Stdlib only (and shiftgit.rawjson), and small: the commit gate's process imports it (no re: its import costs the
gate ~15 ms here).
"""

from __future__ import annotations

from _collections_abc import Mapping  # = collections.abc's, without the collections package

from shiftgit import rawjson
from shiftgit.ledger.canonical import RUN_ID_PATTERN as RUN_ID_PATTERN  # = ledger.RUN_ID_PATTERN (a test checks)
from shiftgit.ledger.canonical import is_run_id as is_run_id

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from typing import Any


def checkpoint_of(ledger: Any) -> dict[str, Any] | None:
    """The ledger's current checkpoint (raw JSON), when it has one with an id."""
    point = ledger.get("checkpoint") if isinstance(ledger, Mapping) else None
    return dict(point) if isinstance(point, Mapping) and point.get("id") else None


def document(data: bytes, text: str | None = None) -> Any:
    """rawjson.loads of DATA (or of TEXT, DATA decoded), raising ValueError as it does, parsed once per bytes object
    for the few last asked: the commit gate's rules and its trailers read the same staged and HEAD ledgers (~0.1 ms
    a parse at 48 KB). The documents are shared: do not change them."""
    key = (id(data), text is None)  # bytes and text parse alike but for a BOM, which only bytes may start with
    hit = _PARSED.get(key)
    if hit is not None and hit[0] is data:
        return hit[1]
    found = rawjson.loads(data if text is None else text)
    if len(_PARSED) >= KEEP_PARSED:  # the gate of a pushed range (git/ci.py) parses ledgers by the thousand
        _PARSED.clear()
    _PARSED[key] = (data, found)
    return found


KEEP_PARSED = 8
_PARSED: dict[tuple[int, bool], tuple[bytes, Any]] = {}
