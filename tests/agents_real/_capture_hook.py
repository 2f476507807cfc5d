"""A hook that records what an agent CLI sends it: `python _capture_hook.py EVENT`.

Wired into each CLI's *user* config (outside the repository, so it never dirties the tree) next to
shiftgit's project hooks. Appends one JSON line per call to $SHIFTGIT_CAPTURE_LOG: the event name it
was registered for, the JSON payload from stdin, the working directory, the hook's PATH, and the
latest checkpoint of every run's ledger at that moment, once the saves a shiftgit hook handed to the background
are done (meaningful for events no shiftgit hook runs beside, such as PostCompact: CLIs may run the hooks of one
event in parallel).
Prints nothing, so it never changes what the agent does.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def settle(workdir: str, seconds: float = 30.0) -> None:
    """Wait for the saves a shiftgit hook handed to the background (each holds `.git/shift/agents/context-<run>.lock`
    until done), as shiftgit's next hook does: the checkpoints read are then those the agent's next hook sees."""
    import fcntl

    deadline = time.monotonic() + seconds
    for lock in sorted(Path(workdir, ".git", "shift", "agents").glob("context-*.lock")):
        with open(lock, "a+") as handle:
            while time.monotonic() < deadline:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    time.sleep(0.02)


def latest_checkpoints(workdir: str) -> dict[str, Any]:
    settle(workdir)
    found: dict[str, Any] = {}
    for ledger in sorted(Path(workdir).glob(".shift/runs/*/ledger.json")):
        try:
            found[ledger.parent.name] = json.loads(ledger.read_text()).get("checkpoint")
        except (OSError, ValueError):
            found[ledger.parent.name] = None
    return found


def main() -> int:
    raw = sys.stdin.read()
    try:
        payload = json.loads(raw) if raw.strip() else None
    except ValueError:
        payload = {"_raw": raw}
    cwd = os.getcwd()
    if isinstance(payload, dict) and isinstance(payload.get("cwd"), str):
        cwd = payload["cwd"]
    record = {"event": sys.argv[1] if len(sys.argv) > 1 else "?", "at": time.time(), "cwd": os.getcwd(),
              "path": os.environ.get("PATH", ""), "payload": payload, "checkpoints": latest_checkpoints(cwd)}
    target = os.environ.get("SHIFTGIT_CAPTURE_LOG")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
