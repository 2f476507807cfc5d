"""Publish at every checkpoint: push notes, snapshots and ledger refs to a remote in the background.

With `"publish": "<remote>"` in `.shift/config.json`, `checkpoint` starts a detached process
(`python -m shiftgit.git.publish ROOT REMOTE`: its own session, stdio on /dev/null) and returns at
once. The process takes a lock (one publisher at a time; each pushes whatever the refs hold by then),
runs `sync` (fetch, merge, push without force, again from the fetch on any rejection) and records its
last result, success or error, in `<git-common-dir>/shift/publish.json`, where `status` and the next
briefing show it. It is bounded: after DEADLINE seconds it records a time-out and kills its own
process group (git, ssh). Nothing here ever fails the checkpoint.
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

from shiftgit import rawjson
from shiftgit.errors import ShiftError, UsageError
from shiftgit.ledger.store import Store
from shiftgit.procs import hostname, module_argv
from shiftgit.repo import Repo, clean_env

TYPE_CHECKING = False  # typing costs ~4 ms to import (`status`): annotations only
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any

DEADLINE = 120  # seconds a publisher may take, lock wait included
RESULT = "publish.json"


def configured_remote(config: dict[str, Any]) -> str | None:
    remote = config.get("publish")
    return remote if isinstance(remote, str) and remote else None


def own_remote(repo: Repo, config: dict[str, Any]) -> str | None:
    """The "publish" remote when it is one of this clone's remotes (`git remote`: its own config, never a cloned
    file). `.shift/config.json` is committed: a value naming a path would make git push into that repository and
    run its hooks (a hostile clone ships a bare repository with a pre-receive hook)."""
    remote = configured_remote(config)
    return remote if remote is not None and remote in repo.git("remote", check=False).split() else None


def set_remote(store: Store, remote: str) -> str:
    """Write `"publish": REMOTE` into .shift/config.json (other keys kept). Returns what to tell the user."""
    from shiftgit.ledger.model import canonical_bytes
    from shiftgit.ledger.store import write_atomic

    remotes = store.repo.git("remote", check=False).split()
    if remote not in remotes:
        raise UsageError(f"--publish {remote}: no such remote here (remotes: {', '.join(remotes) or 'none'}); add "
                         f"it first with `git remote add {remote} URL`")
    store.read_config()  # refuses a corrupt or newer config before touching it
    path = store.root / "config.json"
    document = rawjson.loads(path.read_bytes())
    document["publish"] = remote
    write_atomic(path, canonical_bytes(document))
    return (f"each checkpoint is now pushed to {remote} in the background (\"publish\" in "
            f"{store.rel(path)}: commit it)")


def offer(store: Store) -> str | None:
    """The remote `init` offers to publish to (origin first) when nothing is published yet; None: no offer."""
    remotes = store.repo.git("remote", check=False).split()
    if not remotes or configured_remote(store.read_config()) is not None:
        return None
    return "origin" if "origin" in remotes else remotes[0]


def offer_text(remote: str) -> str:
    return (f"checkpoints stay on this machine until committed and pushed; to push each one to {remote} in the "
            f"background, so another machine can take over: `shiftgit init --publish {remote}`")


def start_configured(store: Store) -> None:
    """With `"publish"` configured, start the detached publisher; a broken config is left to the commands
    that report it."""
    try:
        remote = configured_remote(store.read_config())
    except ShiftError:
        return
    if remote is not None:
        start(store.repo, remote)


def start(repo: Repo, remote: str) -> dict[str, Any] | None:
    """Start a detached publisher; never raises. Returns the error result when it could not start."""
    if remote not in repo.git("remote", check=False).split():
        return record(repo, remote, "error", f"no remote {remote!r} here: add it (`git remote add {remote} URL`) "
                      "or change \"publish\" in .shift/config.json")
    import subprocess  # here: `status` and the briefing read this module's result, and start nothing

    argv = [*module_argv("shiftgit.git.publish"), str(repo.root), remote]
    try:
        subprocess.Popen(argv, cwd=repo.root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True, env=clean_env())
    except OSError as exc:
        return record(repo, remote, "error", f"could not start the publisher: {exc}")
    return None


def publish(repo: Repo, remote: str) -> dict[str, Any]:
    """What the detached process does: one publisher at a time, sync, record the result."""
    from shiftgit.git.sync import sync

    with open(_path(repo, "publish.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            report = sync(repo, remote, retries=4)
        except ShiftError as exc:
            return record(repo, remote, "error", str(exc))
        pushed = report.pushed
        detail = f"pushed {', '.join(pushed)}" if pushed else "the remote already had everything"
        if report.fenced:  # taken over elsewhere: this clone's later record of those runs stays here
            detail += "; not pushed: " + "; ".join(report.fenced.values())
        return record(repo, remote, "ok", detail, pushed=pushed, attempts=report.attempts)


def record(repo: Repo, remote: str, result: str, detail: str, **extra: Any) -> dict[str, Any]:
    """Keep the last result where `status` and the briefing read it."""
    import datetime as dt  # here, with socket and json: `status` and the briefing only read the result
    import json

    from shiftgit.ledger.store import write_atomic

    entry = {"remote": remote, "result": result, "detail": detail[:500], "host": hostname(),
             "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), **extra}
    try:
        write_atomic(_path(repo, RESULT), (json.dumps(entry, sort_keys=True) + "\n").encode())
    except OSError:
        pass  # the repository went away meanwhile: nobody is left to read it
    return entry


def last_result(repo: Repo) -> dict[str, Any] | None:
    try:
        entry = rawjson.loads(_path(repo, RESULT).read_bytes())
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) else None


def describe(entry: dict[str, Any] | None) -> str | None:
    """One line: "last publish to origin at T: ok (pushed ...)" or "...: FAILED: why"."""
    if not entry:
        return None
    head = f"last publish to {entry.get('remote')} at {entry.get('at')}"
    if entry.get("result") == "ok":
        return f"{head}: ok ({entry.get('detail')})"
    return f"{head}: FAILED: {entry.get('detail')}; `shiftgit sync {entry.get('remote')}` retries it by hand"


def _path(repo: Repo, name: str) -> Path:
    from shiftgit.git.fetchstate import private

    return private(repo, name)


# -- the detached process ------------------------------------------------------------------------------

def _deadline(repo: Repo, remote: str, seconds: int) -> None:
    import signal

    def expire(signum: int, frame: FrameType | None) -> None:
        record(repo, remote, "error", f"gave up after {seconds} s: the remote did not answer in time")
        if os.getpgrp() == os.getpid():  # started detached, in a session of its own
            os.killpg(os.getpgrp(), signal.SIGKILL)  # git and ssh die with us
        os._exit(1)

    signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m shiftgit.git.publish ROOT REMOTE (started by `shiftgit checkpoint`)\n")
        return 2
    repo = Repo.open(argv[0])
    limit = os.environ.get("SHIFTGIT_PUBLISH_DEADLINE", "")  # seconds; the tests shorten it
    _deadline(repo, argv[1], int(limit) if limit.isdigit() and int(limit) > 0 else DEADLINE)
    entry = publish(repo, argv[1])
    return 0 if entry["result"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
