"""Pre-compact and session end: keep what the agent did before its context or its session goes.

1. A checkpoint, when the tree, HEAD or the evidence changed since the last one. shiftgit records it by
   itself (`auto`: the event; `unrecorded`: what changed since the last checkpoint a command recorded;
   `session`), so the end-of-turn hold still asks the agent to describe the step (agents/hold.py).
2. The compacted conversation, from the agent's transcript (`transcript_path` in the hook input), on
   `refs/shift/context/<run>` (agents/context.py). A transcript that cannot be read is logged, never fatal.
3. At session end, the session's entry in the ledger is closed with its turn count (agents/sessions.py),
   before the conversation is read: a hook killed at its time limit has recorded the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from shiftgit.ledger.store import Store
from shiftgit.recovery.freshness import Freshness

UNRECORDED_KEPT = 200
Logger = Callable[[str], None]


def save(store: Store, run: str, *, agent: str, event: str, session: str, turn: int, transcript: str | None,
         ending: bool, log: Logger) -> str | None:
    """Do all three (as the event asks); returns a note for the human, or None when nothing was recorded.
    `turn`: the agent's turn number, recorded with the checkpoint and the conversation."""
    from shiftgit.agents import sessions

    notes = [_checkpoint(store, run, event, session, turn)]
    if ending:  # before the conversation, the slowest part (Codex gives a session-end hook 3 s)
        sessions.end(store, run, agent, session)
    notes.append(_context(store, run, agent, session, turn, transcript, log))
    return "; ".join(n for n in notes if n) or None


def _checkpoint(store: Store, run: str, event: str, session: str, turn: int) -> str | None:
    from shiftgit.recovery.freshness import assess_document

    document = store.document(run)
    if document.get("status") != "active":
        return None
    state = assess_document(store, run, document)
    if not state.stale and not state.pending_checks:
        return None
    from shiftgit.runs import checkpoints

    note = f"auto: {event} (session {session})"
    spec = checkpoints.CheckpointInput(note=note, auto=event, unrecorded=unrecorded(state), session=session,
                                       turn=turn)
    point = checkpoints.checkpoint(store, run, spec, checked=False)  # the hook's budget has no room for jsonschema
    return f"shiftgit: recorded checkpoint #{point.seq} of run {run} ({note})"


def unrecorded(state: Freshness) -> tuple[str, ...]:
    """What no checkpoint of the agent's own covers: the latest automatic one's list, plus what changed since."""
    earlier = state.unrecorded if state.auto else ()
    return tuple(sorted({*earlier, *state.files}))[:UNRECORDED_KEPT]


def _context(store: Store, run: str, agent: str, session: str, turn: int, transcript: str | None,
             log: Logger) -> str | None:
    """Save the conversation, unless this transcript has not changed since it was last saved for the run."""
    from shiftgit.agents import private

    path = Path(transcript) if transcript else None
    if path is None or not path.is_file():
        return None
    stamp, seen_file = _stamp(store, run, path), private.path(store.repo, "context-saves.json")
    seen = private.read(seen_file)
    if seen.get(run) == stamp:
        return None
    from shiftgit.agents import context
    from shiftgit.errors import ShiftError

    try:
        saved = context.save(store, run, path, session=session, agent=agent, turn=turn)
    except ShiftError as exc:  # an unknown or unreadable transcript: say so in the log, keep going
        log(f"conversation not saved: {exc}")
        return None
    private.write(seen_file, {**{k: v for k, v in seen.items() if k != run}, run: stamp})
    return None if saved is None else f"shiftgit: saved the compacted conversation ({saved.describe()})"


def _stamp(store: Store, run: str, path: Path) -> str:
    """What the saved text depends on: the transcript's state (agents only append to theirs), the latest
    checkpoint and the constraints (the run's summary)."""
    info = path.stat()
    document = store.document(run)
    point = document.get("checkpoint") or {}
    rules = [c.get("status") for c in document.get("constraints") or [] if isinstance(c, dict)]
    return f"{path.resolve()}:{info.st_size}:{info.st_mtime_ns}:{point.get('id')}:{rules}"
