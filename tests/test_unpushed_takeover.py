"""Takeover of a run whose branch never left machine A: only its published checkpoints did.

Machine A set up shiftgit on `main` (pushed), then started a run on a branch `feat` it never pushed,
committed one step there and checkpointed again; `init --publish` sent each checkpoint to the remote.
Machine B clones `main`: no ledger of the run is in its work tree, only A's published record (after
`sync`). Before, `resume` said "unknown run" and sent B to `shiftgit start` a second run under the same
name; `status` said "no runs yet"; the agent's session start said nothing.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import make_repo
from test_takeover import Machine, machine


@pytest.fixture
def b_after_a(tmp_path: Path) -> tuple[Machine, str]:
    """B, a fresh clone of `main` that synced; and the commit A made its last checkpoint on (on `feat`)."""
    seed = make_repo(tmp_path / "seed")
    seed.ok("init", "--hooks", "git", "--agent", "claude")
    config = json.loads(seed.read(".shift/config.json"))
    seed.write(".shift/config.json", json.dumps({**config, "publish": "origin"}, indent=2) + "\n")
    assert seed.commit("set up shiftgit, publishing to origin").returncode == 0
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.path), str(origin)], check=True)
    a = machine(tmp_path, origin, "machine-a")
    a.git("switch", "-q", "-c", "feat")
    a.ok("start", "feat", "--goal", "make calc correct", "--stop-when", "tests pass", "--constraint", "keep the api")
    a.write("calc.py", "def add(a, b):\n    return a + b\n")
    a.ok("checkpoint", "--step", "add()", "--next", "write sub()")
    assert a.commit("add()").returncode == 0
    a.write("calc.py", "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    a.ok("checkpoint", "--step", "sub()", "--next", "test sub()")
    deadline = time.monotonic() + 60
    while (_published(origin).get("checkpoint") or {}).get("seq") != 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _published(origin)["checkpoint"]["step"] == "sub()", "checkpoint #2 never left machine A"
    base = a.git("rev-parse", "HEAD").strip()
    b = machine(tmp_path, origin, "machine-b")
    b.ok("sync")
    return b, base


def _published(origin: Path) -> dict[str, Any]:
    proc = subprocess.run(["git", "--git-dir", str(origin), "show", "refs/shift/ledgers/feat:ledger.json"],
                          capture_output=True, text=True)
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


def test_resume_decides_from_the_published_record_instead_of_calling_the_run_unknown(
        b_after_a: tuple[Machine, str]) -> None:
    b, base = b_after_a
    assert not (b.path / ".shift/runs/feat").exists()
    for argv in (("resume", "--no-run", "--json"), ("resume", "feat", "--no-run", "--json")):
        proc = b.sg(*argv)
        report = json.loads(proc.stdout)
        assert report["run"] == "feat" and report["source"]["kind"] == "published", proc.stderr
        assert report["source"]["seq"] == 2 and report["source"]["remote"] == "origin"
        reasons = " ".join(report["reasons"])
        assert "holds no ledger of the run" in reasons and "shiftgit resume feat --adopt" in reasons
        # HEAD (main) is behind the commit A checkpointed on, which came with the snapshot: how to get there
        assert f"git switch -c feat {base[:12]}" in reasons
        assert "unknown run" not in proc.stderr and "shiftgit start" not in proc.stderr
    assert "only active run another clone published" in b.sg("resume", "--no-run").stderr
    assert not (b.path / ".shift/runs/feat").exists(), "deciding wrote a ledger"
    assert not b.git("rev-parse", "--git-path", "shift/active").strip() or not Path(
        b.path, b.git("rev-parse", "--git-path", "shift/active").strip()).exists(), "a run with no ledger made active"


def test_status_and_the_session_start_name_the_published_run(b_after_a: tuple[Machine, str]) -> None:
    b, _ = b_after_a
    status = b.sg("status")
    assert status.returncode == 0 and "no runs yet" not in status.stdout
    assert "feat" in status.stdout and "not in this work tree" in status.stdout
    assert "shiftgit resume feat --adopt" in status.stdout
    row = next(r for r in json.loads(b.sg("status", "--json").stdout)["runs"] if r["id"] == "feat")
    assert row["published_only"] is True and row["source"]["seq"] == 2
    event = {"session_id": "s-b", "cwd": str(b.path), "hook_event_name": "SessionStart", "source": "startup"}
    proc = b.sg("hook", "claude", "session-start", input=json.dumps(event))
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "run 'feat'" in context and "shiftgit resume feat" in context and "published from host" in context
    show = b.sg("show", "feat")
    assert show.returncode == 2 and "published record" in show.stderr and "shiftgit start" not in show.stderr


def test_a_run_on_a_branch_not_checked_out_here_is_not_taken_for_a_lost_one(b_after_a: tuple[Machine, str]) -> None:
    """The run's ledger is committed on `feat`, which this clone has: switch to it, never adopt it onto `main`."""
    b, base = b_after_a
    b.git("branch", "feat", base)
    assert "feat" not in b.sg("status").stdout
    proc = b.sg("resume", "feat", "--no-run")
    assert proc.returncode == 2 and "git switch feat" in proc.stderr and "--adopt" not in proc.stderr
    assert "only active run" not in b.sg("resume", "--no-run").stderr
    b.git("switch", "-q", "feat")
    report = json.loads(b.sg("resume", "--no-run", "--json").stdout)
    assert report["run"] == "feat" and report["source"]["seq"] == 2  # the committed #1, and A's newer #2


def test_following_the_advice_takes_the_run_over(b_after_a: tuple[Machine, str]) -> None:
    b, base = b_after_a
    b.git("switch", "-q", "-c", "feat", base)  # what resume said to run
    proc = b.sg("resume", "feat", "--adopt", "--take-over", "--no-run")
    assert proc.returncode in (0, 3, 4), proc.stderr
    assert "sub(a, b)" in b.read("calc.py")
    assert json.loads(b.read(".shift/runs/feat/ledger.json"))["checkpoint"]["seq"] == 2
    b.ok("checkpoint", "--step", "B carries on", "--next", "test sub()")
    assert b.commit("sub()").returncode == 0, "the gate refused the adopted state"


def test_a_work_tree_without_shift_is_told_where_the_published_run_was_made(b_after_a: tuple[Machine, str]) -> None:
    b, base = b_after_a
    b.git("rm", "-q", "-r", ".shift")  # a branch where shiftgit was never set up
    b.git("commit", "-q", "--no-verify", "-m", "no shiftgit here")
    proc = b.sg("resume")
    assert proc.returncode == 2 and "run `shiftgit init` first" in proc.stderr
    assert "run 'feat'" in proc.stderr and f"git switch -c feat {base[:12]}" in proc.stderr
    assert "then `shiftgit resume feat`" in proc.stderr
