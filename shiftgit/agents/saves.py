"""What a pre-compact or session-end hook saves, in place or in the background; and `shiftgit context save`.

At session end, the session's entry in the ledger is closed first (agents/sessions.py): a hook killed at its time
limit (Codex gives a session-end hook 3 s) has recorded that. Then, under the run's save lock, a job an earlier
hook handed to a process that died is done (agents/background.py), and this hook's job is handed to a detached
process: the checkpoint when the tree, HEAD or the evidence changed (agents/autosave.py: judging that costs a hook
half a Python start-up, recording it about five), and the conversation when the transcript changed. The hook so
returns within its budget of three start-ups. At pre-compact, a changed transcript is saved in the hook first,
whatever its size, so the conversation is stored when the agent compacts (the job saves it again only if its
checkpoint changed the run's summary). The agent's next hook waits for the job (agents/hooks.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from shiftgit.agents import autosave, background, private
from shiftgit.ledger.store import Store

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any

    from shiftgit.agents.context import Saved


HOOK_LOCK_WAIT = 5.0  # seconds a hook waits for a background save of the run before it leaves the save to the next
Logger = Callable[[str], None]


def save(store: Store, run: str, *, agent: str, event: str, session: str, turn: int, transcript: str | None,
         ending: bool, log: Logger) -> str | None:
    """The hook's saves; returns a note for the human, or None when nothing was recorded. `turn`: the agent's
    turn number, recorded with the checkpoint and the conversation."""
    from shiftgit.agents import sessions

    if ending:
        sessions.end(store, run, agent, session)
    path = Path(transcript) if transcript else None
    path = path if path is not None and path.is_file() else None
    try:
        with background.lock(store.repo, run, HOOK_LOCK_WAIT) as handle:
            notes = background.finish_locked(store, run, log)  # a job whose process died
            document = store.document(run)  # one read for the job and the conversation this hook saves
            job = _job(store, run, document, agent=agent, event=event, session=session, turn=turn, path=path)
            if job is None:
                return "; ".join(notes) or None
            told = None
            if job.transcript and not ending and job.checkpoint:  # its stamp recorded by the job handed on
                said, job = background.save_first(store, job, log, document)
                notes += said
            elif job.transcript and not ending:
                notes += background.run_job(store, job, log, document=document)
            elif job.transcript:
                told = f"shiftgit: saving the compacted conversation of run {run} in the background"
            if not job.checkpoint and told is None:
                return "; ".join(notes) or None
            if background.hand_off(store, job, handle):
                return "; ".join([*notes, *([told] if told else [])]) or None
            return "; ".join([*notes, *background.run_job(store, job, log)]) or None
    except background.Busy as exc:  # the save in progress keeps the conversation: the next hook sees what it left
        log(f"conversation not saved: {exc}")
        return autosave.checkpoint(store, run, event, session, turn)


def _job(store: Store, run: str, document: dict[str, Any], *, agent: str, event: str, session: str, turn: int,
         path: Path | None) -> background.Job | None:
    """This hook's job: the checkpoint while the run is active (the job judges whether one is due), the conversation
    when the transcript or the run's summary (`document`: the run's ledger) changed since the last save; None when
    there is neither."""
    active = document.get("status") == "active"
    stamp = autosave.file_stamp(path) if path is not None else None
    if stamp is not None:
        seen = private.read(private.path(store.repo, background.SEEN))
        if seen.get(run) == autosave.stamp(store, run, stamp, document):
            stamp = None
    if not active and stamp is None:
        return None
    return background.Job(run=run, agent=agent, event=event, session=session, turn=turn, checkpoint=active,
                          transcript=str(path) if path is not None and stamp else None,
                          size=path.stat().st_size if path is not None and stamp else None, file_stamp=stamp)


def context_save(store: Store, run: str, path: Path) -> Saved | None:
    """`shiftgit context save`: a save an agent hook left unfinished first, then this one (agents/context.py)."""
    from shiftgit.agents import context
    from shiftgit.agents.hooklog import log

    background.finish_pending(store, run, lambda message: log(store.repo, "context", "save", message))
    return context.save(store, run, path)
