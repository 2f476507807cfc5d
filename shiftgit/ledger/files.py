"""Durable file writes: every byte written and checked, fsynced, renamed into place, or nothing changes.

Used for ledgers, the config, AGENTS.md and agent configs, trust records. A full disk, a file size
limit, a read-only file system or a refused permission end in one StorageError line, the old file
intact. (Split from store.py, which re-exports `write_atomic` and `storage_error`.)
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from shiftgit import rawjson
from shiftgit.errors import StorageError

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import IO

_FULL = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
         errno.EFBIG: "the file would exceed the file size limit (ulimit -f)",
         errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
         errno.EPERM: "the operation is not permitted", errno.EIO: "an input/output error"}


def write_atomic(path: Path, data: bytes, *, is_json: bool | None = None) -> None:
    """Temp file, every byte written and checked, fsync, rename, fsync dir: the old file or the new, never a torn one.

    `is_json` (default: the name ends in .json) also parses what reached the disk before the rename.
    Raises StorageError (the old file intact, the temp removed) when the file system refuses.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_checked(tmp, data, path.name.endswith(".json") if is_json is None else is_json)
        os.replace(tmp, path)
    except OSError as exc:
        _discard(tmp)
        raise storage_error(path, exc) from None
    try:  # the rename is done; a directory that cannot sync is no reason to fail
        dirfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dirfd)
        finally:
            os.close(dirfd)
    except OSError:
        pass


def _write_checked(tmp: Path, data: bytes, is_json: bool) -> None:
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        view, done = memoryview(data), 0
        while done < len(data):
            wrote = os.write(fd, view[done:])  # may write less than asked (a full disk, `ulimit -f`): go on
            if wrote <= 0:
                raise OSError(errno.ENOSPC, f"only {done} of {len(data)} bytes could be written")
            done += wrote
        os.fsync(fd)
        if os.fstat(fd).st_size != len(data) or os.pread(fd, len(data) + 1, 0) != data:
            raise OSError(errno.EIO, "what reached the disk differs from what was written")
        if is_json:
            rawjson.loads(data)
    except ValueError as exc:  # a bug (shiftgit writes only canonical JSON), never bad input
        raise AssertionError(f"refusing to write invalid JSON to {tmp}: {exc}") from None
    finally:
        os.close(fd)


def _discard(tmp: Path) -> None:
    try:
        tmp.unlink()
    except OSError:
        pass


def storage_error(path: Path | str, exc: OSError) -> StorageError:
    """One line: what could not be written, why, and that nothing changed."""
    why = _FULL.get(exc.errno or 0) or exc.strerror or str(exc)
    return StorageError(f"cannot write {path}: {why}; nothing was changed (the old file is intact); free space "
                        "or make it writable, then run the command again")


def remove_stale_temps(folder: Path) -> None:
    """Temp files left by killed writers (their pid is gone) are removed; live ones are left alone."""
    try:  # `folder.glob(".*.tmp")`, without the pattern's re (a session start writes the ledger: see `__main__`)
        temps = [folder / name for name in os.listdir(folder) if len(name) > 4 and name[0] == "." and
                 name.endswith(".tmp")]
    except OSError:
        return
    if not temps:
        return
    from shiftgit.procs import pid_exists  # only now: it loads ctypes

    for tmp in temps:
        pid = tmp.name.rsplit(".", 2)[-2]
        if pid.isdigit() and not pid_exists(int(pid)):
            tmp.unlink(missing_ok=True)


class RunLock:
    """`with store.lock(run)` (ledger/store.py): the run's lock file held (flock) inside the block. A class, not
    contextlib.contextmanager: every agent hook imports this module, and contextlib costs it about 0.4 ms."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: IO[str] | None = None

    def __enter__(self) -> None:
        handle = open(self.path, "a")  # noqa: SIM115  # closed by __exit__
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except BaseException:
            handle.close()
            raise
        self.handle = handle

    def __exit__(self, *exc: object) -> None:
        handle, self.handle = self.handle, None
        if handle is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_UN)
            finally:
                handle.close()
