"""Run discovery: one rule for hooks, MCP, resume, verify, status, log and every command that takes --run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import Repo

from shiftgit.agents import mcp
from shiftgit.ledger.discovery import discover
from shiftgit.ledger.store import Store


def clone(repo: Repo, path: Path) -> Repo:
    subprocess.run(["git", "clone", "-q", str(repo.path), str(path)], check=True)
    return Repo(path)


def start(repo: Repo, run: str, branch: str | None = None) -> None:
    if branch:
        repo.git("checkout", "-q", "-B", branch)
    repo.ok("start", run, "--goal", f"goal of {run}", "--stop-when", "done")
    repo.write(f"{run}.txt", f"{run}\n")
    repo.ok("checkpoint", "--step", f"{run} began")
    assert repo.commit(f"start {run}").returncode == 0


def test_a_fresh_clone_finds_the_one_active_run_everywhere(run_repo: Repo, tmp_path: Path) -> None:
    run_repo.ok("start", "old", "--goal", "g", "--stop-when", "s")
    run_repo.ok("stop", "--reason", "user_paused")
    assert run_repo.commit("pause old").returncode == 0
    other = clone(run_repo, tmp_path / "other")
    assert other.json("status")["active"] == "demo"
    proc = other.sg("checkpoint", "--step", "in the clone")  # a command that takes --run
    assert proc.returncode == 0 and "checkpoint demo #1" in proc.stdout
    assert "picked run 'demo', the only active run here" in proc.stderr and "old (stopped" in proc.stderr
    assert "--run ID, SHIFT_RUN=ID or `shiftgit resume ID`" in proc.stderr
    assert json.loads(other.sg("verify", "--json").stdout)["run"] == "demo"
    store = Store.open(other.path)
    assert discover(store).rule == "only-active"
    assert "goal of" not in mcp.briefing(str(other.path)) and '"make calc correct"' in mcp.briefing(str(other.path))


def test_among_several_active_runs_the_one_last_checkpointed_on_this_branch(run_repo: Repo, tmp_path: Path) -> None:
    start(run_repo, "on-feature", branch="feature")
    start(run_repo, "on-main", branch="main")
    other = clone(run_repo, tmp_path / "other")
    other.git("checkout", "-q", "feature")
    proc = other.sg("resume", "--no-run", "--json")
    assert json.loads(proc.stdout)["run"] == "on-feature"
    assert "checkpointed last on branch feature" in proc.stderr and "SHIFT_RUN=ID" in proc.stderr
    assert json.loads(proc.stdout)["picked"].startswith("picked run 'on-feature'")
    # a named run, SHIFT_RUN, then this worktree's pointer come first
    assert json.loads(other.sg("resume", "demo", "--no-run", "--json").stdout)["run"] == "demo"
    assert other.json("status")["active"] == "demo"  # resume made it active here
    assert json.loads(other.sg("status", "--json", env={"SHIFT_RUN": "on-main"}).stdout)["active"] == "on-main"


def test_nothing_fits_lists_the_runs_and_stops(run_repo: Repo, tmp_path: Path) -> None:
    start(run_repo, "second")
    other = clone(run_repo, tmp_path / "other")
    other.git("checkout", "-q", "-b", "elsewhere")
    before = other.ledger_path("demo").read_bytes()
    for argv in (["resume", "--no-run"], ["verify"], ["checkpoint", "--step", "x"], ["show"]):
        proc = other.sg(*argv)
        assert proc.returncode == 2, (argv, proc.stdout, proc.stderr)
        assert "no run to pick" in proc.stderr and "Traceback" not in proc.stderr
        assert "  demo (active, no checkpoint)" in proc.stderr
        assert "  second (active, last checkpoint on main)" in proc.stderr
    assert other.ledger_path("demo").read_bytes() == before
    assert other.json("status")["active"] is None  # status still lists every run
    event = {"session_id": "s", "cwd": str(other.path), "hook_event_name": "SessionStart"}
    hook = other.sg("hook", "claude", "session-start", input=json.dumps(event))
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert hook.returncode == 0 and "no run to pick" in context and "second (active" in context


def test_a_bad_shift_run_is_one_clear_line(run_repo: Repo) -> None:
    proc = run_repo.sg("resume", "--no-run", env={"SHIFT_RUN": "../evil"})
    assert proc.returncode == 2 and "bad run id" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_repo.sg("checkpoint", "--run", "nosuch", "--step", "x")
    assert proc.returncode == 2 and "unknown run 'nosuch'" in proc.stderr
