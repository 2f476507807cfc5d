"""The conversation checkpoint: transcripts compacted onto refs/shift/context/<run>, read back, resumed from.

Real repos and real `shiftgit` processes; the transcripts are built in the shapes the real CLIs write
(tests/transcript_fixtures.py; tests/agents_real checks them against the CLIs themselves).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import transcript_fixtures as tf
from conftest import Repo

REF = "refs/shift/context/demo"
TOKEN = "ghp_" + "Zr8Qx2Lm4Pz9Rt1Wv7Ny3Bc6Hd0Js5Ga8Ek2"
Builder = Callable[..., None]


def save(repo: Repo, transcript: Path, *extra: str) -> str:
    """The text saved (bounded by `context.max_chars`; `context show` prints it fenced, under its provenance)."""
    repo.ok("context", "save", *extra, "--from", str(transcript))
    return str(repo.json("context", "show")["text"])


@pytest.fixture
def recorded(run_repo: Repo) -> Repo:
    """Run `demo` with a user constraint and a checkpoint carrying a decision."""
    run_repo.ok("constraint", "add", "keep calc.add's signature")
    run_repo.write("calc.py", run_repo.read("calc.py") + "# wip\n")
    run_repo.ok("checkpoint", "--step", "walked the checks", "--decision", "integers only -- simpler to test",
                "--next", "fix sub()")
    return run_repo


@pytest.mark.parametrize("build", [tf.claude, tf.codex, tf.gemini], ids=["claude", "codex", "gemini"])
def test_each_format_keeps_the_opening_the_rules_the_last_turns_and_stubs_the_rest(
        recorded: Repo, tmp_path: Path, build: Builder) -> None:
    transcript = tmp_path / "session.jsonl"
    build(transcript, 30)
    shown = save(recorded, transcript)
    assert len(shown) <= 24_000
    for text in (tf.SYSTEM, tf.REQUEST, tf.RULE, tf.FINAL, "TURN-MARK-030", "TURN-MARK-027", "RESULT-MARK-030",
                 '"never edit tests/"', '"keep calc.add\'s signature"', '"integers only"', '"simpler to test"',
                 '"walked the checks"', '"fix sub()"', '"make calc correct"'):
        assert text in shown, text
    assert "TURN-MARK-003" not in shown  # superseded: only a stub is left ...
    stubs = [line for line in shown.splitlines() if "tests/test_003.py" in line]
    assert len(stubs) == 1 and "RESULT-MARK-003" in stubs[0] and "args#" in stubs[0]  # ... tool, digest, one line
    assert ("-> exit 0:" if build is tf.codex else "-> ok:") in stubs[0]  # only Codex records exit codes
    assert "<hook_context>" not in shown and "AGENTS.md instructions" not in shown and "Stop hook feedback" not in shown


def test_saves_are_commits_on_the_runs_ref_each_the_child_of_the_previous(recorded: Repo, tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    tf.claude(transcript, 10)
    recorded.ok("context", "save", "--from", str(transcript))
    first = recorded.git("rev-parse", REF).strip()
    assert recorded.git("ls-tree", "--name-only", first).split() == ["context.md"]
    meta = json.loads(recorded.git("log", "-1", "--format=%b", first))
    assert meta["format"] == "claude" and meta["session"] == "claude-session-1" and meta["run"] == "demo"
    again = recorded.ok("context", "save", "--from", str(transcript))  # the same text: nothing new
    assert "unchanged" in again.stdout and recorded.git("rev-parse", REF).strip() == first
    tf.claude(transcript, 12)
    recorded.ok("context", "save", "demo", "--from", str(transcript))
    second = recorded.git("rev-parse", REF).strip()
    assert recorded.git("rev-parse", f"{second}^").strip() == first
    assert recorded.git("status", "--porcelain").strip() == "M calc.py" or "calc.py" in recorded.git("status")
    shown = recorded.json("context", "show")
    assert shown["commit"] == second and "TURN-MARK-012" in shown["text"] and shown["entries"] > 0
    recorded.git("gc", "-q")  # refs and objects packed: git reads the tip, the same text is still seen
    again = recorded.ok("context", "save", "demo", "--from", str(transcript))
    assert "unchanged" in again.stdout and recorded.git("rev-parse", REF).strip() == second
    tf.claude(transcript, 14)
    recorded.ok("context", "save", "demo", "--from", str(transcript))
    assert recorded.git("rev-parse", f"{REF}^").strip() == second


@pytest.mark.parametrize("content", ["[10:02] USER: fix sub()\n" * 40, "", "{}\n", '{"type": "note"}\n' * 5,
                                     "\x00\x01binary"])
def test_an_unknown_transcript_is_refused_in_one_line_and_nothing_is_written(recorded: Repo, tmp_path: Path,
                                                                             content: str) -> None:
    transcript = tmp_path / "session.jsonl"
    tf.claude(transcript, 3)
    recorded.ok("context", "save", "--from", str(transcript))
    tip, ledger = recorded.git("rev-parse", REF), recorded.ledger_path("demo").read_bytes()
    unknown = tmp_path / "chat.log"
    unknown.write_text(content)
    proc = recorded.sg("context", "save", "--from", str(unknown))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "chat.log" in proc.stderr
    assert recorded.git("rev-parse", REF) == tip and recorded.ledger_path("demo").read_bytes() == ledger
    missing = recorded.sg("context", "save", "--from", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1


def test_no_secret_reaches_the_saved_context(recorded: Repo, tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    tf.claude(transcript, 30, secret_at=30, secret=TOKEN)  # in the last turn, shown in full
    tf_old = tmp_path / "old.jsonl"
    tf.claude(tf_old, 30, secret_at=2, secret=TOKEN)  # in a superseded turn, a stub
    for path in (transcript, tf_old):
        shown = save(recorded, path)
        assert TOKEN not in shown and TOKEN[4:] not in shown
        assert recorded.run(["git", "grep", "-F", TOKEN[4:], REF]).returncode == 1
        assert TOKEN[4:] not in recorded.git("log", "--format=%B", REF)
    assert "[REDACTED" in save(recorded, transcript)


def test_the_bound_and_the_number_of_turns_come_from_config(recorded: Repo, tmp_path: Path) -> None:
    config = recorded.path / ".shift/config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "context": {"turns": 2, "max_chars": 8000}}))
    transcript = tmp_path / "session.jsonl"
    tf.claude(transcript, 30)
    shown = save(recorded, transcript)
    assert len(shown) <= 8000
    assert "TURN-MARK-030" in shown and "TURN-MARK-029" not in shown  # 2 turns: the last call and the answer
    assert tf.RULE in shown and '"integers only"' in shown
    recorded.ok("validate")  # the config keys are in its schema


def test_a_five_megabyte_transcript_compacts_under_the_bound_keeping_every_rule(recorded: Repo,
                                                                               tmp_path: Path) -> None:
    transcript = tmp_path / "big.jsonl"
    turns = tf.big_claude(transcript, 5)
    assert transcript.stat().st_size >= 5 * 1024 * 1024
    shown = save(recorded, transcript)
    assert len(shown) <= 24_000
    for text in (tf.SYSTEM, tf.REQUEST, tf.RULE, tf.FINAL, f"TURN-MARK-{turns:03d}", '"never edit tests/"',
                 '"keep calc.add\'s signature"', '"integers only"', '"walked the checks"'):
        assert text in shown, text
    assert "earlier tool result(s) left out to stay within the bound" in shown  # thousands of stubs: the newest


def test_resume_with_context_appends_it_and_says_so_when_there_is_none(recorded: Repo, tmp_path: Path) -> None:
    proc = recorded.sg("resume", "--no-run", "--context")
    assert proc.returncode in (0, 3) and "no conversation saved for run 'demo'" in proc.stdout
    transcript = tmp_path / "session.jsonl"
    tf.gemini(transcript, 8)
    recorded.ok("context", "save", "--from", str(transcript))
    proc = recorded.sg("resume", "--no-run", "--context")
    assert "make calc correct" in proc.stdout and tf.REQUEST in proc.stdout and tf.SYSTEM in proc.stdout
    report = json.loads(recorded.sg("resume", "--no-run", "--context", "--json").stdout)
    assert tf.REQUEST in report["context"]["text"] and tf.REQUEST not in report["briefing"]
    assert json.loads(recorded.sg("resume", "--no-run", "--json").stdout).get("context") is None


def test_context_commands_name_the_fix_when_there_is_nothing(run_repo: Repo) -> None:
    shown = run_repo.sg("context", "show")
    assert shown.returncode == 2 and "context save" in shown.stderr and "Traceback" not in shown.stderr
    saved = run_repo.sg("context", "save")  # no agent session has reported a transcript here
    assert saved.returncode == 2 and "--from" in saved.stderr
    other = run_repo.sg("context", "show", "nope")
    assert other.returncode == 2 and "unknown run" in other.stderr


def test_sync_carries_the_context_to_another_clone(recorded: Repo, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    recorded.git("init", "-q", "--bare", str(remote))
    recorded.git("remote", "add", "origin", str(remote))
    transcript = tmp_path / "session.jsonl"
    tf.claude(transcript, 5)
    recorded.ok("context", "save", "--from", str(transcript))
    recorded.ok("sync")
    assert recorded.run(["git", "--git-dir", str(remote), "rev-parse", "--verify", REF]).returncode == 0
    clone = Repo(tmp_path / "clone")
    recorded.git("clone", "-q", str(remote), str(clone.path))
    clone.ok("init", "--hooks", "none")
    clone.ok("sync")
    assert clone.git("rev-parse", REF).strip() == recorded.git("rev-parse", REF).strip()


def test_with_publish_configured_a_save_is_pushed_in_the_background(recorded: Repo, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    recorded.git("init", "-q", "--bare", str(remote))
    recorded.git("remote", "add", "origin", str(remote))
    recorded.ok("init", "--hooks", "git", "--publish", "origin")
    transcript = tmp_path / "session.jsonl"
    tf.claude(transcript, 5)
    recorded.ok("context", "save", "--from", str(transcript))
    mine = recorded.git("rev-parse", REF).strip()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        there = recorded.run(["git", "--git-dir", str(remote), "rev-parse", "-q", "--verify", REF]).stdout.strip()
        if there == mine:
            break
        time.sleep(0.2)
    assert there == mine


def test_the_saves_meta_data_is_written_as_json_writes_it() -> None:
    """context._json writes the meta data without importing json: the same text json.dumps writes."""
    import json

    from shiftgit.agents.context import _json, _q

    meta = {"run": "r", "format": "claude", "agent": "claude", "session": None, "turn": 3, "chars": 10,
            "saved_at": "2026-12-02T10:00:00+00:00", "odd": "é \"q\" \\ \n\x01\u2028", "ratio": 0.5, "ok": True}
    assert _json(meta) == json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    nested = {"run": "r", "list": [1, {"b": 2}]}
    assert _json(nested) == json.dumps(nested, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert _q('a "b" é\n') == json.dumps('a "b" é', ensure_ascii=False)
