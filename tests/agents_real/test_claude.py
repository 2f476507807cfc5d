"""Claude Code, for real, against the fake model: briefing, end-of-turn hold, checkpoint, compaction."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ._clis import ClaudeDriver
from ._fakemodel import Text
from ._harness import CLAUDE, CliSpec, Sandbox, long_constraints
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
    auto_checkpoints,
    checkpoint_after_hold,
    files_of,
    ignore_the_hold,
    run_session,
)

pytestmark = pytest.mark.agents_real

# Claude compacts on its own once the reported prompt size passes this share of this window.
AUTO_COMPACT_ENV = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}
FULL_CONTEXT = 90_000
WARM_UP = 3


@pytest.fixture(scope="module")
def driver(cli_binary: Callable[[CliSpec], Path]) -> ClaudeDriver:
    return ClaudeDriver(cli_binary(CLAUDE))


@pytest.fixture
def box(driver: ClaudeDriver, make_sandbox: Callable[..., Sandbox]) -> Sandbox:
    sandbox = make_sandbox("claude")
    driver.prepare(sandbox)
    return sandbox


def test_briefing_then_one_hold_then_checkpoint_then_the_session_ends(driver: ClaudeDriver, box: Sandbox) -> None:
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
    assert_session_recorded(box, "claude", turns=1)
    assert_no_hook_errors(box)


def test_session_end_records_the_work_the_agent_left_unrecorded(driver: ClaudeDriver, box: Sandbox) -> None:
    session = run_session(driver, box, ignore_the_hold(driver, box))

    assert_ended(session)
    assert_held_once(session, at=2)
    assert_no_loop(session)
    assert_recorded_at_the_end(box, NOTES)
    assert_session_recorded(box, "claude", turns=1)
    assert_context_saved(box, "notes.txt is written.", "I am leaving the ledger as it is.")
    assert_no_hook_errors(box)


def test_manual_compact_records_the_work_first(driver: ClaudeDriver, box: Sandbox) -> None:
    assert_ended(run_session(driver, box, [Text("Nothing to do yet.")]))
    box.ws.write("calc.py", box.ws.read("calc.py") + "\n# edited between sessions\n")

    compact = run_session(driver, box, [], prompt="/compact", resume=True)

    assert_ended(compact)
    assert [r.kind for r in compact.requests].count("compaction") == 1, compact.describe()
    assert [p.get("trigger") for p in box.payloads("PreCompact")] == ["manual"]
    assert_recorded_before_compaction(box, "calc.py")
    assert not auto_checkpoints(box, "session-end"), "nothing changed after the pre-compact checkpoint"
    assert_no_hook_errors(box)


def test_auto_compaction_mid_turn_records_the_work_and_still_holds_the_turn(driver: ClaudeDriver,
                                                                           box: Sandbox) -> None:
    """Claude compacts between the edit and the next request (it fires PreCompact, then SessionStart
    with source "compact"); PreCompact must record the work without hiding the edit from the hold."""
    warm_up = [driver.shell(f"echo step {i}") for i in range(WARM_UP)]  # fewer turns: "too_few_groups"
    script = [*warm_up, *checkpoint_after_hold(driver, box)]
    script[WARM_UP] = driver.edit(box, NOTES, NOTES_TEXT, tokens=FULL_CONTEXT)
    box.extra_env.update(AUTO_COMPACT_ENV)

    session = run_session(driver, box, script)

    assert_ended(session)
    assert [r.kind for r in session.requests].count("compaction") == 1, session.describe()
    assert [p.get("trigger") for p in box.payloads("PreCompact")] == ["auto"]
    assert [p.get("source") for p in box.payloads("SessionStart")] == ["startup", "compact"]
    assert_briefed(session.main[WARM_UP + 1], box)  # the briefing is back right after the compaction
    assert_recorded_before_compaction(box, NOTES)
    assert_held_once(session, at=WARM_UP + 2)
    assert_no_loop(session)
    assert box.ws.checkpoints()[-1].get("step") == STEP
    assert_turn_may_end(driver, box)
    assert_context_saved(box)  # at pre-compact, from the transcript before it was compacted
    assert_no_hook_errors(box)


def test_pre_compact_saves_the_conversation_from_claudes_own_transcript(driver: ClaudeDriver,
                                                                        box: Sandbox) -> None:
    """Issue 12: PreCompact stores the compacted conversation in refs/shift/context/<run>; here the
    transcript is the one the real CLI wrote, not a hand-made one."""
    assert_ended(run_session(driver, box, [Text("Nothing to do yet (context-marker-5c1d).")]))

    assert_ended(run_session(driver, box, [], prompt="/compact", resume=True))

    assert box.payloads("PreCompact"), "PreCompact did not fire"
    assert box.ws.git("rev-parse", "-q", "--verify", "refs/shift/context/r1", check=False).strip(), \
        "pre-compact stored no conversation in refs/shift/context/r1"
    shown = box.ws.sg("context", "show", check=False)
    assert "context-marker-5c1d" in shown.stdout, shown.stdout + shown.stderr
    assert_no_hook_errors(box)


def test_every_constraint_of_a_long_briefing_reaches_the_model(driver: ClaudeDriver,
                                                               make_sandbox: Callable[..., Sandbox]) -> None:
    """42 constraints: a briefing just under 10,000 characters (shiftgit's cap) but over 10,000 bytes,
    which Codex cuts in the middle (FINDINGS.md, F4)."""
    constraints = long_constraints()
    box = make_sandbox("claude", constraints)
    driver.prepare(box)

    session = run_session(driver, box, [Text("Nothing to do.")])

    assert_ended(session)
    assert_briefed(session.main[0], box)
