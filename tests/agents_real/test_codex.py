"""Codex, for real, against the fake model: trust steps, briefing, end-of-turn hold, checkpoint,
session end and auto-compaction."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ._clis import CodexDriver
from ._fakemodel import Text
from ._harness import CODEX, CliSpec, Sandbox, long_constraints
from ._scenario import (
    NOTES,
    NOTES_TEXT,
    STEP,
    assert_briefed,
    assert_context_saved,
    assert_ended,
    assert_held_once,
    assert_no_hook_errors,
    assert_no_loop,
    assert_recorded_at_the_end,
    assert_recorded_before_compaction,
    assert_session_recorded,
    assert_turn_may_end,
    checkpoint_after_hold,
    files_of,
    ignore_the_hold,
    reasons,
    run_session,
)

pytestmark = pytest.mark.agents_real

AUTO_COMPACT = ("model_auto_compact_token_limit=5000",)
FULL_CONTEXT = 20_000


@pytest.fixture(scope="module")
def driver(cli_binary: Callable[[CliSpec], Path]) -> CodexDriver:
    return CodexDriver(cli_binary(CODEX))


@pytest.fixture
def box(driver: CodexDriver, make_sandbox: Callable[..., Sandbox]) -> Sandbox:
    sandbox = make_sandbox("codex")
    driver.prepare(sandbox)
    return sandbox


def test_project_hooks_run_only_after_the_trust_steps(driver: CodexDriver,
                                                      make_sandbox: Callable[..., Sandbox]) -> None:
    """`codex exec` skips untrusted hooks without a word: the trust steps are what turns shiftgit on."""
    box = make_sandbox("codex")
    driver.prepare(box, trust=False)
    untrusted = run_session(driver, box, [Text("Nothing to do.")])
    assert_ended(untrusted)
    assert not untrusted.main[0].contains("shiftgit ledger for run"), "an untrusted hook ran"
    assert box.events() == []

    driver.trust(box)
    trusted = run_session(driver, box, [Text("Nothing to do.")])
    assert_ended(trusted)
    assert_briefed(trusted.main[0], box)


def test_briefing_then_one_hold_then_checkpoint_then_the_session_ends(driver: CodexDriver, box: Sandbox) -> None:
    session = run_session(driver, box, checkpoint_after_hold(driver, box))

    assert_ended(session)
    assert_briefed(session.main[0], box)
    assert_held_once(session, at=2)
    assert_no_loop(session)
    assert session.main[3].contains("checkpoint r1 #"), "the agent's shell could not run `shiftgit checkpoint`"
    assert [p.get("stop_hook_active") for p in box.payloads("Stop")] == [False, True]
    assert len(box.payloads("SessionEnd")) == 1
    points = box.ws.checkpoints()
    assert [p.get("step") for p in points] == [STEP], points
    assert NOTES in files_of(points[0])
    assert_turn_may_end(driver, box)
    assert_session_recorded(box, "codex", turns=1)
    assert_no_hook_errors(box)


def test_session_end_records_the_work_the_agent_left_unrecorded(driver: CodexDriver, box: Sandbox) -> None:
    """Codex gives a SessionEnd hook 3 s: the checkpoint, the conversation and the session all fit."""
    session = run_session(driver, box, ignore_the_hold(driver, box))

    assert_ended(session)
    assert_held_once(session, at=2)
    assert_no_loop(session)
    assert_recorded_at_the_end(box, NOTES)
    assert_session_recorded(box, "codex", turns=1)
    assert_context_saved(box, "notes.txt is written.", "I am leaving the ledger as it is.", "apply_patch")
    assert_no_hook_errors(box)


def test_auto_compaction_mid_turn_records_the_work_and_still_holds_the_turn(driver: CodexDriver,
                                                                           box: Sandbox) -> None:
    """Codex compacts between the edit and the next request (PreCompact, then SessionStart again);
    PreCompact must record the work without hiding the edit from the end-of-turn hold."""
    script = checkpoint_after_hold(driver, box)
    script[0] = driver.edit(box, NOTES, NOTES_TEXT, tokens=FULL_CONTEXT)

    session = run_session(driver, box, script, extra=AUTO_COMPACT)

    assert_ended(session)
    assert [r.kind for r in session.requests].count("compaction") == 1, session.describe()
    assert [p.get("trigger") for p in box.payloads("PreCompact")] == ["auto"]
    assert_briefed(session.main[1], box)  # the briefing is back right after the compaction
    assert_recorded_before_compaction(box, NOTES)
    assert_held_once(session, at=2)
    assert_no_loop(session)
    assert box.ws.checkpoints()[-1].get("step") == STEP
    assert_turn_may_end(driver, box)
    assert_context_saved(box)  # at pre-compact, from the transcript before it was compacted
    assert_no_hook_errors(box)


def test_the_reason_names_a_command_that_codexs_login_shell_can_run(driver: CodexDriver,
                                                                  make_sandbox: Callable[..., Sandbox]) -> None:
    """Without shiftgit on the login PATH, `bash -lc shiftgit` is "command not found": the hold names
    `<python> -m shiftgit checkpoint` instead, and that runs in Codex's own shell."""
    box = make_sandbox("codex")
    driver.prepare(box, profile=False)
    python = (box.shiftgit_dir / "shiftgit").read_text().splitlines()[0].removeprefix("#!")  # what the hooks run
    command = f"{python} -m shiftgit checkpoint --step '{STEP}' --next 'run the calc tests'"
    script = checkpoint_after_hold(driver, box)
    script[2] = driver.shell(command)

    session = run_session(driver, box, script)

    assert_ended(session)
    assert_held_once(session, at=2)
    assert all(f"`{python} -m shiftgit checkpoint --step TEXT --next TEXT`" in text
               for text in reasons(session.main[2])), reasons(session.main[2])
    assert session.main[3].contains("checkpoint r1 #"), "Codex's shell could not run the command the reason named"
    assert [p.get("step") for p in box.ws.checkpoints()] == [STEP]
    assert_no_hook_errors(box)


def test_every_constraint_of_a_long_briefing_reaches_the_model(driver: CodexDriver,
                                                               make_sandbox: Callable[..., Sandbox]) -> None:
    """42 constraints: a briefing just under 10,000 characters (shiftgit's cap) but over 10,000 bytes,
    which Codex cuts in the middle (FINDINGS.md, F4)."""
    constraints = long_constraints()
    box = make_sandbox("codex", constraints)
    driver.prepare(box)

    session = run_session(driver, box, [Text("Nothing to do.")])

    assert_ended(session)
    assert_briefed(session.main[0], box)
