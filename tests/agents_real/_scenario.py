"""The scripted sessions every CLI goes through, and what the tests read from them.

A session: the CLI starts headless in the workspace, talks to a `FakeModel` playing a script, and
must exit on its own. The tests then read the requests the model received, the hook payloads the
capture hooks recorded, the ledger and shiftgit's hooks.log.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._clis import Driver
from ._fakemodel import EXHAUSTED, FakeModel, Request, Text, Turn
from ._harness import GOAL, Finished, Sandbox, run_cli

RUN_TIMEOUT = 180.0  # the CLI is killed after this (a hung session fails, it never blocks the suite)
SESSION_BOUND = 120.0  # a session that works ends well within this
LIFETIME = RUN_TIMEOUT + 30.0  # the fake model's hard lifetime

PROMPT = "Add a notes file to the project, then stop."
NOTES = "notes.txt"
NOTES_TEXT = "edited by the agent\n"
STEP = "wrote notes.txt"
CHECKPOINT = f"shiftgit checkpoint --step '{STEP}' --next 'run the calc tests'"
STALE_MARK = "is stale:"  # shiftgit's end-of-turn reason: "shiftgit: the ledger of run 'r1' is stale: ..."
HOLD_COMMAND = "shiftgit checkpoint"  # the reason must name the command that records the state
PREFIX = 60  # characters of a constraint that must reach the model verbatim


@dataclass(frozen=True)
class Session:
    """One finished CLI session and every request the fake model received."""

    finished: Finished
    requests: list[Request]
    script_length: int

    @property
    def main(self) -> list[Request]:
        return [r for r in self.requests if r.main]

    def describe(self) -> str:
        kinds = ", ".join(f"{r.kind}:{r.path.rsplit('/', 1)[-1]}" for r in self.requests)
        return f"{self.finished.describe()}\n--- requests ---\n{kinds}"


def run_session(driver: Driver, box: Sandbox, script: Sequence[Turn], *, prompt: str = PROMPT,
                resume: bool = False, extra: tuple[str, ...] = ()) -> Session:
    with FakeModel(driver.api(), script, lifetime=LIFETIME) as model:
        argv = driver.argv(box, prompt, model.url, resume=resume, extra=extra)
        finished = run_cli(argv, box.ws.path, driver.env(box, model.url), timeout=RUN_TIMEOUT)
        requests = list(model.requests)
    return Session(finished, requests, len(script))


# -- scripts -----------------------------------------------------------------------------------

def checkpoint_after_hold(driver: Driver, box: Sandbox) -> list[Turn]:
    """Edit, end the turn (held: the ledger is stale), checkpoint through the shell, end the turn."""
    return [driver.edit(box, NOTES, NOTES_TEXT), Text("notes.txt is written."),
            driver.shell(CHECKPOINT), Text("The checkpoint is recorded.")]


def ignore_the_hold(driver: Driver, box: Sandbox) -> list[Turn]:
    """Edit, end the turn (held), end the turn again without recording anything."""
    return [driver.edit(box, NOTES, NOTES_TEXT), Text("notes.txt is written."),
            Text("I am leaving the ledger as it is.")]


# -- what the tests assert -------------------------------------------------------------------------

def assert_ended(session: Session) -> None:
    """The CLI exited by itself, successfully, within the bound."""
    assert not session.finished.timed_out, session.describe()
    assert session.finished.returncode == 0, session.describe()
    assert session.finished.seconds < SESSION_BOUND, session.describe()


def assert_no_loop(session: Session) -> None:
    """Exactly one main request per scripted turn: the hold did not fire again after the script ran out."""
    assert len(session.main) == session.script_length, session.describe()
    assert not any(r.contains(EXHAUSTED) for r in session.main), session.describe()


def assert_briefed(request: Request, box: Sandbox) -> None:
    """The session-start briefing is in the request, with the goal and every active constraint of the
    ledger: its id and the start of its text (shiftgit shortens constraint texts when there are many)."""
    assert request.contains("shiftgit ledger for run 'r1'"), "no shiftgit briefing in the request"
    assert request.contains(GOAL), "the briefing lacks the run's goal"
    active = [c for c in box.ws.ledger()["constraints"] if c.get("status") == "active"]
    missing = [c["id"] for c in active if not (request.contains(c["id"]) and request.contains(c["text"][:PREFIX]))]
    assert not missing, f"{len(missing)} of {len(active)} active constraints did not reach the model: {missing}"


def reasons(request: Request) -> list[str]:
    """The strings of a request that carry shiftgit's end-of-turn reason."""
    return [s for s in request.strings() if STALE_MARK in s and "shiftgit" in s]


def assert_held_once(session: Session, *, at: int) -> None:
    """The end-of-turn reason reached the model once: it first appears in main request `at` (the one
    right after the turn ended), naming `shiftgit checkpoint` and the edited file, and no later
    request carries more copies of it than that one (a second hold would add copies).

    Copies, not messages, because a CLI may present one hold twice in the same request (Claude Code:
    a "Stop hook feedback" reminder in the user turn and a "Stop hook blocking error" system message).
    """
    counts = [len(reasons(r)) for r in session.main]
    assert any(counts), f"shiftgit's end-of-turn reason never reached the model\n{session.describe()}"
    first = next(i for i, n in enumerate(counts) if n)
    assert first == at, f"the reason first arrived in main request {first}, expected {at}; copies per request {counts}"
    assert all(n == counts[at] for n in counts[at:]), f"the reason was delivered again; copies per request {counts}"
    for text in reasons(session.main[at]):
        assert HOLD_COMMAND in text and NOTES in text, text


def assert_turn_may_end(driver: Driver, box: Sandbox) -> None:
    """The state the session left passes the end-of-turn gate on its own merits: shiftgit's hook,
    asked as at a first stop of a new session (`stop_hook_active: false`), does not hold."""
    event, name = driver.end_of_turn
    payload = json.dumps({"session_id": "after-the-session", "cwd": str(box.ws.path), "hook_event_name": event,
                          "stop_hook_active": False})
    answer = box.ws.run(["shiftgit", "hook", driver.spec.agent, name], input=payload).stdout
    assert '"decision"' not in answer, f"the ledger is still stale after the session: {answer}"


def assert_no_hook_errors(box: Sandbox) -> None:
    log = box.ws.hooks_log()
    assert "Traceback" not in log and "Error" not in log, log


def is_auto(point: dict[str, Any] | None, event: str) -> bool:
    """A checkpoint shiftgit recorded by itself at `event` (note "auto: <event> (session ...)")."""
    return isinstance(point, dict) and str(point.get("note") or "").startswith(f"auto: {event}")


def auto_checkpoints(box: Sandbox, event: str) -> list[dict[str, Any]]:
    """Auto checkpoints of `event` among the run's checkpoints (only the latest one has its note)."""
    return [p for p in box.ws.checkpoints() if is_auto(p, event)]


def assert_recorded_at_the_end(box: Sandbox, path: str, events: tuple[str, ...] = ("session-end",)) -> None:
    """The work the agent left unrecorded is in the ledger when the session is over: the latest
    checkpoint is one shiftgit recorded by itself at one of `events`, and it holds `path`."""
    assert len(box.payloads("SessionEnd")) == 1, "SessionEnd did not fire once"
    latest = box.ws.checkpoints()[-1] if box.ws.checkpoints() else None
    assert any(is_auto(latest, e) for e in events), f"the latest checkpoint is not an automatic one: {latest}"
    assert latest is not None and path in files_of(latest), latest


def assert_recorded_before_compaction(box: Sandbox, path: str) -> None:
    """When the compaction was over (PostCompact), the latest checkpoint was shiftgit's pre-compact
    one and held `path`."""
    point = box.checkpoint_at("PostCompact")
    assert is_auto(point, "pre-compact"), f"no pre-compact checkpoint when the compaction ended: {point}"
    assert point is not None and path in files_of(point), point


def assert_session_recorded(box: Sandbox, agent: str, *, turns: int) -> None:
    """The ledger's `sessions` list has the CLI's session: started, ended (SessionEnd fired), its turns."""
    ended = box.payloads("SessionEnd")
    assert ended, "SessionEnd did not fire"
    session = str(ended[-1].get("session_id"))
    entries = [s for s in box.ws.ledger().get("sessions") or [] if s.get("id") == session]
    assert len(entries) == 1, box.ws.ledger().get("sessions")
    entry = entries[0]
    assert entry["agent"] == agent and entry["started_at"] and entry["ended_at"], entry
    assert entry["turns"] == turns, entry


def assert_context_saved(box: Sandbox, *markers: str) -> str:
    """`refs/shift/context/r1` holds the compacted conversation, read from the CLI's own transcript (`context
    show` first: it waits for a session end's save in the background)."""
    shown = box.ws.sg("context", "show").stdout
    assert box.ws.git("rev-parse", "-q", "--verify", "refs/shift/context/r1", check=False).strip(), \
        "no conversation saved in refs/shift/context/r1"
    for marker in (PROMPT, *markers):
        assert marker in shown, f"{marker!r} is not in the saved context:\n{shown[:3000]}"
    return shown


def files_of(point: dict[str, Any]) -> list[str]:
    files = point.get("files")
    return [str(f.get("path")) for f in files if isinstance(f, dict)] if isinstance(files, list) else []
