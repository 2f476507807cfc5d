"""Progress on stderr while `verify` and `resume` rerun recorded checks: a line per check with its time.

On a terminal a check that runs long is never silent for more than TICK seconds; with `-v` its own
output streams to stderr live. stdout stays clean for `--json`.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, BinaryIO

TICK = 5.0
ARGV_SHOWN = 100


class CheckProgress:
    """Implements recovery.verify.Progress for the command line."""

    def __init__(self, verbose: bool, tick: float = TICK) -> None:
        self.echo: BinaryIO | None = getattr(sys.stderr, "buffer", None) if verbose else None
        self.tick = tick
        self.heartbeat = sys.stderr.isatty() and not verbose
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._place = ""

    def started(self, check: Any, index: int, total: int) -> None:
        self._place = f"[{index}/{total}]"
        command = " ".join(check.argv)
        if len(command) > ARGV_SHOWN:
            command = command[: ARGV_SHOWN - 1] + "…"
        _say(f"{self._place} running {check.name}: {command}")
        if self.heartbeat:
            self._stop.clear()
            self._thread = threading.Thread(target=self._beat, args=(check.name, time.monotonic()), daemon=True)
            self._thread.start()

    def finished(self, check: Any, observation: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        status = "timed out" if observation.timed_out else f"exit {observation.exit_code}"
        if observation.error:
            status = f"not run: {observation.error}"
        _say(f"{self._place} {check.name}: {status} in {observation.duration_s:.1f}s")

    def _beat(self, name: str, since: float) -> None:
        while not self._stop.wait(self.tick):
            _say(f"{self._place} {name}: still running ({time.monotonic() - since:.0f}s)")


def _say(line: str) -> None:
    from shiftgit.cli.plain import write  # click.echo's bytes, without click (verify runs without it)

    write(f"shiftgit: {line}", err=True)
