"""What a pre-compact or session-end hook hands to a detached process (an automatic checkpoint, a large transcript's
conversation): the hook returns first, a reader and the next hook wait for it, it reads the transcript as it was
when the hook ran, and a job killed midway is redone by the next hook (agents/background.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import transcript_fixtures as tf
from agent_saves import pending
from conftest import SG, Repo

BIG = 384 * 1024  # bytes: a transcript whose compaction costs a hook more than a Python start-up
PAUSE = {"SHIFTGIT_TEST_PAUSE": "context-save", "SHIFTGIT_TEST_PAUSE_SECONDS": "120"}


def hook(repo: Repo, transcript: Path, env: dict[str, str] | None = None,
         event: str = "session-end") -> tuple[str, float]:
    body = json.dumps({"session_id": "sess-1", "transcript_path": str(transcript), "cwd": str(repo.path),
                       "hook_event_name": "X", "trigger": "auto", "reason": "exit", "stop_hook_active": False})
    started = time.monotonic()
    proc = subprocess.run([*SG, "hook", "claude", event], cwd=repo.path, input=body, text=True,
                          capture_output=True, timeout=60, env={**os.environ, **(env or {})})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout, time.monotonic() - started


def big_transcript(tmp_path: Path) -> Path:
    path = tmp_path / "big.jsonl"
    tf.big_claude(path, BIG / 1024 / 1024)
    return path


def context_ref(repo: Repo) -> str:
    return repo.git("rev-parse", "-q", "--verify", "refs/shift/context/demo", check=False).strip()


def lock_file(repo: Repo) -> Path:
    return repo.path / ".git" / "shift" / "agents" / "context-demo.lock"


def held_by(repo: Repo, seconds: float = 30.0) -> int:
    """The pid of the process holding the run's save lock (it writes its pid once it holds it)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            text = lock_file(repo).read_text().strip()
        except OSError:
            text = ""
        if text.isdigit():
            return int(text)
        time.sleep(0.05)
    raise AssertionError("no background save took the lock")


def test_a_large_transcript_is_saved_in_the_background_and_show_waits_for_it(run_repo: Repo,
                                                                              tmp_path: Path) -> None:
    transcript = big_transcript(tmp_path)
    out, _ = hook(run_repo, transcript)
    assert "saving the compacted conversation of run demo in the background" in out
    shown = run_repo.ok("context", "show").stdout  # waits for the save in progress
    assert tf.REQUEST in shown and "never edit tests/" in shown
    first = context_ref(run_repo)
    assert first
    out, _ = hook(run_repo, transcript)  # nothing new: no save, nothing started
    assert out == "" and context_ref(run_repo) == first


def test_a_background_save_killed_midway_is_redone_by_the_next_hook(run_repo: Repo, tmp_path: Path) -> None:
    transcript = big_transcript(tmp_path)
    out, took = hook(run_repo, transcript, PAUSE)
    assert "in the background" in out and took < 60  # the hook did not wait for the paused save
    pid = held_by(run_repo)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # reaped by init once dead; the kernel dropped its flock
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    assert context_ref(run_repo) == "", "the killed save stored nothing"
    log = (run_repo.path / ".git" / "shift" / "hooks.log")
    assert not log.exists() or "context-save" not in log.read_text()
    assert (run_repo.path / ".git" / "shift" / "agents" / "pending-demo.json").exists()
    out, _ = hook(run_repo, transcript, event="pre-compact")  # the same transcript: its stamp was never recorded
    assert "saved the compacted conversation" in out  # the job left pending, redone in this hook first
    saved = context_ref(run_repo)
    assert saved and tf.REQUEST in run_repo.ok("context", "show").stdout
    out, _ = hook(run_repo, transcript)
    assert out == "" and context_ref(run_repo) == saved


def test_a_save_whose_commit_landed_but_not_its_stamp_stores_nothing_new(run_repo: Repo, tmp_path: Path) -> None:
    transcript = big_transcript(tmp_path)
    hook(run_repo, transcript)
    run_repo.ok("context", "show")
    saved = context_ref(run_repo)
    seen = run_repo.path / ".git" / "shift" / "agents" / "context-saves.json"
    seen.write_text("{}")  # as if killed between the ref update and the stamp
    out, _ = hook(run_repo, transcript)
    assert "in the background" in out
    run_repo.ok("context", "show")
    assert context_ref(run_repo) == saved  # the same text: no second commit
    assert json.loads(seen.read_text()).get("demo")


def kill_job(repo: Repo) -> None:
    pid = held_by(repo)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def test_an_automatic_checkpoint_killed_in_the_background_is_redone_by_the_end_of_turn_hook(run_repo: Repo,
                                                                                              tmp_path: Path) -> None:
    """The hold sees what it would have seen had pre-compact recorded the checkpoint itself: held once, for it."""
    transcript = tmp_path / "small.jsonl"
    tf.claude(transcript, 4)
    before = run_repo.ledger("demo").get("checkpoint")
    run_repo.write("calc.py", run_repo.read("calc.py") + "# edited before the compaction\n")
    out, took = hook(run_repo, transcript, PAUSE, event="pre-compact")
    assert "saved the compacted conversation" in out and took < 60  # a small transcript: before the hook returns
    first = context_ref(run_repo)
    kill_job(run_repo)
    assert run_repo.ledger("demo").get("checkpoint") == before  # the killed job wrote nothing
    assert pending(run_repo.path) == ["demo"]
    held = json.loads(hook(run_repo, transcript, event="stop")[0])
    point = run_repo.ledger("demo")["checkpoint"]
    assert point["auto"] == "pre-compact" and point["unrecorded"] == ["calc.py"] and point["session"] == "sess-1"
    assert held["decision"] == "block" and 'at "pre-compact"' in held["reason"] and "calc.py" in held["reason"]
    assert '"block"' not in hook(run_repo, transcript, event="stop")[0]  # held once
    assert pending(run_repo.path) == []
    assert context_ref(run_repo) not in ("", first)  # saved again: the checkpoint is in the run's summary now
    assert "auto-checkpoint at the agent's pre-compact hook" in run_repo.ok("context", "show").stdout
    assert "redoing the pre-compact save" in (run_repo.path / ".git" / "shift" / "hooks.log").read_text()


def test_the_end_of_turn_hook_waits_for_the_checkpoint_in_progress(run_repo: Repo, tmp_path: Path) -> None:
    transcript = tmp_path / "small.jsonl"
    tf.claude(transcript, 4)
    run_repo.write("calc.py", run_repo.read("calc.py") + "# edited\n")
    slow = {"SHIFTGIT_TEST_PAUSE": "context-save", "SHIFTGIT_TEST_PAUSE_SECONDS": "1.5"}
    out, took = hook(run_repo, transcript, slow, event="pre-compact")
    assert pending(run_repo.path) == ["demo"] and took < 1.5  # the checkpoint is left to the background
    held = json.loads(hook(run_repo, transcript, event="stop")[0])  # at once: the job is still paused
    assert 'at "pre-compact"' in held["reason"]  # it judged the tree after the automatic checkpoint
    assert run_repo.ledger("demo")["checkpoint"]["auto"] == "pre-compact"


def test_the_background_save_reads_the_transcript_as_it_was_when_the_hook_ran(run_repo: Repo, tmp_path: Path) -> None:
    """Pre-compact after an edit: the job's checkpoint changes the run's summary, so it saves the conversation
    again, from the transcript as it was when the hook ran, although the agent went on (compacted) meanwhile."""
    transcript = tmp_path / "small.jsonl"
    tf.claude(transcript, 4)
    size = transcript.stat().st_size
    run_repo.write("calc.py", run_repo.read("calc.py") + "# edited\n")
    slow = {"SHIFTGIT_TEST_PAUSE": "context-save", "SHIFTGIT_TEST_PAUSE_SECONDS": "1.5"}
    out, _ = hook(run_repo, transcript, slow, event="pre-compact")
    assert "saved the compacted conversation" in out and pending(run_repo.path) == ["demo"]
    first = context_ref(run_repo)
    later = {"type": "user", "sessionId": "s", "uuid": "late", "message": {"role": "user", "content": "LATE-TURN-77"}}
    with transcript.open("a") as handle:  # the agent goes on (compacts) while the job waits
        handle.write(json.dumps(later) + "\n")
    shown = run_repo.ok("context", "show").stdout
    assert context_ref(run_repo) != first and "auto-checkpoint at the agent's pre-compact hook" in shown
    assert tf.REQUEST in shown and "LATE-TURN-77" not in shown
    meta = json.loads(run_repo.git("log", "-1", "--format=%b", "refs/shift/context/demo"))
    assert meta["transcript_bytes"] == size


def test_a_pending_job_that_fails_again_is_given_up_and_the_hold_still_works(run_repo: Repo, tmp_path: Path) -> None:
    transcript = tmp_path / "small.jsonl"
    tf.claude(transcript, 4)
    run_repo.write("calc.py", run_repo.read("calc.py") + "# edited\n")
    agents = run_repo.path / ".git" / "shift" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    job = {"run": "demo", "agent": "claude", "event": "pre-compact", "session": "sess-1", "turn": 1,
           "checkpoint": True, "transcript": str(transcript), "size": 10, "file_stamp": "x:"}
    (agents / "pending-demo.json").write_text(json.dumps(job))
    ledger = run_repo.path / ".shift" / "runs" / "demo" / "ledger.json"
    good = ledger.read_text()
    ledger.write_text("{not json")  # the job cannot read the run: it fails
    out, _ = hook(run_repo, transcript, event="stop")
    assert pending(run_repo.path) == []  # given up, logged
    assert "gave up the pre-compact save" in (run_repo.path / ".git" / "shift" / "hooks.log").read_text()
    ledger.write_text(good)
    held = json.loads(hook(run_repo, transcript, event="stop")[0])
    assert held["decision"] == "block" and "calc.py" in held["reason"]


def test_the_background_job_keeps_no_descriptor_the_agent_gave_the_hook(run_repo: Repo, tmp_path: Path) -> None:
    """An agent that waits for the hook's pipes to close must not wait for the detached job (close_fds)."""
    transcript = big_transcript(tmp_path)
    read_end, write_end = os.pipe()
    body = json.dumps({"session_id": "sess-1", "transcript_path": str(transcript), "cwd": str(run_repo.path),
                       "hook_event_name": "SessionEnd", "reason": "exit"})
    try:
        proc = subprocess.Popen([*SG, "hook", "claude", "session-end"], cwd=run_repo.path, stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write_end,),
                                env={**os.environ, **PAUSE})
        os.close(write_end)
        proc.communicate(body.encode(), timeout=60)
        pid = held_by(run_repo)  # the paused job runs on, holding the lock
        os.set_blocking(read_end, False)
        try:
            assert os.read(read_end, 1) == b"", "EOF: nobody holds the pipe's other end"
        finally:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(read_end)


def test_a_pre_compact_hook_leaves_the_stamp_of_the_conversation_it_saved_to_its_job(run_repo: Repo,
                                                                                    tmp_path: Path) -> None:
    """The hook saves the conversation itself and hands the checkpoint on: the stamp of what it saved travels in the
    pending job (recorded by the job, not by the hook); a job killed before recording it is redone by the next hook,
    which records it and stores nothing new."""
    transcript = tmp_path / "t.jsonl"
    tf.claude(transcript, turns=40)
    out, _ = hook(run_repo, transcript, PAUSE, event="pre-compact")
    assert "saved the compacted conversation" in out
    saved = context_ref(run_repo)
    pid = held_by(run_repo)  # the job holds the lock, paused before any step
    seen = run_repo.path / ".git" / "shift" / "agents" / "context-saves.json"
    assert "demo" not in (json.loads(seen.read_text()) if seen.exists() else {})
    job = run_repo.path / ".git" / "shift" / "agents" / "pending-demo.json"
    assert json.loads(job.read_text())["seen"] and pid
    kill_job(run_repo)
    out, _ = hook(run_repo, transcript, event="pre-compact")  # the same transcript: nothing new to save
    assert "saved the compacted conversation" not in out and context_ref(run_repo) == saved
    run_repo.ok("context", "show")  # waits for the job this hook handed on
    assert json.loads(seen.read_text())["demo"] and pending(run_repo.path) == []


def test_a_job_redone_after_its_last_step_compacts_nothing_again(run_repo: Repo, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The job recorded the checkpoint, the conversation and its stamp, then died before removing its pending file:
    the redo finds the stamp recorded and neither compacts the transcript again nor puts the hook's older stamp back."""
    from shiftgit.agents import background, context
    from shiftgit.ledger.store import Store
    from shiftgit.repo import Repo as GitRepo

    transcript = tmp_path / "t.jsonl"
    tf.claude(transcript, turns=40)
    run_repo.write("new.txt", "a change: the job's checkpoint is due\n")
    out, _ = hook(run_repo, transcript, PAUSE, event="pre-compact")
    assert "saved the compacted conversation" in out
    held_by(run_repo)
    agents = run_repo.path / ".git" / "shift" / "agents"
    job = (agents / "pending-demo.json").read_text()
    kill_job(run_repo)
    monkeypatch.chdir(run_repo.path)
    background.finish_pending(Store(GitRepo.open(run_repo.path)), "demo", lambda line: None)  # the job, done here
    final = json.loads((agents / "context-saves.json").read_text())["demo"]
    (agents / "pending-demo.json").write_text(job)  # as if it died after its last step, before the unlink
    compactions: list[int] = []
    real = context.save
    monkeypatch.setattr(context, "save", lambda *a, **k: compactions.append(1) or real(*a, **k))
    background.finish_pending(Store(GitRepo.open(run_repo.path)), "demo", lambda line: None)
    assert compactions == [] and json.loads((agents / "context-saves.json").read_text())["demo"] == final
    assert not (agents / "pending-demo.json").exists()
