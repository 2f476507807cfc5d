"""Gemini CLI, for real, against the fake model: briefing, end-of-turn hold (AfterAgent), checkpoint,
session end, and PreCompress (which Gemini fires before every model request)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ._clis import GeminiDriver
from ._fakemodel import Text
from ._harness import GEMINI, CliSpec, Sandbox, long_constraints
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
    assert_session_recorded,
    assert_turn_may_end,
    checkpoint_after_hold,
    files_of,
    ignore_the_hold,
    run_session,
)

pytestmark = pytest.mark.agents_real


@pytest.fixture(scope="module")
def driver(cli_binary: Callable[[CliSpec], Path]) -> GeminiDriver:
    return GeminiDriver(cli_binary(GEMINI))


@pytest.fixture
def box(driver: GeminiDriver, make_sandbox: Callable[..., Sandbox]) -> Sandbox:
    sandbox = make_sandbox("gemini")
    driver.prepare(sandbox)
    return sandbox


def test_briefing_then_one_hold_then_checkpoint_then_the_session_ends(driver: GeminiDriver, box: Sandbox) -> None:
    session = run_session(driver, box, checkpoint_after_hold(driver, box))

    assert_ended(session)
    assert_briefed(session.main[0], box)
    assert_held_once(session, at=2)
    assert_no_loop(session)
    assert session.main[3].contains("checkpoint r1 #"), "the agent's shell could not run `shiftgit checkpoint`"
    assert len(box.payloads("AfterAgent")) == 2
    assert len(box.payloads("SessionEnd")) == 1
    points = box.ws.checkpoints()
    assert [p.get("step") for p in points] == [STEP], points  # PreCompress, before every request, recorded nothing
    assert NOTES in files_of(points[-1])
    assert_turn_may_end(driver, box)
    assert_session_recorded(box, "gemini", turns=1)
    assert_no_hook_errors(box)


def test_session_end_records_the_work_the_agent_left_unrecorded(driver: GeminiDriver, box: Sandbox) -> None:
    session = run_session(driver, box, ignore_the_hold(driver, box))

    assert_ended(session)
    assert_held_once(session, at=2)
    assert_no_loop(session)
    assert_recorded_at_the_end(box, NOTES)
    assert_session_recorded(box, "gemini", turns=1)
    assert_context_saved(box, "notes.txt is written.")
    assert_no_hook_errors(box)


def test_pre_compress_fires_before_every_model_request(driver: GeminiDriver, box: Sandbox) -> None:
    """Gemini CLI 0.61 fires PreCompress (trigger "auto") before each conversation request, and checks
    the token threshold only afterwards: the event says nothing about a compression happening."""
    session = run_session(driver, box, [driver.edit(box, NOTES, NOTES_TEXT), Text("Done.")])

    assert_ended(session)
    triggers = [p.get("trigger") for p in box.payloads("PreCompress")]
    assert len(session.main) >= 2
    assert triggers == ["auto"] * len(session.main), (triggers, session.describe())
    assert not [r for r in session.requests if r.kind == "compaction"], "no compression was due"


def test_every_constraint_of_a_long_briefing_reaches_the_model(driver: GeminiDriver,
                                                               make_sandbox: Callable[..., Sandbox]) -> None:
    """42 constraints: a briefing just under 10,000 characters (shiftgit's cap) but over 10,000 bytes,
    which Codex cuts in the middle (FINDINGS.md, F4)."""
    constraints = long_constraints()
    box = make_sandbox("gemini", constraints)
    driver.prepare(box)

    session = run_session(driver, box, [Text("Nothing to do.")])

    assert_ended(session)
    assert_briefed(session.main[0], box)
