"""The session start's quick look at the published copies of a run (agents/published.py): the refs read from the
git dir's files, each ledger commit's (epoch, seq) as shiftgit remembered it when it wrote or read that commit. It
never hides a published record newer than the work tree's ledger: the briefing tells it as the full look does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import SG, Repo

from shiftgit.agents.published import newer_is_none
from shiftgit.git import ledgerref
from shiftgit.ledger.store import Store
from shiftgit.repo import Repo as ShiftRepo


def briefing(repo: Repo) -> str:
    body = json.dumps({"session_id": "s-1", "cwd": str(repo.path), "hook_event_name": "SessionStart",
                       "source": "startup"})
    proc = subprocess.run([*SG, "hook", "claude", "session-start"], cwd=repo.path, input=body, text=True,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])


def quick(repo: Repo) -> bool:
    store = Store(ShiftRepo.open(repo.path))
    return newer_is_none(store, "demo", store.document("demo"))


def known_file(repo: Repo) -> Path:
    return repo.path / ".git" / "shift" / ledgerref.KNOWN


def test_each_ledger_commit_is_remembered_with_the_epoch_and_seq_its_ledger_holds(run_repo: Repo) -> None:
    for step in ("one", "two"):
        run_repo.ok("checkpoint", "--step", step)
    known = ledgerref.known(ShiftRepo.open(run_repo.path))
    tip = run_repo.git("rev-parse", "refs/shift/ledgers/demo").strip()
    assert tip in known and len(known) >= 2
    for commit, pair in known.items():
        document = json.loads(run_repo.git("show", f"{commit}:{ledgerref.FILE}"))
        assert pair == (ledgerref.epoch_of(document), ledgerref.seq_of(document))


def test_the_files_settle_a_usual_session_start_packed_or_loose(run_repo: Repo) -> None:
    run_repo.ok("checkpoint", "--step", "one")
    assert quick(run_repo)
    run_repo.git("pack-refs", "--all")
    assert not (run_repo.path / ".git/refs/shift/ledgers/demo").exists()
    assert quick(run_repo)
    known_file(run_repo).write_text("{not json")  # a broken cache: the full look, never a wrong answer
    assert not quick(run_repo)


def test_a_copy_of_an_unknown_commit_takes_the_full_look(run_repo: Repo) -> None:
    run_repo.ok("checkpoint", "--step", "one")
    tip = run_repo.git("rev-parse", "refs/shift/ledgers/demo").strip()
    run_repo.git("update-ref", "refs/shift-remote/origin/shift/ledgers/demo", tip)
    assert quick(run_repo)  # the same commit, known
    other = run_repo.git("commit-tree", f"{tip}^{{tree}}", "-p", tip, "-m", "fetched").strip()
    run_repo.git("update-ref", "refs/shift-remote/origin/shift/ledgers/demo", other)
    assert not quick(run_repo)


@pytest.mark.parametrize("cache", ["kept", "lost"])
def test_a_published_record_newer_than_the_work_trees_ledger_is_told(run_repo: Repo, cache: str) -> None:
    """Checkpoint #2 is on the ledger ref, the work tree's file went back to #1: the briefing tells #2, whether
    the commits' seqs are remembered (the quick look sees #2 wins) or not (it cannot tell)."""
    run_repo.ok("checkpoint", "--step", "one")
    older = run_repo.ledger_path("demo").read_bytes()
    run_repo.ok("checkpoint", "--step", "two")
    run_repo.ledger_path("demo").write_bytes(older)
    if cache == "lost":
        known_file(run_repo).unlink()
    assert not quick(run_repo)
    told = briefing(run_repo)
    assert "refs/shift/ledgers/demo:ledger.json" in told and "newer than this work tree's file" in told
    assert "checkpoint #2" in told and '"two"' in told
    assert ledgerref.known(ShiftRepo.open(run_repo.path))  # the full look remembered what it read


def test_the_briefing_is_the_same_whether_the_files_settle_it_or_git_does(run_repo: Repo) -> None:
    run_repo.ok("checkpoint", "--step", "one", "--next", "two")
    briefing(run_repo)  # the session joins the ledger: the next start changes nothing
    assert quick(run_repo)
    settled = briefing(run_repo)
    known_file(run_repo).unlink()
    assert not quick(run_repo)
    assert briefing(run_repo) == settled
