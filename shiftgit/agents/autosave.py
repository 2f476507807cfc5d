"""Pre-compact and session end: what they keep before the agent's context or its session goes.

1. A checkpoint, when the tree, HEAD or the evidence changed since the last one. shiftgit records it by
   itself (`auto`: the event; `unrecorded`: what changed since the last checkpoint a command recorded;
   `session`), so the end-of-turn hold still asks the agent to describe the step (agents/hold.py).
2. The compacted conversation, from the agent's transcript (`transcript_path` in the hook input), on
   `refs/shift/context/<run>` (agents/context.py), unless neither the transcript (`file_stamp`) nor the run's
   summary changed since the last save (`stamp`).
agents/saves.py decides what a hook does in place and what it hands to agents/background.py.
"""

from __future__ import annotations

from pathlib import Path

from shiftgit.ledger.store import Store

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any

    from shiftgit.recovery.freshness import Freshness


UNRECORDED_KEPT = 200


def due(store: Store, run: str) -> Freshness | None:
    """The freshness that asks for a checkpoint (an active run whose tree, HEAD or evidence moved), else None."""
    from shiftgit.recovery.freshness import assess_document

    document = store.document(run)
    if document.get("status") != "active":
        return None
    state = assess_document(store, run, document)
    return state if state.stale or state.pending_checks else None


def checkpoint(store: Store, run: str, event: str, session: str, turn: int) -> str | None:
    """The automatic checkpoint, when one is due."""
    state = due(store, run)
    if state is None:
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


def file_stamp(path: Path) -> str:
    """One state of a transcript file (agents only append to theirs)."""
    info = path.stat()
    return f"{path.resolve()}:{info.st_size}:{info.st_mtime_ns}:"


def stamp(store: Store, run: str, file_stamp: str, document: dict[str, Any] | None = None) -> str:
    """What the saved text depends on: the transcript's state (`file_stamp`), the latest checkpoint and the
    constraints (the run's summary); `document`: the run's ledger as the caller just read it."""
    document = store.document(run) if document is None else document
    point = document.get("checkpoint") or {}
    rules = [c.get("status") for c in document.get("constraints") or [] if isinstance(c, dict)]
    return f"{file_stamp}{point.get('id')}:{rules}"
