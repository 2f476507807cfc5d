"""sha1 and sha256 from CPython's own modules when it has them: hashlib loads OpenSSL first (~4-12 ms on a
2-core VM, a fifth of a git or agent hook's start-up), and the digests are the same either way.

The module is chosen by Python's version, not by trying one and falling back: under the git hooks'
`python -S`, a failed import goes to the last finder, which loads site (~10 ms) before it gives up.
For data of BIG bytes or more, hashlib all the same: OpenSSL hashes ten times faster, so past a few hundred
KiB (a ledger of 1,000 effects is 1 MiB, hashed once per write) its import pays for itself at once.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


BIG = 256 * 1024


def hasher(width: int, size: int = 0) -> Callable[[bytes], Any]:
    """sha1 (width 40, git's hex length) or sha256 (width 64): the constructor, `hasher(40)(data).hexdigest()`.
    `size`: how many bytes it will hash (from BIG on: hashlib's)."""
    if size >= BIG:
        import hashlib

        while _AHEAD:  # `load_ahead`'s thread has imported it: gone before anything forks (procs.guard_group)
            _AHEAD.pop().join()
        return hashlib.sha1 if width == 40 else hashlib.sha256
    made = _MADE.get(width)
    if made is None:  # an import statement per call cost ~10 us: `status` asks three times per run
        made = _MADE[width] = _hasher(width)
    return made


_MADE: dict[int, Callable[[bytes], Any]] = {}


def load_ahead(size: int) -> None:
    """Import hashlib (OpenSSL: ~2 ms) in a thread now when data of SIZE bytes is to be hashed soon, so that it loads
    while the caller waits for a git process (`effect run` at 1,000 effects: the lease check's `for-each-ref`).
    The thread is joined when `hasher` first gives hashlib's (the caller's next step must be that hash)."""
    if size >= BIG and "hashlib" not in sys.modules and not _AHEAD:
        import threading

        _AHEAD.append(threading.Thread(target=_load_later, daemon=True))
        _AHEAD[0].start()


def _load_later() -> None:
    import time

    time.sleep(0.0005)  # the caller goes on to start its git process: the GIL is its until it waits for it
    import hashlib  # noqa: F401


_AHEAD: list[Any] = []  # the thread `load_ahead` started, until `hasher` joins it


def blob_id(data: bytes, width: int = 40) -> str:
    """The git blob id of DATA (WIDTH 40: sha1, 64: sha256). The same bytes object asked again gives the id hashed
    the first time: a ledger just written is looked up as validated (`ledger/validated.py`), then committed to its
    ledger ref (`git/rawgit.py`), and a ledger of 1,000 effects takes ~0.5 ms to hash. The few MiB of data last
    asked are kept for that (the object is kept, so its id is not another's)."""
    key = (id(data), width)
    hit = _REMEMBERED.get(key)
    if hit is not None and hit[0] is data:
        return hit[1]
    found: str = hasher(width, len(data))(b"blob %d\0" % len(data) + data).hexdigest()
    remember(data, found)
    return found


def remember(data: bytes, oid: str) -> None:
    """OID is the blob id of DATA (hashed already: a loose blob checked against its id, git/looseread.py), for
    `blob_id` to answer without hashing it again."""
    global _REMEMBERED_BYTES
    if _REMEMBERED_BYTES + len(data) > REMEMBER_BYTES:
        _REMEMBERED.clear()
        _REMEMBERED_BYTES = 0
    _REMEMBERED[(id(data), len(oid))] = (data, oid)
    _REMEMBERED_BYTES += len(data)


REMEMBER_BYTES = 64 * 1024 * 1024
_REMEMBERED: dict[tuple[int, int], tuple[bytes, str]] = {}
_REMEMBERED_BYTES = 0


def _hasher(width: int) -> Callable[[bytes], Any]:
    try:
        if width == 40:
            from _sha1 import sha1

            return sha1  # type: ignore[no-any-return]
        if sys.version_info >= (3, 12):
            from _sha2 import sha256
        else:
            from _sha256 import sha256
        return sha256  # type: ignore[no-any-return]
    except ImportError:  # a Python built without them
        import hashlib

        return hashlib.sha1 if width == 40 else hashlib.sha256
