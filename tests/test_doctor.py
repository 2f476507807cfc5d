"""`shiftgit doctor` on real repos: all is well (exit 0), then each thing it checks broken in turn, each
seen as a finding with the command that fixes it (exit 1)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo

AGENTS = ("claude", "codex", "gemini", "qwen", "copilot", "opencode", "aider")
BIN = str(Path(sys.executable).parent)  # the shiftgit under test


def doctor(repo: Repo, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    proc = repo.sg("doctor", "--json", *args, env={"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **(env or {})})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def trust_everything(repo: Repo, home: Path) -> None:
    """What the user's trust steps leave in HOME (the files each agent writes), and shiftgit on the login PATH."""
    root = str(repo.path)
    for agent in ("gemini", "qwen"):
        (home / f".{agent}").mkdir(exist_ok=True)
        (home / f".{agent}" / "trustedFolders.json").write_text(json.dumps({root: "TRUST_FOLDER"}))
    (home / ".qwen" / "settings.json").write_text(json.dumps({"security": {"folderTrust": {"enabled": True}}}))
    (home / ".copilot").mkdir(exist_ok=True)
    (home / ".copilot" / "config.json").write_text(json.dumps({"trustedFolders": [root]}))
    hooks = repo.path / ".codex" / "hooks.json"
    state = "".join(f'\n[hooks.state."{hooks}:{event}:0:0"]\ntrusted_hash = "sha256:00"\n'
                    for event in ("session_start", "stop", "pre_compact", "session_end"))
    (home / ".codex").mkdir(exist_ok=True)
    project = f'[projects."{root}"]\ntrust_level = "trusted"\n'
    (home / ".codex" / "config.toml").write_text(f'model = "x"\n\n{project}{state}')
    (home / ".profile").write_text(f'export PATH="{BIN}:$PATH"\n')


@pytest.fixture
def healthy(repo: Repo, tmp_path: Path, isolated: Path) -> Repo:
    bare = tmp_path / "remote.git"
    repo.git("init", "-q", "--bare", str(bare))
    repo.git("remote", "add", "origin", str(bare))
    repo.ok("init", "--hooks", "git", "--publish", "origin", *[a for agent in AGENTS for a in ("--agent", agent)])
    trust_everything(repo, isolated)
    return repo


def findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    found = [c for c in report["checks"] if not c["ok"]]
    assert report["findings"] == found
    return found


def test_all_is_well_exit_0_and_every_wired_agent_is_checked_and_timed(healthy: Repo) -> None:
    code, report = doctor(healthy)
    assert code == 0 and report["ok"], findings(report)
    assert report["agents"] == list(AGENTS)
    checked = {(c["agent"], c["check"]) for c in report["checks"]}
    for agent in AGENTS:
        assert (agent, "hooks") in checked
    assert {("codex", "login shell PATH"), ("codex", "hook trust"), ("gemini", "trust"), ("qwen", "trust"),
            ("copilot", "trust"), (None, "git hooks"), (None, "publish remote"), (None, "notes refspec")} <= checked
    timed = {(t["agent"], t["event"]) for t in report["timings"]}
    assert ("claude", "stop") in timed and ("copilot", "agent-stop") in timed and ("opencode", "session-idle") in timed
    assert all(t["ms"] > 0 and t["problem"] is None for t in report["timings"])
    assert not (healthy.path / ".shift" / "runs").exists() or "doctor" not in os.listdir(healthy.path / ".shift/runs")
    human = healthy.sg("doctor", "--no-timing", env={"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    assert human.returncode == 0 and "all is well" in human.stdout


def _hook_file(repo: Repo, name: str) -> Path:
    return Path(repo.git("rev-parse", "--git-path", f"hooks/{name}").strip()).resolve() \
        if os.path.isabs(repo.git("rev-parse", "--git-path", "hooks").strip()) else repo.path / ".git" / "hooks" / name


def _launcher(repo: Repo) -> Path:
    return Path(repo.git("rev-parse", "--git-common-dir").strip(), "shift", "agent-hook").resolve() \
        if os.path.isabs(repo.git("rev-parse", "--git-common-dir").strip()) else repo.path / ".git/shift/agent-hook"


def _edit_json(path: Path, change: Callable[[Any], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


BREAKAGES: dict[str, tuple[Callable[[Repo, Path], Any], str | None, str, str]] = {
    # name: (break it, agent, check, a piece of the fix)
    "git hook removed": (lambda r, h: os.remove(_hook_file(r, "pre-commit")), None, "git hooks",
                         "shiftgit init --hooks git"),
    "git hook outdated": (lambda r, h: _hook_file(r, "post-rewrite").write_text(
        _hook_file(r, "post-rewrite").read_text() + "# edited\n"), None, "git hooks", "shiftgit init --hooks git"),
    "git hook interpreter gone": (lambda r, h: _hook_file(r, "pre-commit").write_text(
        "\n".join("python=/nonexistent/python3" if line.startswith("python=") else line
                  for line in _hook_file(r, "pre-commit").read_text().splitlines())), None, "git hooks",
        "shiftgit init --hooks git"),
    "pre-commit config unreadable": (lambda r, h: (os.remove(_hook_file(r, "pre-commit")), r.write(
        ".pre-commit-config.yaml", "repos: 7\n")) and None, None, "git hooks", "init --hooks pre-commit"),
    "notes config": (lambda r, h: r.git("config", "--local", "--unset-all", "notes.displayRef") and None, None,
                     "notes config", "shiftgit init"),
    "notes refspec": (lambda r, h: r.git("config", "--local", "--unset-all", "remote.origin.fetch") and None, None,
                      "notes refspec", "shiftgit init"),
    "publish remote": (lambda r, h: _edit_json(r.path / ".shift/config.json", lambda d: d.pop("publish")), None,
                       "publish remote", "shiftgit init --publish origin"),
    "claude hook missing": (lambda r, h: _edit_json(r.path / ".claude/settings.json",
                                                    lambda d: d["hooks"].pop("Stop")), "claude", "hooks",
                            "shiftgit init --agent claude"),
    "copilot hook missing": (lambda r, h: _edit_json(r.path / ".github/hooks/shiftgit.json",
                                                     lambda d: d["hooks"].pop("agentStop")), "copilot", "hooks",
                             "shiftgit init --agent copilot"),
    "opencode plugin old": (lambda r, h: r.write(".opencode/plugin/shiftgit.js", r.read(
        ".opencode/plugin/shiftgit.js").replace("version 2 ", "version 1 ")), "opencode", "hooks",
        "shiftgit init --agent opencode"),
    "aider verify off": (lambda r, h: r.write(".aider.conf.yml", "git-commit-verify: false\n"), "aider", "hooks",
                         "shiftgit init --agent aider"),
    "claude hook an older command": (lambda r, h: _edit_json(r.path / ".claude/settings.json", lambda d: d["hooks"][
        "Stop"][0]["hooks"][0].update(command="shiftgit hook claude stop")), "claude", "hooks",
        "shiftgit init --agent claude"),
    "agent hook launcher removed": (lambda r, h: os.remove(_launcher(r)), None, "agent hook launcher",
                                    "shiftgit init --agent claude --agent codex"),
    "agent hook launcher interpreter gone": (lambda r, h: _launcher(r).write_text("\n".join(
        "python=/nonexistent/python3" if line.startswith("python=") else line
        for line in _launcher(r).read_text().splitlines())), None, "agent hook launcher", "--agent opencode"),
    "no launcher, shiftgit not on PATH": (lambda r, h: os.remove(_launcher(r)) or {"PATH": "/usr/bin:/bin"}, "claude",
                                          "shiftgit on PATH", "export PATH="),
    "codex login shell": (lambda r, h: os.remove(h / ".profile"), "codex", "login shell PATH", ">> ~/.profile"),
    "codex project untrusted": (lambda r, h: (h / ".codex/config.toml").write_text(
        (h / ".codex/config.toml").read_text().replace('trust_level = "trusted"', "")), "codex", "trust",
        "trust this folder"),
    "codex hook untrusted": (lambda r, h: (h / ".codex/config.toml").write_text(
        (h / ".codex/config.toml").read_text().replace(":stop:0:0", ":stop:0:9")), "codex", "hook trust", "/hooks"),
    "gemini untrusted": (lambda r, h: os.remove(h / ".gemini/trustedFolders.json"), "gemini", "trust",
                         "trust the folder"),
    "qwen distrusted": (lambda r, h: (h / ".qwen/trustedFolders.json").write_text(
        json.dumps({str(r.path): "DO_NOT_TRUST"})), "qwen", "trust", "trust the folder"),
    "copilot untrusted": (lambda r, h: (h / ".copilot/config.json").write_text("// managed\n{}"), "copilot", "trust",
                          "--trust-folder"),
    "unknown agent version": (lambda r, h: (Path(r.git("rev-parse", "--absolute-git-dir").strip()) / "shift" /
                                            "hooks.log").write_text(
        "2026-01-01T00:00:00+00:00 hook claude stop: unknown agent version: Claude Code 3.0.0; this shiftgit "
        "knows 2.x\n"), None, "agent version", "pip install -U shiftgit"),
}


@pytest.mark.parametrize("name", list(BREAKAGES))
def test_each_broken_thing_is_a_finding_with_its_fix_and_exit_1(healthy: Repo, isolated: Path, name: str) -> None:
    breaker, agent, check, fix = BREAKAGES[name]
    result = breaker(healthy, isolated)
    env = result if isinstance(result, dict) else None

    code, report = doctor(healthy, "--no-timing", env=env)

    assert code == 1 and not report["ok"]
    found = [c for c in findings(report) if c["check"] == check and c["agent"] == agent]
    assert found, findings(report)
    assert all(fix in (c["fix"] or "") for c in found), found
    others = [c for c in findings(report) if c not in found and c["check"] != "agent hook launcher"
              and not name.endswith("shiftgit not on PATH")]
    assert not others, others
    human = healthy.sg("doctor", "--no-timing", env={"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **(env or {})})
    assert human.returncode == 1 and "FAIL" in human.stdout and "fix: " in human.stdout


def test_outside_an_initialised_repo_doctor_says_run_init(repo: Repo) -> None:
    code, report = doctor(repo, "--no-timing")
    assert code == 1
    assert [(c["check"], c["fix"]) for c in findings(report)] == [("initialised", "shiftgit init")]
