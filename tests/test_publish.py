"""refs/shift/ledgers/<run> at every checkpoint, and publishing it (with notes and snapshots) in the background."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, make_repo

from shiftgit.git import publish
from shiftgit.ledger.store import Store
from shiftgit.runs import checkpoints

REF = "refs/shift/ledgers/demo"


def set_publish(repo: Repo, remote: str) -> None:
    proc = repo.ok("init", "--hooks", "git", "--publish", remote)
    assert f"pushed to {remote} in the background" in proc.stdout
    assert repo.commit(f"publish to {remote}").returncode == 0


def last_result(repo: Repo, timeout: float = 60) -> dict[str, Any]:
    """Wait for the background publisher to record a result (the checkpoint does not wait for it)."""
    path = repo.path / ".git" / "shift" / "publish.json"
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return json.loads(path.read_text())


def test_each_checkpoint_commits_the_ledger_on_its_ref_and_touches_nothing_else(run_repo: Repo) -> None:
    head, index = run_repo.head(), (run_repo.path / ".git" / "index").read_bytes()
    tips = []
    for step in ("one", "two"):
        run_repo.write("calc.py", run_repo.read("calc.py") + f"# {step}\n")
        run_repo.ok("checkpoint", "--step", step)
        tips.append(run_repo.git("rev-parse", REF).strip())
        assert run_repo.git("show", f"{REF}:ledger.json") == run_repo.ledger_path("demo").read_text()
        assert run_repo.git("ls-tree", "--name-only", REF).split() == ["ledger.json"]
    assert run_repo.git("rev-parse", f"{tips[1]}^").strip() == tips[0]
    assert "Shift-Host:" in run_repo.git("log", "-1", "--format=%B", REF)
    assert run_repo.head() == head and (run_repo.path / ".git" / "index").read_bytes() == index
    assert run_repo.git("status", "--porcelain", "--", "calc.py").startswith(" M")
    checkpoints.publish(Store.open(run_repo.path), "demo")  # the same bytes again: no new commit
    assert run_repo.git("rev-parse", REF).strip() == tips[1]
    assert not (run_repo.path / ".git" / "shift" / "publish.json").exists()  # nothing configured: no push


def test_publish_pushes_ledger_snapshot_and_notes_and_records_success(run_repo: Repo, tmp_path: Path) -> None:
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    run_repo.git("remote", "add", "origin", str(origin))
    set_publish(run_repo, "origin")
    run_repo.write("calc.py", run_repo.read("calc.py") + "# published\n")
    run_repo.ok("checkpoint", "--step", "published step")
    result = last_result(run_repo)
    assert result["result"] == "ok", result
    remote = subprocess.run(["git", "--git-dir", str(origin), "for-each-ref", "--format=%(refname)"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert {REF, "refs/shift/snapshots/demo", "refs/notes/shift"} <= set(remote)
    shown = subprocess.run(["git", "--git-dir", str(origin), "show", f"{REF}:ledger.json"], capture_output=True,
                           text=True, check=True).stdout
    assert json.loads(shown)["checkpoint"]["step"] == "published step"
    assert "last publish to origin" in run_repo.sg("status").stdout and ": ok" in run_repo.sg("status").stdout


def test_a_failing_push_never_fails_the_checkpoint_and_is_shown_by_status_and_briefing(run_repo: Repo,
                                                                                        tmp_path: Path) -> None:
    run_repo.git("remote", "add", "origin", str(tmp_path / "no-such-remote.git"))
    set_publish(run_repo, "origin")
    run_repo.write("calc.py", run_repo.read("calc.py") + "# x\n")
    proc = run_repo.sg("checkpoint", "--step", "while the remote is gone")
    # the fence's fetch fails open, with one line saying so (runs/lease.py)
    assert proc.returncode == 0 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("shiftgit: warning: could not check origin for a takeover of run demo")
    assert last_result(run_repo)["result"] == "error"
    assert "last publish to origin" in run_repo.sg("status").stdout and "FAILED" in run_repo.sg("status").stdout
    briefing = json.loads(run_repo.sg("resume", "--no-run", "--json").stdout)["briefing"]
    assert "last publish to origin" in briefing and "FAILED" in briefing


def test_a_hanging_remote_is_given_up_after_the_deadline(run_repo: Repo, tmp_path: Path) -> None:
    hang = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(300)'"
    run_repo.git("remote", "add", "origin", str(tmp_path / "never-answers.git"))
    run_repo.git("config", "remote.origin.uploadpack", hang)
    set_publish(run_repo, "origin")
    run_repo.write("calc.py", run_repo.read("calc.py") + "# y\n")
    proc = run_repo.run([sys.executable, "-m", "shiftgit", "checkpoint", "--step", "remote hangs"],
                        env={"SHIFTGIT_PUBLISH_DEADLINE": "2"}, timeout=60)  # returns while the push hangs
    assert proc.returncode == 0
    result = last_result(run_repo)
    assert result["result"] == "error" and "gave up after 2 s" in result["detail"]


def test_a_publish_remote_that_does_not_exist_is_refused_by_init(run_repo: Repo) -> None:
    config = run_repo.read(".shift/config.json")
    proc = run_repo.sg("init", "--publish", "nowhere")
    assert proc.returncode == 2 and "no such remote" in proc.stderr and "Traceback" not in proc.stderr
    assert run_repo.read(".shift/config.json") == config


def test_init_offers_to_publish_when_a_remote_exists(run_repo: Repo, tmp_path: Path) -> None:
    assert "--publish" not in run_repo.ok("init").stdout  # no remote, no offer
    run_repo.git("remote", "add", "origin", str(tmp_path / "origin.git"))
    assert "`shiftgit init --publish origin`" in run_repo.sg("init", input="").stdout
    set_publish(run_repo, "origin")
    assert "--publish" not in run_repo.ok("init").stdout
    assert json.loads(run_repo.read(".shift/config.json"))["publish"] == "origin"
    assert publish.configured_remote(Store.open(run_repo.path).read_config()) == "origin"


@pytest.mark.parametrize("newer", ["a", "b"])
def test_sync_keeps_both_histories_of_a_ledger_ref_with_the_newer_ledger_on_top(tmp_path: Path, newer: str) -> None:
    seed = make_repo(tmp_path / "seed")
    seed.ok("init", "--hooks", "none")
    seed.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    assert seed.commit("start").returncode == 0
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.path), str(origin)], check=True)
    machines = {}
    for name in ("a", "b"):
        subprocess.run(["git", "clone", "-q", str(origin), str(tmp_path / name)], check=True)
        machines[name] = Repo(tmp_path / name)
        machines[name].ok("init", "--hooks", "none")
        for i in range(3 if name == newer else 1):
            machines[name].write("calc.py", f"# {name} {i}\n")
            machines[name].ok("checkpoint", "--step", f"{name} {i}")
    for name in ("a", "b", "a"):
        machines[name].ok("sync")
    tips = {machines[n].git("rev-parse", REF).strip() for n in ("a", "b")}
    assert len(tips) == 1
    tip = tips.pop()
    assert len(machines["a"].git("rev-list", "--parents", "-1", tip).split()) == 3  # a merge of both
    top = json.loads(machines["a"].git("show", f"{tip}:ledger.json"))
    assert top["checkpoint"]["step"] == f"{newer} 2"
