"""The conversation save at session end, handed to a detached process for a large transcript.

Reading and compacting a transcript of BACKGROUND_BYTES or more costs an agent more than a Python start-up
(agents/autosave.py), and Codex gives a session-end hook 3 s; so that hook records its checkpoint, closes the
session, starts
`python -m shiftgit.agents.background ROOT RUN AGENT SESSION TURN TRANSCRIPT STAMP` (its own session,
stdio on /dev/null, as git/publish.py's publisher) and returns. A smaller transcript is saved in the hook, and
so is every pre-compact one (the conversation is stored when the hook returns, before the agent compacts).

Nothing is lost when that process dies (killed, the machine off):
- one save per run at a time: each holds `<git-dir>/shift/agents/context-<run>.lock` (flock: the kernel
  lets go of it when the process dies); the file names the holder's pid;
- the ref moves by compare-and-swap (git/shiftrefs.py: update-ref with the old value, again on a race);
- the run's stamp in `context-saves.json` is written last, under the lock. A save that died leaves the old
  stamp, so the next session end or pre-compact saves again (`shiftgit context save` does too); one whose
  commit landed but whose stamp did not finds the same text and stores nothing.
`wait` lets a reader (`context show`) see a save in progress through. Failures go to the hook log.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from shiftgit.agents.savelock import LOCK_WAIT, Busy, lock, wait
from shiftgit.errors import ShiftError
from shiftgit.repo import Repo, clean_env

if TYPE_CHECKING:
    from shiftgit.agents.context import Saved
    from shiftgit.agents.transcripts import Transcript
    from shiftgit.ledger.store import Store

BACKGROUND_BYTES = 256 * 1024
PAUSE_ENV = "SHIFTGIT_TEST_PAUSE"
__all__ = ["BACKGROUND_BYTES", "LOCK_WAIT", "SEEN", "Busy", "lock", "main", "save_context", "start", "wait"]
SEEN = "context-saves.json"  # per run, the stamp of the last saved conversation (agents/private.py)
Logger = Callable[[str], None]  # test-only: "context-save" holds the process with the lock taken


def start(repo: Repo, run: str, *, agent: str, session: str, turn: int, transcript: Path, stamp: str) -> bool:
    """Start the detached save; False when it could not start (the caller saves in place)."""
    argv = [sys.executable, "-m", "shiftgit.agents.background", str(repo.root), run, agent, session, str(turn),
            str(transcript), stamp]
    try:
        subprocess.Popen(argv, cwd=repo.root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True, env=clean_env())
    except OSError:
        return False
    return True


def save_context(store: Store, run: str, path: Path, *, agent: str, session: str, turn: int, stamp: str,
                 log: Logger, parsed: Callable[[], Transcript] | None = None,
                 pause: Callable[[], None] | None = None, wait: float | None = None) -> Saved | None:
    """Under the run's save lock: store the conversation, then its stamp (agents/background.py says why in this
    order). Skipped when a save that ran meanwhile stored this stamp already. An unreadable transcript is logged."""
    from shiftgit.agents import context, private

    with lock(store.repo, run, LOCK_WAIT if wait is None else wait):
        if private.read(private.path(store.repo, SEEN)).get(run) == stamp:
            return None
        if pause is not None:
            pause()
        try:
            transcript = parsed() if parsed is not None else None
            saved = context.save(store, run, path, session=session, agent=agent, turn=turn, parsed=transcript)
        except ShiftError as exc:  # an unknown or unreadable transcript: say so in the log, keep going
            log(f"conversation not saved: {exc}")
            return None
        seen = private.read(private.path(store.repo, SEEN))
        private.write(private.path(store.repo, SEEN), {**{k: v for k, v in seen.items() if k != run}, run: stamp})
        return saved


def main(argv: list[str]) -> int:
    """The detached process: the save of agents/autosave.py, logged to the hook log."""
    from shiftgit.agents.hooklog import log
    from shiftgit.ledger.store import Store

    root, run, agent, session, turn, transcript, stamp = argv
    repo = Repo.open(root)
    event = "context-save"

    def say(message: str) -> None:
        log(repo, agent, event, message)

    try:
        save_context(Store(repo), run, Path(transcript), agent=agent, session=session, turn=int(turn),
                              stamp=stamp, log=say, pause=_pause)
    except (ShiftError, Busy, OSError) as exc:
        say(f"conversation not saved: {exc}")
        return 1
    return 0


def _pause() -> None:
    """Test-only (PAUSE_ENV): hold here, lock taken and nothing written, for a crash test to kill."""
    if "context-save" in os.environ.get(PAUSE_ENV, "").split(","):
        time.sleep(float(os.environ.get(PAUSE_ENV + "_SECONDS", "60")))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
