"""The lock one save of a run's conversation holds (agents/background.py): `<git-dir>/shift/agents/context-<run>.lock`.

An flock, so the kernel lets go of it when its process dies; the file names the holder's pid.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def lock(repo: Repo, run: str, wait: float = LOCK_WAIT) -> Iterator[IO[str]]:
    """Hold the run's save lock (Busy after `wait` seconds); the file then names this process. The open file
    is yielded: a child given its descriptor (agents/background.py) holds the lock on after this process left."""
    path = lock_path(repo, run)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        if not _take(handle, wait):
            raise Busy(f"another save of run {run}'s conversation held {path} for {wait:.0f} s")
        handle.truncate(0)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield handle


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


