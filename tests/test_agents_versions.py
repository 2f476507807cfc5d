"""The agent's version, read from the real processes above the hook: the briefing names it, and a major
version shiftgit does not know makes the hooks fail open with one line in the hook log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SG, Repo
from test_agents import checkpointed, hooks_log, payload

# A stand-in for the agent's own process: a script inside node_modules/<package>/, as npm installs the CLIs.
LAUNCHER = """import subprocess, sys
proc = subprocess.run(sys.argv[1:], input=sys.stdin.read(), text=True, capture_output=True)
sys.stdout.write(proc.stdout)
sys.stderr.write(proc.stderr)
sys.exit(proc.returncode)
"""


def agent_process(tmp_path: Path, package: str, version: str) -> Path:
    folder = tmp_path / "cli" / "node_modules" / package
    folder.mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"name": package, "version": version}))
    (folder / "cli.py").write_text(LAUNCHER)
    return folder / "cli.py"


def hook_under(launcher: Path | None, repo: Repo, agent: str, event: str, body: str) -> str:
    argv = [*SG, "hook", agent, event]
    if launcher is not None:
        argv = [sys.executable, str(launcher), *argv]
    proc = subprocess.run(argv, cwd=repo.path, input=body, text=True, capture_output=True, timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("agent,package,version,name", [
    ("claude", "@anthropic-ai/claude-code", "2.1.332", "Claude Code 2.1.332"),
    ("codex", "@openai/codex-linux-x64", "0.171.0-linux-x64", "Codex 0.171.0"),  # the native binary's package
    ("qwen", "@qwen-code/qwen-code", "0.24.4", "Qwen Code 0.24.4"),
])
def test_the_briefing_names_the_agent_and_version_it_was_produced_for(run_repo: Repo, tmp_path: Path, agent: str,
                                                                       package: str, version: str, name: str) -> None:
    fresh = checkpointed(run_repo)
    out = hook_under(agent_process(tmp_path, package, version), fresh, agent, "session-start",
                     payload(fresh, "SessionStart", source="startup"))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert f"Produced for {name} by shiftgit " in context
    assert "unknown agent version" not in hooks_log(fresh)


def test_without_an_agent_above_it_the_version_is_not_detected(run_repo: Repo) -> None:
    fresh = checkpointed(run_repo)
    out = hook_under(None, fresh, "gemini", "session-start", payload(fresh, "SessionStart", source="startup"))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "Produced for Gemini CLI (version not detected)" in context


def test_an_unknown_major_version_fails_open_with_one_line_in_the_hook_log(run_repo: Repo, tmp_path: Path) -> None:
    fresh = checkpointed(run_repo)
    future = agent_process(tmp_path, "@anthropic-ai/claude-code", "3.0.0")
    fresh.write("calc.py", fresh.read("calc.py") + "# unrecorded\n")
    stop = payload(fresh, "Stop", stop_hook_active=False)

    assert hook_under(future, fresh, "claude", "stop", stop) == ""  # no hold: fail open
    lines = [line for line in hooks_log(fresh).splitlines() if "unknown agent version" in line]
    assert len(lines) == 1 and "Claude Code 3.0.0" in lines[0] and "2.x" in lines[0], lines
    brief = hook_under(future, fresh, "claude", "session-start", payload(fresh, "SessionStart", source="startup"))
    assert "Produced for Claude Code 3.0.0" in json.loads(brief)["hookSpecificOutput"]["additionalContext"]

    known = agent_process(tmp_path / "known", "@anthropic-ai/claude-code", "2.9.1")
    assert json.loads(hook_under(known, fresh, "claude", "stop", stop))["decision"] == "block"  # the same state
