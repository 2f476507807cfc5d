"""`init --agent qwen|copilot|opencode|aider` on real repos: each agent's own format, merged with what is
there, idempotent, trust steps printed; nothing written through a symbolic link."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import Repo

from shiftgit.agents.launcher import command

PROJECT = Path(__file__).resolve().parent.parent


def test_qwen_settings_take_claude_style_hooks_and_keep_everything_else(repo: Repo) -> None:
    mine = {"matcher": "", "hooks": [{"type": "command", "command": "./lint.sh", "timeout": 10}]}
    repo.write(".qwen/settings.json", json.dumps({"model": {"name": "qwen3-coder"}, "hooks": {"Stop": [mine]}}))
    repo.ok("init", "--hooks", "none", "--agent", "qwen")
    first = repo.read(".qwen/settings.json")
    settings = json.loads(first)
    assert settings["model"] == {"name": "qwen3-coder"}
    assert settings["$version"] == 4  # what Qwen Code 0.24 adds on its first run, dirtying the tree
    assert settings["hooks"]["Stop"][0] == mine
    assert set(settings["hooks"]) == {"SessionStart", "Stop", "PreCompact", "SessionEnd"}
    ours = settings["hooks"]["Stop"][1]["hooks"][0]
    assert ours == {"type": "command", "command": command("qwen", "stop"), "timeout": 30}  # seconds
    repo.ok("init", "--hooks", "none", "--agent", "qwen")
    assert repo.read(".qwen/settings.json") == first


def test_copilot_gets_its_own_hooks_file_in_its_flat_format(repo: Repo) -> None:
    repo.write(".github/hooks/team.json", json.dumps({"version": 1, "hooks": {"sessionStart": []}}))
    out = repo.ok("init", "--hooks", "none", "--agent", "copilot").stdout
    assert "copilot: added hooks sessionStart, agentStop, sessionEnd to .github/hooks/shiftgit.json" in out
    document = json.loads(repo.read(".github/hooks/shiftgit.json"))
    assert document["version"] == 1
    assert document["hooks"]["agentStop"] == [{"type": "command", "bash": command("copilot", "agent-stop"),
                                               "timeoutSec": 30}]
    assert json.loads(repo.read(".github/hooks/team.json")) == {"version": 1, "hooks": {"sessionStart": []}}
    first = repo.read(".github/hooks/shiftgit.json")
    assert "hooks already in" in repo.ok("init", "--hooks", "none", "--agent", "copilot").stdout
    assert repo.read(".github/hooks/shiftgit.json") == first


def test_opencode_plugin_is_written_once_updated_when_older_and_a_foreign_file_is_refused(repo: Repo) -> None:
    out = repo.ok("init", "--hooks", "none", "--agent", "opencode").stdout
    assert "opencode: wrote the plugin .opencode/plugin/shiftgit.js" in out
    plugin = repo.read(".opencode/plugin/shiftgit.js")
    assert plugin.startswith("// shiftgit plugin for OpenCode, version 2 ")
    for needle in ('"session-start"', '"session-idle"', "experimental.chat.system.transform", "session.idle"):
        assert needle in plugin
    assert "already" in repo.ok("init", "--hooks", "none", "--agent", "opencode").stdout
    repo.write(".opencode/plugin/shiftgit.js", "// shiftgit plugin for OpenCode, version 0 (old)\n")
    assert "updated the plugin" in repo.ok("init", "--hooks", "none", "--agent", "opencode").stdout
    assert repo.read(".opencode/plugin/shiftgit.js") == plugin
    repo.write(".opencode/plugin/shiftgit.js", "export const Mine = async () => ({})\n")
    proc = repo.sg("init", "--hooks", "none", "--agent", "opencode")
    assert proc.returncode == 2 and "not a plugin shiftgit wrote" in proc.stderr and "Traceback" not in proc.stderr
    assert repo.read(".opencode/plugin/shiftgit.js") == "export const Mine = async () => ({})\n"


def test_the_opencode_plugin_is_valid_javascript(repo: Repo) -> None:
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False) \
        if os.path.exists("/usr/bin/node") else None
    if node is None or node.returncode != 0:
        pytest.skip("node is not installed here")
    repo.ok("init", "--hooks", "none", "--agent", "opencode")
    copy = repo.path / "plugin.mjs"
    copy.write_text(repo.read(".opencode/plugin/shiftgit.js"))
    proc = subprocess.run(["node", "--check", str(copy)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("before,after", [
    (None, "git-commit-verify: true"),
    ("model: sonnet\nauto-commits: true", "model: sonnet\nauto-commits: true\ngit-commit-verify: true"),
    ("model: sonnet\ngit-commit-verify: false  # mine\nlint: true\n", "model: sonnet\ngit-commit-verify: true"),
])
def test_aider_config_turns_commit_verification_on_and_keeps_the_rest(repo: Repo, before: str | None,
                                                                     after: str) -> None:
    if before is not None:
        repo.write(".aider.conf.yml", before)
    repo.ok("init", "--hooks", "none", "--agent", "aider")
    text = repo.read(".aider.conf.yml")
    assert text.startswith(after), text
    assert text.count("git-commit-verify") == 1
    if before and "lint" in before:
        assert "\nlint: true\n" in text
    assert text.endswith("test-cmd: shiftgit hook aider after-edit  # shiftgit: tells the model when its work is not "
                         "recorded\nauto-test: true\n")
    out = repo.ok("init", "--hooks", "none", "--agent", "aider").stdout
    assert "git-commit-verify already on" in out and repo.read(".aider.conf.yml") == text


def test_aider_keeps_the_users_own_test_command_and_says_what_that_means(repo: Repo) -> None:
    repo.write(".aider.conf.yml", "test-cmd: pytest -q\n")
    out = repo.ok("init", "--hooks", "none", "--agent", "aider").stdout
    assert repo.read(".aider.conf.yml").startswith("test-cmd: pytest -q\ngit-commit-verify: true")
    assert "shiftgit hook aider" not in repo.read(".aider.conf.yml")
    assert "kept your test-cmd" in out and "not to the model" in out


def test_aiders_test_command_fails_once_per_staleness_with_the_reason(run_repo: Repo) -> None:
    run_repo.ok("checkpoint", "--step", "started")
    run_repo.commit("started")
    assert run_repo.sg("hook", "aider", "after-edit").returncode == 0  # fresh: the tests "pass"
    run_repo.write("notes.txt", "unrecorded\n")
    held = run_repo.sg("hook", "aider", "after-edit")
    assert held.returncode == 1 and "is stale:" in held.stdout and "notes.txt" in held.stdout
    assert "shiftgit checkpoint" in held.stdout
    again = run_repo.sg("hook", "aider", "after-edit")
    assert again.returncode == 0 and again.stdout == ""  # told once: Aider never loops on it


@pytest.mark.parametrize("agent,needles", [
    ("qwen", ("trustedFolders.json", "trust the folder")),
    ("copilot", ("--trust-folder", "trust the folder")),
    ("opencode", (".opencode/plugin/", "review")),
    ("aider", (".aider.conf.yml", "shiftgit checkpoint")),
])
def test_init_prints_each_agents_trust_steps(repo: Repo, agent: str, needles: tuple[str, ...]) -> None:
    out = repo.ok("init", "--hooks", "none", "--agent", agent).stdout
    trust = " ".join(line for line in out.splitlines() if line.startswith(f"{agent}: trust: "))
    for needle in needles:
        assert needle in trust, out
    assert "<!-- shiftgit:begin -->" in repo.read("AGENTS.md")


@pytest.mark.parametrize("agent,link", [
    ("claude", ".claude"), ("qwen", ".qwen"), ("copilot", ".github"), ("copilot", ".github/hooks"),
    ("opencode", ".opencode/plugin"), ("codex", ".codex/hooks.json"), ("aider", ".aider.conf.yml"),
    ("gemini", "AGENTS.md"),
])
def test_agent_config_is_never_written_through_a_symbolic_link(repo: Repo, tmp_path: Path, agent: str,
                                                               link: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "target"
    is_file = link.endswith((".json", ".yml", ".md"))
    if is_file:
        target.write_text("{}\n" if link.endswith(".json") else "")
    else:
        target.mkdir()
    (repo.path / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, repo.path / link)
    before = sorted(p.name for p in elsewhere.rglob("*")), (target.read_text() if is_file else None)

    proc = repo.sg("init", "--hooks", "none", "--agent", agent)

    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "symbolic link" in proc.stderr and link in proc.stderr
    assert "Traceback" not in proc.stderr
    assert (sorted(p.name for p in elsewhere.rglob("*")), (target.read_text() if is_file else None)) == before
    assert not (repo.path / ".shift").exists()


def test_shipped_reference_configs_of_the_new_agents_match_what_init_writes(repo: Repo) -> None:
    repo.ok("init", "--hooks", "none", "--agent", "qwen", "--agent", "copilot", "--agent", "opencode")
    shipped = json.loads((PROJECT / "hooks/qwen-settings.json").read_text())
    assert json.loads(repo.read(".qwen/settings.json")) == shipped
    assert json.loads(repo.read(".github/hooks/shiftgit.json")) == \
        json.loads((PROJECT / "hooks/copilot-hooks.json").read_text())
    assert repo.read(".opencode/plugin/shiftgit.js") == (PROJECT / "hooks/opencode-plugin.js").read_text()
