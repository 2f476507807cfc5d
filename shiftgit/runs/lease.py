"""One owner at a time: a run's lease, its owner epochs, and the fence every write passes first.

The ledger's `lease` names its holder (host, clone, work tree, the calling process, the agent session),
its owner `epoch`, and when it expires (renewed by every write; 30 minutes unless `.shift/config.json`
says `"lease": {"minutes": N}`); `lease.epochs` records every epoch taken, by whom and from whom. A write
(`checkpoint`, `check`, `effect run`, `service start`) first passes `guard`: with a publish remote it
fetches the run's ledger ref (bounded: `"lease": {"fetch_seconds": 3}`; on failure it goes on with a
warning), then refuses (exit 4, one line naming the new holder) when a ledger ref here carries a newer
epoch than this work tree's ledger, or when the lease is held elsewhere and has not expired. A first
write, or one after the lease expired, takes a new epoch; `resume --take-over` takes one at once and
publishes it. The commit gate and the publisher refuse the same way (git/gate.py, git/sync.py).
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from shiftgit.errors import Fenced, ShiftError
from shiftgit.git import fence, ledgerref
from shiftgit.ledger.store import Store
from shiftgit.repo import clean_env
from shiftgit.runs.contract import now_iso

DEFAULT_MINUTES = 30.0
FETCH_SECONDS = 3.0
PUBLISH_SECONDS = 30
SESSION_VARS = ("SHIFT_SESSION", "CLAUDE_SESSION_ID", "CODEX_SESSION_ID", "GEMINI_SESSION_ID")


class Ticket(NamedTuple):
    """What a write may go on with: its owner epoch, and warnings for the caller to print."""

    epoch: int
    warnings: tuple[str, ...] = ()


def here(store: Store, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """This writer: host, clone, work tree, the calling process (the agent or shell), its agent session."""
    from shiftgit.ledger.trustdb import clone_id

    env = os.environ if environ is None else environ
    session = next((env[name] for name in SESSION_VARS if env.get(name)), None)
    return {"host": socket.gethostname(), "clone": clone_id(store.repo), "worktree": str(store.repo.root),
            "pid": os.getppid(), "session": session}


def same_place(a: Any, b: Any) -> bool:
    keys = ("host", "clone", "worktree")
    return isinstance(a, Mapping) and isinstance(b, Mapping) and all(a.get(k) == b.get(k) for k in keys)


def settings(store: Store) -> tuple[float, float]:
    """(lease minutes, fetch seconds) from `.shift/config.json` `"lease"`."""
    try:
        config = store.read_config().get("lease")
    except ShiftError:
        config = None
    config = config if isinstance(config, Mapping) else {}

    def number(key: str, default: float) -> float:
        value = config.get(key)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else default

    return number("minutes", DEFAULT_MINUTES), number("fetch_seconds", FETCH_SECONDS)


def _time(text: Any) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def is_expired(lease: Mapping[str, Any], now: dt.datetime | None = None) -> bool:
    until = _time(lease.get("expires_at"))
    return until is None or until <= (now or dt.datetime.now(dt.timezone.utc))


def epoch_of(lease: Any) -> int:
    return ledgerref.epoch_of({"lease": lease})


def held_elsewhere(lease: Any, who: Mapping[str, Any]) -> bool:
    """The lease is held, not expired, by another host, clone or work tree."""
    return isinstance(lease, Mapping) and not same_place(lease.get("holder"), who) and not is_expired(lease)


def is_mine(claim: fence.Claim, who: Mapping[str, Any]) -> bool:
    """A claim this clone's own ledger ref carries, recorded by this work tree."""
    where = f"{who.get('host')}:{who.get('worktree')}"
    return claim.ref.startswith(fence.LEDGERS) and (claim.holder == where or claim.holder.startswith(where + " ("))


def held_line(run: str, lease: Mapping[str, Any]) -> str:
    return (f"run {run} is held by {fence.holder_text(lease.get('holder'))} (owner epoch {epoch_of(lease)}) until "
            f"{lease.get('expires_at')}; `shiftgit resume {run} --take-over` makes this place its owner (the old "
            "holder's writes are refused from then on)")


# -- the fence every write passes --------------------------------------------------------------------

def guard(store: Store, run: str, *, fetch: bool = True, environ: Mapping[str, str] | None = None) -> Ticket:
    """Refuse a fenced write (Fenced, exit 4); else arrange for this write to renew (or take) the lease."""
    document = store.document(run)
    lease = document.get("lease")
    mine = epoch_of(lease)
    minutes, seconds = settings(store)
    warnings = _fetch(store, run, seconds) if fetch else []
    for line in warnings:  # fail open, but never silently
        sys.stderr.write(line + "\n")
    who = here(store, environ)
    claim = fence.newer_than(store.repo.git, run, mine)
    if claim is not None and is_mine(claim, who):  # this work tree took it, on another branch's ledger
        store.on_write = renewal(run, claim.epoch, who, minutes, taken="continued on this branch")
        return Ticket(claim.epoch, tuple(warnings))
    if claim is not None and mine > 0:
        raise Fenced(fence.fenced_line(run, mine, claim))
    if claim is not None and not is_expired({"expires_at": claim.until}):  # never held here: someone else holds it
        raise Fenced(f"run {run} is held by {claim.holder} (owner epoch {claim.epoch}, seen on {claim.ref}) until "
                     f"{claim.until}; `shiftgit resume {run} --take-over` makes this place its owner (the old "
                     "holder's writes are refused from then on)")
    if isinstance(lease, Mapping) and held_elsewhere(lease, who):
        raise Fenced(held_line(run, lease))
    if isinstance(lease, Mapping) and same_place(lease.get("holder"), who):
        store.on_write = renewal(run, mine, who, minutes)
        return Ticket(mine, tuple(warnings))
    epoch = _next_epoch(store, run, mine)
    why = "lease expired" if isinstance(lease, Mapping) else "first write"
    store.on_write = renewal(run, epoch, who, minutes, taken=why)
    return Ticket(epoch, tuple(warnings))


def _next_epoch(store: Store, run: str, mine: int) -> int:
    seen = fence.newest(store.repo.git, run)
    return max(mine, seen.epoch if seen else 0) + 1


def _fetch(store: Store, run: str, seconds: float) -> list[str]:
    from shiftgit.git.publish import configured_remote

    try:
        remote = configured_remote(store.read_config())
    except ShiftError:
        return []
    if remote is None:
        return []
    why = fence.fetch(store.repo.root, remote, run, clean_env(), seconds)
    if why is None:
        return []
    return [f"shiftgit: warning: could not check {remote} for a takeover of run {run} ({why}); this write "
            "went ahead on what this clone knows"]


def renewal(run: str, epoch: int, who: Mapping[str, Any], minutes: float,
            taken: str | None = None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The change every ledger write of `run` gets: the lease renewed (and, with `taken`, a new epoch recorded)."""
    def renew(document: dict[str, Any]) -> dict[str, Any]:
        if document.get("run") != run:
            return document
        old = document.get("lease") if isinstance(document.get("lease"), Mapping) else {}
        assert isinstance(old, Mapping)
        now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
        epochs = [e for e in old.get("epochs") or [] if isinstance(e, Mapping)]
        if taken and all(e.get("epoch") != epoch for e in epochs):
            epochs.append({"epoch": epoch, "holder": dict(who), "at": now_iso(), "from": old.get("holder"),
                           "why": taken})
        until = (now + dt.timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")
        lease = {**old, "epoch": epoch, "holder": dict(who), "renewed_at": now_iso(), "expires_at": until,
                 "minutes": minutes, "epochs": epochs}
        return {**document, "lease": lease}

    return renew


# -- resume --take-over --------------------------------------------------------------------------------

def take_over(store: Store, run: str, *, why: str = "take-over",
              environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Start a new owner epoch here, commit it to the ledger ref and publish it (bounded). Returns what happened."""
    document = store.document(run)
    old = document.get("lease") if isinstance(document.get("lease"), Mapping) else None
    epoch = _next_epoch(store, run, epoch_of(old))
    who = here(store, environ)
    minutes, _ = settings(store)
    store.on_write = renewal(run, epoch, who, minutes, taken=why)
    store.patch(run, lambda d: d)
    store.on_write = None
    from shiftgit.ledger.trustdb import clone_id

    with store.lock(run):
        ledgerref.commit_ledger(store.repo, run, store.ledger_path(run).read_bytes(), clone_id(store.repo))
    result = {"epoch": epoch, "holder": who, "from": old.get("holder") if old else None, "why": why,
              "published": publish_now(store)}
    return result


def publish_now(store: Store) -> str | None:
    """Push the takeover to the publish remote and wait for it (bounded); None when no remote is set."""
    from shiftgit.git import publish

    try:
        remote = publish.configured_remote(store.read_config())
    except ShiftError:
        return None
    if remote is None:
        return None
    argv = [sys.executable, "-m", "shiftgit.git.publish", str(store.repo.root), remote]
    env = clean_env(SHIFTGIT_PUBLISH_DEADLINE=str(PUBLISH_SECONDS))
    try:
        subprocess.run(argv, cwd=store.repo.root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=PUBLISH_SECONDS + 5, start_new_session=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"publishing to {remote} failed: {exc}"
    return publish.describe(publish.last_result(store.repo))


def status(store: Store, run: str, document: Mapping[str, Any]) -> dict[str, Any] | None:
    """The lease as `resume --json` shows it: epoch, holder, expiry, and whether it is held elsewhere."""
    lease = document.get("lease")
    if not isinstance(lease, Mapping):
        return None
    who = here(store)
    return {"epoch": epoch_of(lease), "holder": lease.get("holder"), "expires_at": lease.get("expires_at"),
            "here": same_place(lease.get("holder"), who), "expired": is_expired(lease),
            "held_elsewhere": held_elsewhere(lease, who)}
