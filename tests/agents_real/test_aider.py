"""Aider, for real (from PyPI), against the fake model (chat completions): its commit of unrecorded work is
refused by the commit gate, the reason reaches the model once through the test command `init --agent aider`
configured, no loop; once the user records the work, the commit goes through.

Headless Aider (`--yes-always`) never runs a shell command the model proposes (it wants an explicit yes):
the model can only pass the checkpoint command on to the user, as it does here. And Aider commits only the
files it edited (`git commit -- PATHS`), never the ledger: while a run is active, its auto-commits of
unrecorded work are refused, and the user commits the change with its ledger."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ._clis_more import AiderDriver, install_aider
from ._harness import Sandbox, Unavailable
from ._scenario import (
    CHECKPOINT,
    NOTES,
    NOTES_TEXT,
    STEP,
    assert_ended,
    assert_held_once,
    assert_no_hook_errors,
    assert_no_loop,
    files_of,
    run_session,
)
from .conftest import CACHE

pytestmark = pytest.mark.agents_real


@pytest.fixture(scope="module")
def driver() -> AiderDriver:
    try:
        return AiderDriver(install_aider(CACHE))
    except Unavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def box(driver: AiderDriver, make_sandbox: Callable[..., Sandbox]) -> Sandbox:
    sandbox = make_sandbox("aider")
    driver.prepare(sandbox)
    return sandbox


def test_the_gate_refuses_the_stale_commit_and_the_reason_reaches_the_model_once(driver: AiderDriver,
                                                                                 box: Sandbox) -> None:
    head = box.ws.git("rev-parse", "HEAD").strip()
    session = run_session(driver, box, [driver.edit(box, NOTES, NOTES_TEXT), driver.shell(CHECKPOINT)])

    assert_ended(session)
    assert box.ws.read(NOTES) == NOTES_TEXT
    output = session.finished.stdout + session.finished.stderr
    assert "Unable to commit" in output and "commit refused (run r1)" in output, session.describe()
    assert box.ws.git("rev-parse", "HEAD").strip() == head, "the commit gate let Aider's stale commit through"
    assert_held_once(session, at=1)
    assert_no_loop(session)
    assert box.ws.checkpoints() == [], "nothing recorded the work behind the user's back"
    assert_no_hook_errors(box)

    box.ws.run(["sh", "-c", CHECKPOINT])  # what the model passed on, run by the user
    points = box.ws.checkpoints()
    assert [p.get("step") for p in points] == [STEP] and NOTES in files_of(points[-1])
    box.ws.git("add", "-A")
    box.ws.git("commit", "-q", "-m", "notes, recorded")  # the gate lets the recorded work through
    assert box.ws.run(["shiftgit", "hook", "aider", "after-edit"], check=False).returncode == 0
