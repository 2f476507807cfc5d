"""`shiftgit init --agent ...` on real repos: merge with what is there, idempotent, nothing half-written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Repo

from shiftgit.agents.launcher import command as ours

CONFIGS = {"claude": ".claude/settings.json", "codex": ".codex/hooks.json", "gemini": ".gemini/settings.json"}
PROJECT = Path(__file__).resolve().parent.parent


def commands(document: dict[str, object]) -> list[str]:
    hooks = document["hooks"]
    assert isinstance(hooks, dict)
    return [h["command"] for groups in hooks.values() for group in groups for h in group["hooks"]]


def test_claude_settings_keep_other_keys_and_hooks_and_a_second_run_adds_nothing(repo: Repo) -> None:
    mine = {"matcher": "", "hooks": [{"type": "command", "command": "./my-stop-check.sh"}]}
    repo.write(".claude/settings.json", json.dumps({
        "permissions": {"deny": ["Bash(git commit --no-verify:*)"]}, "model": "opus",
        "hooks": {"Stop": [mine], "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]},
    }))
    repo.ok("init", "--hooks", "none", "--agent", "claude")
    first = repo.read(".claude/settings.json")
    settings = json.loads(first)
    assert settings["permissions"] == {"deny": ["Bash(git commit --no-verify:*)"]} and settings["model"] == "opus"
    assert settings["hooks"]["Stop"][0] == mine
    assert settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "x"
    assert sorted(c for c in commands(settings) if "shiftgit" in c) == [
        ours("claude", "pre-compact"), ours("claude", "session-end"), ours("claude", "session-start"),
        ours("claude", "stop")]
    assert {h["type"] for g in settings["hooks"]["SessionStart"] for h in g["hooks"]} == {"command"}
    repo.ok("init", "--hooks", "none", "--agent", "claude")
    assert repo.read(".claude/settings.json") == first


def test_codex_and_gemini_configs_in_their_own_formats(repo: Repo) -> None:
    repo.write(".gemini/settings.json", json.dumps({"theme": "dark", "hooksConfig": {"enabled": True}}))
    repo.ok("init", "--hooks", "none", "--agent", "codex", "--agent", "gemini")
    codex = json.loads(repo.read(".codex/hooks.json"))
    assert "$schema" not in codex and set(codex) == {"hooks"}
    assert set(codex["hooks"]) == {"SessionStart", "Stop", "PreCompact", "SessionEnd"}
    assert sorted(commands(codex)) == [ours("codex", "pre-compact"), ours("codex", "session-end"),
                                       ours("codex", "session-start"), ours("codex", "stop")]
    assert codex["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 3  # Codex clamps SessionEnd to 3 s
    assert codex["hooks"]["Stop"][0]["hooks"][0]["timeout"] == 30
    gemini = json.loads(repo.read(".gemini/settings.json"))
    assert gemini["theme"] == "dark" and gemini["hooksConfig"] == {"enabled": True}
    assert set(gemini["hooks"]) == {"SessionStart", "AfterAgent", "SessionEnd"}  # PreCompress fires every request
    handler = gemini["hooks"]["AfterAgent"][0]["hooks"][0]
    assert handler["command"] == ours("gemini", "after-agent") and handler["timeout"] == 30_000


def test_init_removes_the_gemini_pre_compress_hook_an_older_shiftgit_wired(repo: Repo) -> None:
    mine = {"hooks": [{"type": "command", "command": "./my-compress-note.sh", "name": "mine"}]}
    old = {"hooks": [{"type": "command", "command": "shiftgit hook gemini pre-compress", "timeout": 30000,
                      "name": "shiftgit-pre-compress"}]}
    repo.write(".gemini/settings.json", json.dumps({"hooks": {"PreCompress": [mine, old]}}))
    proc = repo.ok("init", "--hooks", "none", "--agent", "gemini")
    assert "removed shiftgit's PreCompress hook" in proc.stdout
    hooks = json.loads(repo.read(".gemini/settings.json"))["hooks"]
    assert hooks["PreCompress"] == [mine]
    assert "pre-compress" not in json.dumps(hooks)
    repo.write(".gemini/settings.json", json.dumps({"hooks": {"PreCompress": [old]}}))
    repo.ok("init", "--hooks", "none", "--agent", "gemini")
    assert "PreCompress" not in json.loads(repo.read(".gemini/settings.json"))["hooks"]


@pytest.mark.parametrize("agent,needles", [
    ("codex", ("trust this folder", "/hooks", "codex exec", "bash -lc")),
    ("gemini", ("trust the folder", "trustedFolders.json", "--skip-trust", "GEMINI_CLI_TRUST_WORKSPACE=true")),
])
def test_init_prints_the_trust_steps_the_agent_needs(repo: Repo, agent: str, needles: tuple[str, ...]) -> None:
    out = repo.ok("init", "--hooks", "none", "--agent", agent).stdout
    trust = [line for line in out.splitlines() if line.startswith(f"{agent}: trust: ")]
    assert trust, out
    for needle in needles:
        assert any(needle in line for line in trust), needle


def test_agents_md_is_created_or_appended_once(repo: Repo, tmp_path: Path) -> None:
    repo.write("AGENTS.md", "# House rules\n\nRun the tests.")
    repo.ok("init", "--hooks", "none", "--agent", "claude", "--agent", "codex")
    repo.ok("init", "--hooks", "none", "--agent", "gemini")
    text = repo.read("AGENTS.md")
    assert text.startswith("# House rules\n\nRun the tests.\n\n")
    assert text.count("<!-- shiftgit:begin -->") == 1 and text.count("<!-- shiftgit:end -->") == 1
    assert "shiftgit checkpoint" in text
    other = Repo(tmp_path / "other")
    other.path.mkdir()
    other.git("init", "-q")
    other.ok("init", "--hooks", "none", "--agent", "codex")
    assert "<!-- shiftgit:begin -->" in other.read("AGENTS.md")


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
@pytest.mark.parametrize("broken", ["{not json", "[1, 2]", '{"hooks": []}', '{"hooks": {"Stop": {}}}'])
def test_a_broken_config_is_refused_and_nothing_is_written(repo: Repo, agent: str, broken: str) -> None:
    path = CONFIGS[agent]
    repo.write(path, broken.replace("Stop", "AfterAgent" if agent == "gemini" else "Stop"))
    before = repo.read(path)
    proc = repo.sg("init", "--hooks", "none", "--agent", agent)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert path in proc.stderr
    assert repo.read(path) == before
    assert not (repo.path / ".shift").exists() and not (repo.path / "AGENTS.md").exists()


@pytest.mark.parametrize("agent,name", [("claude", "claude-settings.json"), ("codex", "codex-hooks.json"),
                                        ("gemini", "gemini-settings.json")])
def test_shipped_reference_configs_match_what_init_writes(repo: Repo, agent: str, name: str) -> None:
    repo.ok("init", "--hooks", "none", "--agent", agent)
    shipped = json.loads((PROJECT / "hooks" / name).read_text())
    assert json.loads(repo.read(CONFIGS[agent])) == shipped
