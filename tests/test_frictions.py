"""Small frictions seen on a real run, each fixed (issue 15)."""

from __future__ import annotations

import json

from agent_saves import settle
from conftest import Repo


def test_status_prints_budgets_as_people_write_them(repo: Repo) -> None:
    repo.ok("init")
    repo.ok("start", "big", "--goal", "g", "--stop-when", "s", "--token-budget", "2000000", "--cost-budget", "12.5")
    out = repo.ok("status").stdout
    assert "2000000 tokens" in out and "12.5 cost" in out and "e+0" not in out


def test_hook_help_for_an_agent_exits_0(repo: Repo) -> None:
    proc = repo.sg("hook", "claude", "--help")
    assert proc.returncode == 0 and "Agent hooks" in proc.stdout, proc.stderr


def test_an_automatic_checkpoint_says_what_triggered_it(run_repo: Repo) -> None:
    run_repo.ok("checkpoint", "--step", "by hand")
    run_repo.write("calc.py", run_repo.read("calc.py") + "# agent edit\n")
    event = {"hook_event_name": "PreCompact", "trigger": "auto", "session_id": "s-1",
             "transcript_path": str(run_repo.path / "t.jsonl"), "cwd": str(run_repo.path)}
    proc = run_repo.sg("hook", "claude", "pre-compact", input=json.dumps(event))
    assert proc.returncode == 0, proc.stderr
    settle(run_repo.path)  # the hook hands the checkpoint to a background save (agents/background.py)
    point = run_repo.ledger("demo")["checkpoint"]
    assert point["auto"] == "pre-compact"
    assert point["step"].startswith("auto-checkpoint at the agent's pre-compact hook: 1 file(s) changed"), point


def test_the_files_init_writes_pass_the_scope_rule_of_a_scoped_run(repo: Repo) -> None:
    repo.ok("init")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "shiftgit")
    repo.ok("start", "scoped", "--goal", "g", "--stop-when", "s", "--scope", "src/**")
    repo.git("add", "-A")
    assert repo.commit("start").returncode == 0
    out = repo.ok("init", "--agent", "claude").stdout
    assert "commit it" in out
    repo.ok("checkpoint", "--step", "wired claude")
    proc = repo.commit("wire the agent hooks")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (repo.path / ".claude" / "settings.json").is_file()
