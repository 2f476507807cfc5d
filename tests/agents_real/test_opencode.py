"""OpenCode, for real (its Anthropic provider pointed at the fake model), served as its TUI uses it
(`opencode serve`): shiftgit's plugin puts the briefing in the system prompt, holds the turn once when the
session goes idle with unrecorded work (a prompt sent back into the session), the model checkpoints through
its shell, no loop. Headless `opencode run` exits at the first idle, before any plugin can hold it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ._clis_more import OpenCodeDriver, run_served
from ._fakemodel import Text
from ._harness import OPENCODE, CliSpec, Sandbox, long_constraints
from ._scenario import (
    NOTES,
    STEP,
    assert_briefed,
    assert_ended,
    assert_held_once,
    assert_no_hook_errors,
    assert_no_loop,
    assert_turn_may_end,
    checkpoint_after_hold,
    files_of,
    ignore_the_hold,
    run_session,
)
from ._scenario import Session as _Session

PROMPT = "Add a notes file to the project, then stop."


def served(driver: OpenCodeDriver, box: Sandbox, script: list[Any]) -> _Session:
    finished, requests = run_served(driver, box, script, prompt=PROMPT)
    return _Session(finished, requests, len(script))

pytestmark = pytest.mark.agents_real


@pytest.fixture(scope="module")
def driver(cli_binary: Callable[[CliSpec], Path]) -> OpenCodeDriver:
    return OpenCodeDriver(cli_binary(OPENCODE))


@pytest.fixture
def box(driver: OpenCodeDriver, make_sandbox: Callable[..., Sandbox]) -> Sandbox:
    sandbox = make_sandbox("opencode")
    driver.prepare(sandbox)
    return sandbox


def test_briefing_then_one_hold_then_checkpoint(driver: OpenCodeDriver, box: Sandbox) -> None:
    session = served(driver, box, checkpoint_after_hold(driver, box))

    assert_ended(session)
    assert_briefed(session.main[0], box)
    assert session.main[0].contains(f"Produced for OpenCode {OPENCODE.version} by shiftgit")
    assert_held_once(session, at=2)
    assert_no_loop(session)
    assert session.main[3].contains("checkpoint r1 #"), "the agent's shell could not run `shiftgit checkpoint`"
    points = box.ws.checkpoints()
    assert [p.get("step") for p in points] == [STEP], points
    assert NOTES in files_of(points[-1])
    assert_turn_may_end(driver, box)
    assert_no_hook_errors(box)


def test_a_hold_the_agent_ignores_is_not_repeated(driver: OpenCodeDriver, box: Sandbox) -> None:
    session = served(driver, box, ignore_the_hold(driver, box))

    assert_ended(session)
    assert_held_once(session, at=2)
    assert_no_loop(session)
    assert_no_hook_errors(box)


def test_every_constraint_of_a_long_briefing_reaches_the_model(driver: OpenCodeDriver,
                                                               make_sandbox: Callable[..., Sandbox]) -> None:
    box = make_sandbox("opencode", long_constraints())
    driver.prepare(box)

    session = run_session(driver, box, [Text("Nothing to do.")])  # `opencode run`: the briefing needs no idle

    assert_ended(session)
    assert_briefed(session.main[0], box)
