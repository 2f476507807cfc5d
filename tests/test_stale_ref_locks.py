"""A ref lock left by a killed writer does not stop the next checkpoint (shiftgit/reflocks.py).

`git update-ref` SIGKILLed mid-update (an agent killed mid-checkpoint: its process group goes) leaves
`<ref>.lock`, and git refuses that ref until someone removes it. The next checkpoint waits for the lock
to turn stale (STALE_LOCK_SECONDS: a live git holds it for milliseconds), removes it and carries on.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import Repo

from shiftgit.reflocks import STALE_LOCK_SECONDS


def lock(repo: Repo, ref: str, age: float) -> Path:
    path = repo.path / ".git" / f"{ref}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    then = time.time() - age
    os.utime(path, (then, then))
    return path


@pytest.mark.parametrize("ref", ["refs/shift/ledgers/demo", "refs/shift/snapshots/demo"])
@pytest.mark.parametrize("age", [STALE_LOCK_SECONDS + 60, STALE_LOCK_SECONDS - 2])
def test_a_killed_writers_lock_is_waited_out_and_removed(run_repo: Repo, ref: str, age: float) -> None:
    run_repo.ok("checkpoint", "--step", "before")
    left = lock(run_repo, ref, age)
    run_repo.write("calc.py", "# edited\n" + run_repo.read("calc.py"))
    run_repo.ok("checkpoint", "--step", "after")
    assert not left.exists() and not list(left.parent.glob("*.stale-*"))
    tip = run_repo.git("log", "-1", "--format=%s", ref).strip()
    assert tip.endswith("2"), tip  # the ref moved to checkpoint 2


def test_another_refs_lock_is_never_removed(run_repo: Repo) -> None:
    other = lock(run_repo, "refs/heads/main", STALE_LOCK_SECONDS + 60)
    run_repo.ok("checkpoint", "--step", "a checkpoint touches no branch")
    assert other.exists()
