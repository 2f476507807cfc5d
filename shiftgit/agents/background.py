"""What a pre-compact or session-end hook hands to a detached process: the automatic checkpoint and the conversation.

Judging whether a checkpoint is due costs a hook half a Python start-up, recording one about five (the ledger
model, some twenty git processes), compacting a large transcript one or more; an agent hook's budget is three
(agents/saves.py). So the hook takes the run's save lock (agents/savelock.py), writes the job to
`<git-dir>/shift/agents/pending-<run>.json`, starts `python -m shiftgit.agents.background ROOT RUN FD` (its own
session, stdio on /dev/null, as git/publish.py's publisher) with the lock's descriptor FD, and returns: the lock is
held without a gap from the hook to the end of the job. The job (`run_job`): the checkpoint, when the tree, HEAD or
the evidence differ from the latest one (agents/autosave.py); the conversation, from the transcript as it was when
the hook ran (a JSONL transcript is read up to the size it had then: agents only append to those), unless that
text is saved already (recorded, or saved by the pre-compact hook that handed the job on: `save_first`, whose stamp
the job carries so the hook writes one file less); its stamp; the pending file last.

Nothing is lost when that process dies (killed, the machine off):
- the kernel lets go of the flock; the pending file stays, and the next hook of the run (end of turn, session
  start, pre-compact, session end) or `shiftgit context save` runs the job again in place, under the lock, before
  anything else (`finish_pending`). The end-of-turn hold therefore judges the tree after the job, as when the hook
  recorded the checkpoint itself, and a reader (`context show`) waits for a job in progress;
- every step is idempotent: the checkpoint is only recorded while something still differs; the ref moves by
  compare-and-swap (git/shiftrefs.py); the run's stamp in `context-saves.json` is written after the save, and a
  save whose commit landed but whose stamp did not finds the same text and stores nothing.
Failures go to the hook log.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from shiftgit.agents import private
from shiftgit.agents.savelock import LOCK_WAIT, Busy, lock, wait
from shiftgit.errors import ShiftError
from shiftgit.procs import module_argv
from shiftgit.repo import Repo, clean_env

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import IO, Any, NamedTuple

    from shiftgit.agents.context import Saved
    from shiftgit.ledger.store import Store
else:
    from shiftgit.tuples import NamedTuple


PAUSE_ENV = "SHIFTGIT_TEST_PAUSE"  # test-only: "context-save" holds the job with the lock taken, nothing written
__all__ = ["LOCK_WAIT", "SEEN", "Busy", "Job", "finish_pending", "hand_off", "lock", "main",
           "run_job", "save_first", "wait"]
SEEN = "context-saves.json"  # per run, the stamp of the last saved conversation (agents/private.py)
Logger = Callable[[str], None]


class Job(NamedTuple):
    """One hook's saves: its checkpoint (`checkpoint`: one was due when the hook looked) and its conversation."""

    run: str
    agent: str
    event: str
    session: str
    turn: int
    checkpoint: bool = False
    transcript: str | None = None
    size: int | None = None  # the transcript's size when the hook ran
    file_stamp: str | None = None  # its state then (agents/autosave.py)
    seen: str | None = None  # the stamp of a conversation the hook saved itself (`save_first`): the job records it

    @classmethod
    def load(cls, data: dict[str, Any]) -> Job | None:
        try:
            job = cls(**{k: data[k] for k in cls._fields if k in data})
        except TypeError:
            return None
        ok = all(isinstance(getattr(job, k), str) for k in ("run", "agent", "event", "session"))
        return job if ok and isinstance(job.turn, int) else None


def pending_path(repo: Repo, run: str) -> Path:
    return private.path(repo, f"pending-{run}.json")


def hand_off(store: Store, job: Job, handle: IO[str]) -> bool:
    """Under the run's save lock (`handle`): write the job, start the detached process that holds the lock on and
    runs it. False when it could not start (the job file is gone again: the caller does the work in place)."""
    pending = pending_path(store.repo, job.run)
    private.write(pending, job._asdict())
    handle.seek(0)
    handle.truncate(0)  # the child writes its pid
    handle.flush()
    fd = handle.fileno()
    argv = [*module_argv("shiftgit.agents.background"), str(store.repo.root), job.run, str(fd)]
    try:
        _detach(argv, store.repo.root, fd, clean_env())
    except OSError:
        pending.unlink(missing_ok=True)
        return False
    return True


def _detach(argv: list[str], root: Path, fd: int, env: dict[str, str]) -> None:
    """Start ARGV in `root` in its own session, stdio on /dev/null, with descriptor `fd` and no other of ours: by
    posix_spawn where it can (the hook then never imports subprocess, ~5 ms of its budget), else by subprocess
    (posix_spawn cannot change the directory; no /proc to list the descriptors an agent let us inherit)."""
    inherited = _inherited(fd) if hasattr(os, "posix_spawn") and os.getcwd() == os.path.realpath(root) else None
    if inherited is None:
        import subprocess

        subprocess.Popen(argv, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True, pass_fds=(fd,), env=env)
        return
    actions: list[tuple[object, ...]] = [(os.POSIX_SPAWN_OPEN, n, os.devnull, os.O_RDWR, 0) for n in (0, 1, 2)]
    actions += [(os.POSIX_SPAWN_CLOSE, n) for n in inherited]
    os.set_inheritable(fd, True)
    try:
        os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)
    finally:
        os.set_inheritable(fd, False)


def _inherited(keep: int) -> list[int] | None:
    """Our inheritable descriptors above stderr but `keep` (what close_fds closes), or None when /proc cannot say."""
    try:
        found = [int(name) for name in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        return None
    inherited = []
    for fd in found:
        try:
            if fd > 2 and fd != keep and os.get_inheritable(fd):
                inherited.append(fd)
        except OSError:  # the listing's own descriptor, closed by now
            continue
    return inherited


def finish_pending(store: Store, run: str, log: Logger, seconds: float = LOCK_WAIT) -> list[str]:
    """Wait for the run's job in progress; run in place one whose process died. Busy after `seconds`."""
    if not pending_path(store.repo, run).exists():
        return []
    with lock(store.repo, run, seconds):
        return finish_locked(store, run, log)


def finish_locked(store: Store, run: str, log: Logger) -> list[str]:
    """With the run's save lock held: a job left pending (its process died) is run now."""
    pending = pending_path(store.repo, run)
    data = private.read(pending)
    job = Job.load(data) if data else None
    if job is None or job.run != run:
        pending.unlink(missing_ok=True)
        return []
    log(f"redoing the {job.event} save that a background process left unfinished")
    try:
        return run_job(store, job, log)
    except Exception as exc:  # failed twice: given up (the work stays in the tree; the hold still asks for it)
        pending.unlink(missing_ok=True)
        log(f"gave up the {job.event} save left unfinished: {exc!r}")
        return []


def run_job(store: Store, job: Job, log: Logger, pause: Callable[[], None] | None = None,
            document: dict[str, Any] | None = None) -> list[str]:
    """The job, with the run's save lock held: checkpoint, conversation and its stamp, then the pending file goes.
    Returns notes for the human. `document`: the run's ledger as the caller just read it (a job without a
    checkpoint saves the conversation from it; else it is read again after the checkpoint)."""
    from shiftgit.agents import autosave

    if pause is not None:
        pause()
    notes = [autosave.checkpoint(store, job.run, job.event, job.session, job.turn) if job.checkpoint else None]
    if job.transcript and job.file_stamp:
        saved, stamp = _save_locked(store, job, log, document=None if job.checkpoint else document)
        if stamp is not None:
            _record(store, job.run, stamp)
        notes.append(_said(saved))
    pending_path(store.repo, job.run).unlink(missing_ok=True)
    return [n for n in notes if n]


def save_first(store: Store, job: Job, log: Logger, document: dict[str, Any]) -> tuple[list[str], Job]:
    """The job's conversation, saved now by a hook that hands the rest of the job (its checkpoint) to the background:
    the notes, and the job carrying the stamp of what is stored (`seen`), which the job records (one private file
    less written while the agent waits; read under the run's save lock only, which the job holds on)."""
    saved, stamp = _save_locked(store, job, log, document=document)
    return [n for n in [_said(saved)] if n], job._replace(seen=stamp)


def _said(saved: Saved | None) -> str | None:
    return None if saved is None else f"shiftgit: saved the compacted conversation ({saved.describe()})"


def _save_locked(store: Store, job: Job, log: Logger, document: dict[str, Any] | None = None) -> tuple[
        Saved | None, str | None]:
    """The job's conversation: what it stored (None: nothing new), and the stamp to record (None: recorded already,
    or not saved). Skipped when a save that ran meanwhile recorded this stamp. An unreadable transcript is logged.
    The stamp and the saved text come from one read of the run's ledger (`document`, or read here)."""
    from shiftgit.agents import autosave, context

    document = store.document(job.run) if document is None else document
    stamp = autosave.stamp(store, job.run, str(job.file_stamp), document)
    if private.read(private.path(store.repo, SEEN)).get(job.run) == stamp:
        return None, None
    if stamp == job.seen:  # the hook that handed this job on saved this very conversation (`save_first`)
        return None, stamp
    try:
        saved = context.save(store, job.run, Path(str(job.transcript)), session=job.session, agent=job.agent,
                             turn=job.turn, size=job.size, document=document)
    except ShiftError as exc:  # an unknown or unreadable transcript: say so in the log, keep going
        log(f"conversation not saved: {exc}")
        return None, None
    return saved, stamp


def _record(store: Store, run: str, stamp: str) -> None:
    """The run's saved conversation is the one of this stamp (SEEN)."""
    seen = private.read(private.path(store.repo, SEEN))
    private.write(private.path(store.repo, SEEN), {**{k: v for k, v in seen.items() if k != run}, run: stamp})


def main(argv: list[str]) -> int:
    """The detached process: the run's pending job, under the lock the hook handed over; logged to the hook log."""
    from shiftgit.agents.hooklog import log
    from shiftgit.ledger.store import Store

    root, run, fd = argv
    repo = Repo.open(root)
    with os.fdopen(int(fd), "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # the hook's: held already (the same open file)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        data = private.read(pending_path(repo, run))
        job = Job.load(data) if data else None
        if job is None:
            return 0

        def say(message: str) -> None:
            log(repo, job.agent, f"{job.event} (background)", message)

        try:
            run_job(Store(repo), job, say, pause=_pause)
        except Exception as exc:  # the job stays pending: the next hook runs it again
            say(f"not saved: {exc!r}")
            return 1
    return 0


def _pause() -> None:
    """Test-only (PAUSE_ENV): hold here, lock taken and nothing written, for a crash test to kill."""
    if "context-save" in os.environ.get(PAUSE_ENV, "").split(","):
        time.sleep(float(os.environ.get(PAUSE_ENV + "_SECONDS", "60")))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
