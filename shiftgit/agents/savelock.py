"""The lock one save of a run's conversation holds (agents/background.py): `<git-dir>/shift/agents/context-<run>.lock`.

An flock, so the kernel lets go of it when its process dies; the file names the holder's pid.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from shiftgit.repo import Repo

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import IO

LOCK_WAIT = 60.0  # seconds a save waits for the run's previous one


class Busy(Exception):
    """Another save of the run held its lock past the wait."""


def lock_path(repo: Repo, run: str) -> Path:
    from shiftgit.agents import private

    return private.path(repo, f"context-{run}.lock")


class lock:  # noqa: N801  # used as a function: `with lock(repo, run) as handle`
    """Hold the run's save lock (Busy after `wait` seconds); the file then names this process. The open file
    is yielded: a child given its descriptor (agents/background.py) holds the lock on after this process left.
    (A class, not contextlib.contextmanager: contextlib costs a hook about 0.4 ms to import.)"""

    def __init__(self, repo: Repo, run: str, wait: float = LOCK_WAIT) -> None:
        self.repo, self.run, self.wait = repo, run, wait
        self.handle: IO[str] | None = None

    def __enter__(self) -> IO[str]:
        path = lock_path(self.repo, self.run)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+")  # noqa: SIM115  # closed by __exit__
        try:
            if not _take(handle, self.wait):
                raise Busy(f"another save of run {self.run}'s conversation held {path} for {self.wait:.0f} s")
            handle.truncate(0)
            handle.write(f"{os.getpid()}\n")
            handle.flush()
        except BaseException:
            handle.close()
            raise
        self.handle = handle
        return handle

    def __exit__(self, *exc: object) -> None:
        handle, self.handle = self.handle, None
        if handle is not None:
            handle.close()


def _take(handle: IO[str], wait: float) -> bool:
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def wait(repo: Repo, run: str, seconds: float = 30.0) -> bool:
    """Until no save of `run` is running (True), or `seconds` passed (False)."""
    path = lock_path(repo, run)
    if not path.exists():
        return True
    with open(path, "a+") as handle:
        if not _take(handle, seconds):
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


