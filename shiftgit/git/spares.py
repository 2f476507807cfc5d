"""Empty files made ahead of time, given a name once their content is known: a new file is the slow part of a write.

Creating a file on this machine's ext4 took 0.02-0.2 ms (inode allocation; the slow end where many files were just
deleted, as every commit's temporary objects and locks are), where hard-linking a file, renaming it or writing a
few KB into it took a few µs. The note of a checkpointed commit can only be written once git has made the commit
(its trees and commits name the commit's id), and post-commit waits for it: six objects and two ref locks, each a
new file. So git/waiter.py's child makes that many empty files while git makes the commit, each open for writing,
and hands them out: an object is written into one, which is then linked into place (rawgit.write_loose); a ref's
lock is one hard-linked to `REF.lock`, which fails, as O_EXCL does, when the lock is held (git/refswap.py). They are
`tmp_obj_shiftgit_<pid>_<n>` in the object directory, where `git prune` removes the files named `tmp_*` a killed
process left (as it removes git's own); `close` removes those not taken. Stdlib os only (the commit path).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~4 ms to import
if TYPE_CHECKING:
    from typing import Any


class Spares:
    """Empty files in FOLDER made now, each open for writing: MODES maps a mode (0o444: an object's, read-only;
    0o666: a lock's) to how many."""

    def __init__(self, folder: str, modes: dict[int, int]) -> None:
        self.free: dict[int, list[tuple[str, int]]] = {mode: [] for mode in modes}
        prefix, made = os.path.join(folder, f"tmp_obj_shiftgit_{os.getpid()}_"), 0
        try:
            for mode, count in modes.items():
                for _ in range(count):
                    path = f"{prefix}{made}"
                    self.free[mode].append((path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)))
                    made += 1
        except OSError:
            pass  # fewer spares: the rest are created when needed

    def pop(self, mode: int) -> tuple[str, int] | None:
        """A spare of MODE, its path and fd, now the caller's to name and to remove; None when none is left."""
        free = self.free.get(mode)
        return free.pop() if free else None

    def take(self, target: str, mode: int) -> int | None:
        """An empty file of MODE now named TARGET (and no longer by its spare name), open for writing: its fd; None
        when no spare is left or hard links fail here. Raises FileExistsError, as O_EXCL would, when TARGET exists."""
        spare = self.pop(mode)
        if spare is None:
            return None
        path, fd = spare
        try:
            # now, not when the spare was made: a lock's age is how git/reflocks.py tells a killed writer's lock
            os.utime(fd)
            os.link(path, target)
        except OSError as exc:
            if isinstance(exc, FileExistsError) and _linked(fd):  # NFS: a retried LINK whose first try made it
                return fd
            os.close(fd)
            if isinstance(exc, FileExistsError):
                raise
            return None
        finally:
            _remove(path)
        return fd

    def close(self) -> None:
        """Remove the spares not taken."""
        for free in self.free.values():
            while free:
                path, fd = free.pop()
                os.close(fd)
                _remove(path)

    def __enter__(self) -> Spares:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _linked(fd: int) -> bool:
    try:
        return os.fstat(fd).st_nlink == 2
    except OSError:
        return False
