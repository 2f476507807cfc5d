"""Pre-compact and session end: keep what the agent did before its context or its session goes.

1. A checkpoint, when the tree, HEAD or the evidence changed since the last one. shiftgit records it by
   itself (`auto`: the event; `unrecorded`: what changed since the last checkpoint a command recorded;
   `session`), so the end-of-turn hold still asks the agent to describe the step (agents/hold.py).
2. The compacted conversation, from the agent's transcript (`transcript_path` in the hook input), on
   `refs/shift/context/<run>` (agents/context.py). A transcript that cannot be read is logged, never fatal.
   At session end, a large one is saved by a detached process (agents/background.py): the hook returns at
   once. Pre-compact saves in the hook: the conversation is stored when the agent compacts.
3. At session end, the session's entry in the ledger is closed with its turn count (agents/sessions.py),
   before the conversation is read: a hook killed at its time limit has recorded the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shiftgit.agents.background import SEEN
from shiftgit.errors import ShiftError
from shiftgit.ledger.store import Store
from shiftgit.recovery.freshness import Freshness

if TYPE_CHECKING:
    from shiftgit.agents.transcripts import Transcript

UNRECORDED_KEPT = 200
HOOK_LOCK_WAIT = 5.0  # seconds a hook waits for a background save of the run before it leaves the save to the next
Logger = Callable[[str], None]


def save(store: Store, run: str, *, agent: str, event: str, session: str, turn: int, transcript: str | None,
         ending: bool, log: Logger) -> str | None:
    """Do all three (as the event asks); returns a note for the human, or None when nothing was recorded.
    `turn`: the agent's turn number, recorded with the checkpoint and the conversation. A transcript that
    changed is read in a thread meanwhile (json parsing overlaps the git processes of the first steps)."""
    from shiftgit.agents import sessions

    reading = _Reading.start(store, run, transcript, ending)
    notes = [_checkpoint(store, run, event, session, turn)]
    if ending:  # before the conversation, the slowest part (Codex gives a session-end hook 3 s)
        sessions.end(store, run, agent, session)
    notes.append(_context(store, run, agent, session, turn, reading, log))
    return "; ".join(n for n in notes if n) or None


class _Reading:
    """A transcript being parsed in a thread (or nothing to read, or one for the background save)."""

    def __init__(self, path: Path | None, seen: dict[str, Any]) -> None:
        self.path, self.seen = path, seen
        self.result: Transcript | ShiftError | None = None
        self.thread: threading.Thread | None = None
        self.background = False

    @classmethod
    def start(cls, store: Store, run: str, transcript: str | None, ending: bool = False) -> _Reading:
        from shiftgit.agents import private

        path = Path(transcript) if transcript else None
        reading = cls(path if path is not None and path.is_file() else None,
                      private.read(private.path(store.repo, SEEN)))
        if reading.path is not None and not str(reading.seen.get(run, "")).startswith(_file_stamp(reading.path)):
            from shiftgit.agents.background import BACKGROUND_BYTES

            reading.background = ending and reading.path.stat().st_size >= BACKGROUND_BYTES
            if reading.background:
                return reading
            reading.thread = threading.Thread(target=reading._parse, daemon=True)
            reading.thread.start()
        return reading

    def _parse(self) -> None:
        from shiftgit.agents.transcripts import read

        assert self.path is not None
        try:
            self.result = read(self.path)
        except ShiftError as exc:
            self.result = exc

    def get(self) -> Transcript:
        """The parsed transcript (read now when no thread did); ShiftError when it cannot be read."""
        if self.thread is not None:
            self.thread.join()
        if self.result is None:
            self._parse()
        if isinstance(self.result, ShiftError):
            raise self.result
        assert self.result is not None
        return self.result


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
    step = (f"auto-checkpoint at the agent's {event} hook: {len(state.files)} file(s) changed, "
            f"{state.pending_checks} check(s) run since the last checkpoint")
    spec = checkpoints.CheckpointInput(step=step, note=note, auto=event, unrecorded=unrecorded(state), session=session,
                                       turn=turn)
    point = checkpoints.checkpoint(store, run, spec, checked=False)  # the hook's budget has no room for jsonschema
    return f"shiftgit: recorded checkpoint #{point.seq} of run {run} ({note})"


def unrecorded(state: Freshness) -> tuple[str, ...]:
    """What no checkpoint of the agent's own covers: the latest automatic one's list, plus what changed since."""
    earlier = state.unrecorded if state.auto else ()
    return tuple(sorted({*earlier, *state.files}))[:UNRECORDED_KEPT]


def _context(store: Store, run: str, agent: str, session: str, turn: int, reading: _Reading,
             log: Logger) -> str | None:
    """Save the conversation, unless neither the transcript nor the run's summary changed since the last save;
    a large transcript in a detached process."""
    if reading.path is None:
        return None
    stamp = _stamp(store, run, reading.path)
    if reading.seen.get(run) == stamp:
        return None
    from shiftgit.agents import background

    if reading.background and background.start(store.repo, run, agent=agent, session=session, turn=turn,
                                                 transcript=reading.path, stamp=stamp):
        return f"shiftgit: saving the compacted conversation in the background (refs/shift/context/{run})"
    try:
        saved = background.save_context(store, run, reading.path, agent=agent, session=session, turn=turn,
                                        stamp=stamp, log=log, parsed=reading.get, wait=HOOK_LOCK_WAIT)
    except background.Busy as exc:  # the stamp stays: the next hook saves again
        log(f"conversation not saved: {exc}")
        return None
    return None if saved is None else f"shiftgit: saved the compacted conversation ({saved.describe()})"


def _file_stamp(path: Path) -> str:
    """One state of a transcript file (agents only append to theirs)."""
    info = path.stat()
    return f"{path.resolve()}:{info.st_size}:{info.st_mtime_ns}:"


def _stamp(store: Store, run: str, path: Path) -> str:
    """What the saved text depends on: the transcript's state, the latest checkpoint and the constraints
    (the run's summary)."""
    document = store.document(run)
    point = document.get("checkpoint") or {}
    rules = [c.get("status") for c in document.get("constraints") or [] if isinstance(c, dict)]
    return f"{_file_stamp(path)}{point.get('id')}:{rules}"
