"""Stale ref locks: what a SIGKILLed `git update-ref` leaves behind.

git's `update-ref` refuses while `<ref>.lock` exists, and git never removes a lock it did not create. Live git
holds a ref lock for milliseconds; a killed writer's lock would refuse every later update of that ref for ever
(the checkpoint after an agent killed mid-checkpoint would fail, and every one after it). So a writer that meets
the lock of the ref it updates (never `packed-refs.lock` or another ref's) removes it once its mtime is
STALE_LOCK_SECONDS old: it renames it to a unique name, checks that the file it moved is the one it judged
(inode, mtime), and if not (a new writer took the lock meanwhile) links it back without overwriting. Assumed: no
live writer holds the lock that long (a SIGSTOPped git could).
"""

from __future__ import annotations

import os
import time

STALE_LOCK_SECONDS = 5.0
HELD_LOCK = r"Unable to create '(.+\.lock)': File exists"  # compiled where used: `status`, `log` need no re


def held_lock(stderr: str, ref: str, cwd: str | os.PathLike[str]) -> str | None:
    """The path of REF's own lock file when git's STDERR says it refused because of it; else None."""
    import re

    held = re.search(HELD_LOCK, stderr)
    if not held or not held.group(1).endswith(f"/{ref}.lock"):
        return None
    return os.path.join(cwd, held.group(1))  # git names it absolute; were it relative, it would be to cwd


def clear_stale_lock(stderr: str, ref: str, cwd: str | os.PathLike[str]) -> bool:
    """Remove REF's lock that git's STDERR names if it is STALE_LOCK_SECONDS old (see the module's policy)."""
    lock = held_lock(stderr, ref, cwd)
    if lock is None:
        return False
    try:
        seen = os.stat(lock)
    except FileNotFoundError:
        return False
    if time.time() - seen.st_mtime < STALE_LOCK_SECONDS:
        return False
    return remove_if_same(lock, seen)


def wait_out(stderr: str, ref: str, cwd: str | os.PathLike[str]) -> bool:
    """REF's lock that git's STDERR names is gone, or turned stale and was removed, within STALE_LOCK_SECONDS and a
    little: True (the caller updates again). False: git refused for another reason, or a live writer holds on."""
    lock = held_lock(stderr, ref, cwd)
    deadline = time.monotonic() + STALE_LOCK_SECONDS + 1
    while lock is not None:
        try:
            seen = os.stat(lock)
        except FileNotFoundError:
            return True
        if time.time() - seen.st_mtime >= STALE_LOCK_SECONDS:
            return remove_if_same(lock, seen) or not os.path.exists(lock)
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return False


def remove_if_same(lock: str | os.PathLike[str], seen: os.stat_result) -> bool:
    import random

    lock = os.fspath(lock)
    grave = f"{lock}.stale-{os.getpid()}-{random.getrandbits(32):08x}"
    try:
        os.rename(lock, grave)
    except FileNotFoundError:
        return False
    moved = os.stat(grave)
    same = (moved.st_ino, moved.st_dev, moved.st_mtime) == (seen.st_ino, seen.st_dev, seen.st_mtime)
    if not same:
        try:
            os.link(grave, lock)  # a live writer's lock: put it back, never over a newer one
        except OSError:
            pass
    os.unlink(grave)
    return same
