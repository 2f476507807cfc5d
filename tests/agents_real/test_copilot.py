"""GitHub Copilot CLI, for real (BYOK against the fake model, Anthropic protocol): the briefing reaches the
model (sessionStart's top-level additionalContext), the end-of-turn hold (agentStop) fires once, the model
checkpoints through its shell, no loop; repository hooks run only in a trusted folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ._clis_more import CopilotDriver
from ._fakemodel import Text
from ._harness import COPILOT, CliSpec, Sandbox, long_constraints
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

pytestmark = pytest.mark.agents_real


@pytest.fixture(scope="module")
def driver(cli_binary: Callable[[CliSpec], Path]) -> CopilotDriver:
    return CopilotDriver(cli_binary(COPILOT))


@pytest.fixture
def box(driver: CopilotDriver, make_sandbox: Callable[..., Sandbox]) -> Sandbox:
    sandbox = make_sandbox("copilot")
    driver.prepare(sandbox)
    return sandbox


def test_briefing_then_one_hold_then_checkpoint(driver: CopilotDriver, box: Sandbox) -> None:
    session = run_session(driver, box, checkpoint_after_hold(driver, box))

    assert_ended(session)
    assert_briefed(session.main[0], box)
    assert session.main[0].contains(f"Produced for GitHub Copilot CLI {COPILOT.version} by shiftgit")
    assert_held_once(session, at=2)
    assert_no_loop(session)
    assert session.main[3].contains("checkpoint r1 #"), "the agent's shell could not run `shiftgit checkpoint`"
    assert [p.get("stop_hook_active") for p in box.payloads("agentStop")] == [False, True]
    points = box.ws.checkpoints()
    assert [p.get("step") for p in points] == [STEP], points
    assert NOTES in files_of(points[-1])
    assert_turn_may_end(driver, box)
    assert_no_hook_errors(box)


def test_a_hold_the_agent_ignores_is_not_repeated(driver: CopilotDriver, box: Sandbox) -> None:
    session = run_session(driver, box, ignore_the_hold(driver, box))

    assert_ended(session)
    assert_held_once(session, at=2)
    assert_no_loop(session)
    assert len(box.payloads("sessionEnd")) == 1
    assert_no_hook_errors(box)


def test_repository_hooks_run_only_in_a_trusted_folder(driver: CopilotDriver,
                                                       make_sandbox: Callable[..., Sandbox]) -> None:
    box = make_sandbox("copilot")
    driver.prepare(box, trust=False)
    untrusted = run_session(driver, box, [Text("Nothing to do.")])
    assert_ended(untrusted)
    assert not untrusted.main[0].contains("shiftgit ledger for run"), "a hook ran in an untrusted folder"
    assert box.events() == []

    trusted = run_session(driver, box, [Text("Nothing to do.")], extra=("--trust-folder",))
    assert_ended(trusted)
    assert_briefed(trusted.main[0], box)


def test_every_constraint_of_a_long_briefing_reaches_the_model(driver: CopilotDriver,
                                                               make_sandbox: Callable[..., Sandbox]) -> None:
    box = make_sandbox("copilot", long_constraints())
    driver.prepare(box)

    session = run_session(driver, box, [Text("Nothing to do.")])

    assert_ended(session)
    assert_briefed(session.main[0], box)
