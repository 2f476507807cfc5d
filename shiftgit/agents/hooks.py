"""`shiftgit hook <agent> <event>`: coding-agent hooks (Claude Code, Codex, Gemini CLI, Qwen Code, Copilot CLI,
OpenCode's plugin).

Each reads the agent's JSON on stdin and answers in that agent's format (agents/events.py says what
each event does):
- brief (session start): the run's briefing, as data with provenance, injected as context; the session
  joins the ledger's `sessions` list;
- gate (stop / after-agent): hold the agent once while its work is not recorded (agents/hold.py), never
  when the agent is already continuing because of a stop hook; a turn the gate lets end is counted;
- save / end (pre-compact / session-end): a checkpoint when something changed and the compacted conversation,
  handed to a background job (agents/saves.py; pre-compact saves the conversation in the hook first); session end
  also closes the session's entry. A session start or an end of turn first waits for such a job of its run, or
  redoes one whose process died (`_settle`): it then reads what it would have read had the hook done it all.
They fail open: any error exits 0 with nothing blocking, and is logged to <git-dir>/shift/hooks.log; so
does an agent version whose major number shiftgit does not know (agents/versions.py).
They never run a recorded command. The hot path (the gate) imports no click, jsonschema, pygit2 or
ledger model: it reads the ledger's JSON (`Store.document`).
"""

from __future__ import annotations

import os
import sys

from shiftgit import rawjson
from shiftgit.agents.events import EVENTS
from shiftgit.agents.hooklog import LOG_LIMIT, log
from shiftgit.repo import Repo

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import IO, Any, NamedTuple
else:
    from shiftgit.tuples import NamedTuple

GATE_WAIT = 20.0  # seconds a session start or an end of turn waits for a background save of its run

__all__ = ["LOG_LIMIT", "Answer", "Payload", "log", "main"]


class Payload(NamedTuple):
    """The fields shiftgit uses from an agent's hook input (defaults for garbage)."""

    session: str = "unknown"
    cwd: str | None = None
    stop_hook_active: bool | None = None  # None: absent or not a boolean, so never block on it
    transcript: str | None = None


class Answer(NamedTuple):
    """What a hook says: context to inject, a block with its reason, or a note for the human."""

    context: str | None = None
    block: str | None = None
    note: str | None = None


def main(agent: str, args: list[str], *, stdin: IO[bytes] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None, cwd: str | None = None) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    event = args[0] if len(args) == 1 else None
    if agent not in EVENTS or event not in EVENTS[agent]:
        known = "; ".join(f"{a}: {', '.join(e)}" for a, e in EVENTS.items())
        err.write(f"shiftgit: unknown agent hook {' '.join([agent, *args])!r} (known: {known})\n")
        return 1
    payload, problem = parse_payload(b"" if agent == "aider" else _read(stdin))
    if agent == "aider":  # a test command: no input; the hold is once per staleness for the repository
        payload = payload._replace(session="aider", stop_hook_active=False)
    where = _workdir(payload, cwd)
    repo = _open_repo(where)
    if problem and repo is not None:
        log(repo, agent, event, f"ignored unreadable hook input: {problem}")
    try:
        answer = handle(agent, event, payload, repo)
    except Exception as exc:  # fail open: never block an agent because shiftgit broke
        if repo is not None:
            import traceback

            log(repo, agent, event, f"{exc!r}\n{traceback.format_exc()}")
        answer = None
    _write(out, render(agent, answer))
    return 1 if agent == "aider" and answer is not None and answer.block is not None else 0


def parse_payload(raw: bytes) -> tuple[Payload, str | None]:
    """Lenient: a field of the wrong type is ignored; non-JSON or non-object input is unreadable."""
    try:
        data = rawjson.loads(raw.decode("utf-8", "replace")) if raw.strip() else None
    except ValueError as exc:
        return Payload(), f"not JSON ({exc})"
    if not isinstance(data, dict):
        return Payload(), f"expected a JSON object, got {type(data).__name__}"
    from shiftgit.agents.sessions import session_id

    session, cwd = data.get("session_id", data.get("sessionId")), data.get("cwd")  # Copilot: camelCase
    transcript = data.get("transcript_path", data.get("transcriptPath"))
    return Payload(
        session=session_id(session[:200]) if isinstance(session, str) and session else "unknown",
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        stop_hook_active=active if isinstance(active := data.get("stop_hook_active"), bool) else None,
        transcript=transcript if isinstance(transcript, str) and transcript else None,
    ), None


def handle(agent: str, event: str, payload: Payload, repo: Repo | None) -> Answer | None:
    kind = EVENTS[agent][event]
    if repo is None or kind == "ignore":
        return None
    from shiftgit.ledger.store import Store

    store = Store(repo)
    if not (store.root / "config.json").exists():
        return None
    pick = _discover(store, kind)
    if pick is None or isinstance(pick, Answer):  # no run fits (a session start is told which runs there are)
        return pick
    run, note = pick
    if kind in ("brief", "gate"):
        from shiftgit.agents.versions import detect

        version = detect(agent)
        if not version.known:
            log(repo, agent, event, version.unknown_line())
        if kind == "brief":
            return brief(store, run, agent, event, payload, note, made_for=version.label())
        if not version.known:  # fail open: an input or answer format shiftgit does not know never blocks
            return None
        return end_of_turn(store, run, agent, payload)
    from shiftgit.agents import saves, sessions

    done = sessions.note(repo, run, agent, payload.session, transcript=payload.transcript)
    turn = max(done, 1) if kind == "end" else done + 1  # the turn in progress; at the end, the last one
    note = saves.save(store, run, agent=agent, event=event, session=payload.session, turn=turn,
                      transcript=payload.transcript, ending=kind == "end",
                      log=lambda m: log(repo, agent, event, m))
    return Answer(note=note) if note else None


def _discover(store: Any, kind: str) -> tuple[str, str | None] | Answer | None:
    """The run by the one discovery rule (ledger/discovery.py), and how it was picked when that needs saying;
    when none fits, a session start is told which runs there are. SHIFT_RUN or this worktree's active run
    (the rule's first steps) are read without importing discovery (it builds dataclasses: the hook's budget)."""
    run = store.active_run()
    if run is not None:
        return run, None
    from shiftgit.errors import UsageError
    from shiftgit.ledger.discovery import discover

    try:
        pick = discover(store)
    except UsageError as exc:
        if kind != "brief":
            return None
        if store.run_ids():
            return Answer(context=f"shiftgit: {exc}")
        from shiftgit.agents.published import elsewhere_context

        context = elsewhere_context(store)  # no run here, but another clone published one
        return Answer(context=context) if context else None
    return pick.run, pick.note


def brief(store: Any, run: str, agent: str, event: str, payload: Payload, picked: str | None = None,
          made_for: str | None = None) -> Answer:
    """The briefing first (it quotes the ledger as committed), then the session joins the ledger."""
    from shiftgit.agents import sessions
    from shiftgit.agents.brief import session_context
    from shiftgit.agents.hold import shiftgit_command
    from shiftgit.errors import ShiftError

    _settle(store, run, agent, event)
    context = session_context(store, run, agent=agent, log=lambda m: log(store.repo, agent, event, m),
                              shiftgit=shiftgit_command(store.repo), picked=picked, made_for=made_for)
    try:
        sessions.note(store.repo, run, agent, payload.session, transcript=payload.transcript)
        sessions.start(store, run, agent, payload.session)
    except ShiftError as exc:  # a ledger that cannot be read: the briefing says so, the log keeps the detail
        log(store.repo, agent, event, f"session not recorded: {exc}")
    return Answer(context=context)


def end_of_turn(store: Any, run: str, agent: str, payload: Payload) -> Answer | None:
    from shiftgit.agents import hold, sessions

    _settle(store, run, agent, "end-of-turn")
    verdict = hold.gate(store, run, key=f"{agent}:{payload.session}", stop_hook_active=payload.stop_hook_active)
    if verdict.ends_turn:
        sessions.note(store.repo, run, agent, payload.session, transcript=payload.transcript, turn=True)
    if verdict.block is not None:
        return Answer(block=verdict.block)
    return Answer(note=verdict.note) if verdict.note else None


def _settle(store: Any, run: str, agent: str, event: str) -> None:
    """A save a pre-compact or session-end hook handed to the background is waited for (or, its process dead,
    done now): what this hook reads is then what the agent would read had that hook done it itself."""
    from shiftgit.agents import private

    if not private.path(store.repo, f"pending-{run}.json").exists():  # the usual case: nothing to import
        return
    from shiftgit.agents import background

    def say(message: str) -> None:
        log(store.repo, agent, event, message)

    try:
        background.finish_pending(store, run, say, GATE_WAIT)
    except background.Busy as exc:
        say(f"went on without the save in progress: {exc}")


def render(agent: str, answer: Answer | None) -> str:
    """The agent's own output format; empty (Gemini: `{}`) when there is nothing to say. Aider's test
    command prints the reason as text (and fails: `main`)."""
    if agent == "aider":
        return f"{answer.block}\n" if answer is not None and answer.block is not None else ""
    body: dict[str, Any] = {}
    if answer is not None and answer.context is not None and agent == "copilot":  # Copilot CLI 1.0: top level
        body = {"additionalContext": answer.context}
    elif answer is not None and answer.context is not None:
        body = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": answer.context}}
    elif answer is not None and answer.block is not None:
        body = {"decision": "deny" if agent == "gemini" else "block", "reason": answer.block}
    elif answer is not None and answer.note is not None:
        body = {"systemMessage": answer.note}
    if not body and agent != "gemini":
        return ""
    return rawjson.dumps(body) + "\n"


# -- plumbing -------------------------------------------------------------------------------

def _read(stdin: IO[bytes] | None) -> bytes:
    stream = stdin if stdin is not None else sys.stdin.buffer
    try:
        if stream.isatty():
            return b""
        return stream.read()
    except (OSError, ValueError):
        return b""


def _write(out: IO[str], text: str) -> None:
    try:
        out.write(text)
        out.flush()
    except (OSError, ValueError):  # the agent closed the pipe: nothing left to tell it
        pass


def _workdir(payload: Payload, cwd: str | None) -> str:
    if payload.cwd and os.path.isdir(payload.cwd):
        return payload.cwd
    return cwd or os.getcwd()


def _open_repo(where: str) -> Repo | None:
    from pathlib import Path

    from shiftgit.errors import ShiftError
    from shiftgit.git import rawgit

    try:
        ready = rawgit.started(rawgit.OPEN, dict(os.environ), where)  # `__main__` started it
        if ready is not None:
            code, out, _ = rawgit.communicate(ready, None)
            return Repo.opened(Path(where), code, out.decode("utf-8", "surrogateescape"))
        return Repo.open(where)
    except (ShiftError, OSError):
        return None
