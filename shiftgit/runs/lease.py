"""One owner at a time: a run's lease, its owner epochs, and the fence every write passes first.

The ledger's `lease` names its holder (host, clone, work tree, the calling process, the agent session),
its owner `epoch`, and when it expires (renewed by every write; 30 minutes unless `.shift/config.json`
says `"lease": {"minutes": N}`); `lease.epochs` records every epoch taken, by whom and from whom. A write
(`checkpoint`, `check`, `effect run`, `service start`) first passes `guard`: with a publish remote it
fetches the run's ledger ref (bounded: `"lease": {"fetch_seconds": 3}`; on failure it goes on with a
warning), then refuses (exit 4, one line naming the new holder) when a ledger ref here carries a newer
epoch than this work tree's ledger (or its own epoch held by another place), or when the lease is held
elsewhere and has not expired. A first write, or one after the lease expired, takes a new epoch, and only
by a compare-and-swap of `refs/shift/ledgers/<run>` (pushed without force to the publish remote first):
two writers racing for one epoch cannot both win. `resume --take-over` takes one at once and publishes
it. The commit gate and the publisher refuse the same way (git/gate.py, git/sync.py).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from shiftgit.errors import Fenced, GitError, ShiftError, UsageError
from shiftgit.git import fence, ledgerref
from shiftgit.ledger.store import Store
from shiftgit.procs import clone_id, hostname, module_argv
from shiftgit.repo import clean_env

DEFAULT_MINUTES = 30.0
FETCH_SECONDS = 3.0
MOST_MINUTES = 60 * 24 * 366 * 100.0  # a lease of a hundred years is as good as none
MOST_SECONDS = 3600.0
PUBLISH_SECONDS = 30
TAKE_TRIES = 5
SESSION_VARS = ("SHIFT_SESSION", "CLAUDE_SESSION_ID", "CODEX_SESSION_ID", "GEMINI_SESSION_ID")


class Ticket(NamedTuple):
    """What a write may go on with: its owner epoch, and warnings for the caller to print."""

    epoch: int
    warnings: tuple[str, ...] = ()
    ledger: str | None = None  # the ledger-ref commit this write goes onto (a checkpoint records it: the chain)
    tip: fence.Claim | None = None  # that commit as the fence read it (renewing): ledgerref.commit_ledger's guess
    commits: tuple[str, ...] = ()  # every ledger-ref commit of the run the fence read (renewing): runs/foreign.absorb


def here(store: Store, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """This writer: host, clone, work tree, the calling process (the agent or shell), its agent session."""
    env = os.environ if environ is None else environ
    session = next((env[name] for name in SESSION_VARS if env.get(name)), None)
    return {"host": hostname(), "clone": clone_id(store.repo), "worktree": str(store.repo.root),
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

    def number(key: str, default: float, most: float) -> float:
        value = config.get(key)
        if not (isinstance(value, int | float) and not isinstance(value, bool) and value > 0):
            return default
        if not value <= most:  # NaN too: a lease that ends past the year 9999 overflows every write's date
            raise UsageError(f"{store.rel(store.inside('config.json'))}: \"lease\": {{\"{key}\": {value!r}}} is "
                             f"too large; give at most {most:.0f} (or drop it for the default {default:g}), then run "
                             "the command again")
        return float(value)

    return number("minutes", DEFAULT_MINUTES, MOST_MINUTES), number("fetch_seconds", FETCH_SECONDS, MOST_SECONDS)


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


def held_line(run: str, lease: Mapping[str, Any]) -> str:
    return (f"run {run} is held by {fence.shown(lease.get('holder'))} (owner epoch {epoch_of(lease)}) until "
            f"{lease.get('expires_at')}; `shiftgit resume {run} --take-over` makes this place its owner (the old "
            "holder's writes are refused from then on)")


# -- the fence every write passes --------------------------------------------------------------------

def where_of(who: Mapping[str, Any]) -> str:
    return f"{who.get('host')}:{who.get('worktree')}"


def guard(store: Store, run: str, *, fetch: bool = True, environ: Mapping[str, str] | None = None) -> Ticket:
    """Refuse a fenced write (Fenced, exit 4); else arrange for this write to renew (or take) the lease.

    Renewing costs one `for-each-ref`; taking an epoch is a compare-and-swap of the run's ledger ref (and,
    with a publish remote, a push without force first): of two writers racing for one epoch, one wins and
    the other is refused here, before it wrote anything."""
    minutes, seconds = settings(store)
    remote = _remote(store) if fetch else None
    warnings = _fetch(store, run, remote, seconds) if remote else []
    for line in warnings:  # fail open, but never silently
        sys.stderr.write(line + "\n")
    who = here(store, environ)
    for attempt in range(TAKE_TRIES):
        seen = fence.tips(store.repo.git if attempt else _hash_ahead(store, run), run)
        lease = store.read(run).lease  # the model the write reads next (Store.read keeps it): one parse, not two
        mine = epoch_of(lease)
        epoch = _decide(run, lease, mine, seen, who)
        if epoch > 0:  # this place holds it: renew
            taken = "continued on this branch" if epoch > mine else None
            store.on_write = renewal(run, epoch, who, minutes, taken=taken)
            tip = next((c for c in seen if c.ref == fence.LEDGERS + run), None)
            return Ticket(epoch, tuple(warnings), tip.commit if tip else None, tip, tuple(c.commit for c in seen))
        epoch = max([mine] + [c.epoch for c in seen]) + 1
        why = "lease expired" if isinstance(lease, Mapping) else "first write"
        reachable = remote if not warnings else None  # the fetch failed (and said so): no push to wait for
        claim = _take(store, run, epoch, who, why, seen, reachable, minutes, seconds)
        if claim is not None:
            return Ticket(epoch, tuple(warnings), claim)
    raise Fenced(f"run {run}: could not take owner epoch {epoch}, other writers kept taking it first; "
                 f"`shiftgit resume {run}` shows who holds it now")


def _hash_ahead(store: Store, run: str) -> Callable[..., str]:
    """`store.repo.git`, which first has OpenSSL load in a thread when the ledger is big (it is hashed when read next:
    is it one shiftgit validated?): the thread imports while this one waits for `for-each-ref`, not before."""
    from shiftgit.digests import load_ahead

    def git(*args: str, **kwargs: Any) -> str:
        try:
            load_ahead(os.stat(store.ledger_path(run)).st_size)
        except OSError:  # no ledger file here (archived): nothing big to hash
            pass
        return store.repo.git(*args, **kwargs)

    return git


def fenced(store: Store, run: str) -> str:
    """`guard` for a write the CLI fences before calling a lower layer (approvals): returns `run`."""
    guard(store, run)
    return run


def _decide(run: str, lease: Any, mine: int, seen: list[fence.Claim], who: Mapping[str, Any]) -> int:
    """The epoch this place holds and may renew; 0 to take a new one; Fenced when another holder has it."""
    where = where_of(who)
    live = [c for c in seen if c.epoch > 0]
    claim = max(live, key=lambda c: (c.epoch, c.ref.startswith(fence.LEDGERS))) if live else None
    expired = claim is None or is_expired({"expires_at": claim.until})
    if claim is not None and fence.place(claim.holder) == where and claim.epoch >= mine and not expired:
        return claim.epoch  # this work tree holds the newest epoch (perhaps taken on another branch's ledger)
    if isinstance(lease, Mapping) and held_elsewhere(lease, who):
        raise Fenced(held_line(run, lease))
    if claim is not None and mine > 0 and fence.rival(claim, mine, where) and (claim.epoch > mine or not expired):
        raise Fenced(fence.fenced_line(run, mine, claim))
    if claim is not None and not expired and fence.place(claim.holder) != where:  # never held here
        raise Fenced(f"run {run} is held by {fence.shown(claim.holder)} (owner epoch {claim.epoch}, seen on "
                     f"{claim.ref}) until {claim.until}; `shiftgit resume {run} --take-over` makes this place its "
                     "owner (the old holder's writes are refused from then on)")
    if isinstance(lease, Mapping) and same_place(lease.get("holder"), who) and not is_expired(lease) \
            and (claim is None or claim.epoch <= mine):
        return mine  # a ledger ref without epochs (written before leases): the lease alone says who holds it
    return 0


def _take(store: Store, run: str, epoch: int, who: Mapping[str, Any], why: str, seen: list[fence.Claim],
          remote: str | None, minutes: float, seconds: float) -> str | None:
    """Take `epoch`: its claim becomes the ledger ref's tip compare-and-swap (pushed first, without force, to
    the publish remote); returns that commit. None when another writer moved the ref first (look again)."""
    from shiftgit.ledger.canonical import canonical_bytes

    repo = store.repo
    renew = renewal(run, epoch, who, minutes, taken=why)
    local = next((c.commit for c in seen if c.ref == fence.LEDGERS + run), None)
    theirs = next((c.commit for c in seen if remote and c.ref == f"{fence.TRACKING}{remote}/shift/ledgers/{run}"),
                  None)
    parents = list(dict.fromkeys(p for p in (local, theirs) if p))
    commit = ledgerref.claim_commit(repo, run, canonical_bytes(renew(store.document(run))), clone_id(repo), parents)
    if remote is not None:
        why_not = fence.push(repo.root, remote, run, commit, clean_env(), max(seconds, FETCH_SECONDS))
        if why_not == fence.REJECTED:  # another clone took it first: fetch its claim and look again
            _fetch(store, run, remote, seconds)
            return None
        if why_not is not None:
            sys.stderr.write(f"shiftgit: warning: could not publish owner epoch {epoch} of run {run} to {remote} "
                             f"({why_not}); this write went ahead on what this clone knows\n")
    try:
        repo.update_ref(ledgerref.ref_name(run), commit, local or repo.null_id, f"shiftgit owner epoch {run} {epoch}")
    except GitError:  # another work tree of this clone took it first
        return None
    store.on_write = renew
    return commit


def _remote(store: Store) -> str | None:
    from shiftgit.git.publish import own_remote

    try:
        return own_remote(store.repo, store.read_config())
    except ShiftError:
        return None


def _fetch(store: Store, run: str, remote: str, seconds: float) -> list[str]:
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
        stamp = now.isoformat().replace("+00:00", "Z")  # as runs/contract.now_iso writes it
        epochs = [e for e in old.get("epochs") or [] if isinstance(e, Mapping)]
        if taken and all(e.get("epoch") != epoch for e in epochs):
            epochs.append({"epoch": epoch, "holder": dict(who), "at": stamp, "from": old.get("holder"),
                           "why": taken})
        until = (now + dt.timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")
        lease = {**old, "epoch": epoch, "holder": dict(who), "renewed_at": stamp, "expires_at": until,
                 "minutes": minutes, "epochs": epochs}
        return {**document, "lease": lease}

    return renew


# -- resume --take-over --------------------------------------------------------------------------------

def take_over(store: Store, run: str, *, why: str = "take-over",
              environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Start a new owner epoch here (compare-and-swap on the ledger ref, as `guard` takes one) and publish it
    (bounded). Of two concurrent take-overs each gets an epoch of its own; the later one owns the run."""
    document = store.document(run)
    old = document.get("lease") if isinstance(document.get("lease"), Mapping) else None
    who = here(store, environ)
    minutes, seconds = settings(store)
    remote = _remote(store)
    for _ in range(TAKE_TRIES):
        seen = fence.tips(store.repo.git, run)
        epoch = max([epoch_of(old)] + [c.epoch for c in seen]) + 1
        if _take(store, run, epoch, who, why, seen, remote, minutes, seconds) is not None:
            break
    else:
        raise Fenced(f"run {run}: could not take owner epoch {epoch}, other writers kept taking it first; "
                     f"try `shiftgit resume {run} --take-over` again")
    store.patch(run, lambda d: d)  # the working ledger records the epoch the ref now carries
    store.on_write = None
    return {"epoch": epoch, "holder": who, "from": old.get("holder") if old else None, "why": why,
            "published": publish_now(store)}


def publish_now(store: Store) -> str | None:
    """Push the takeover to the publish remote and wait for it (bounded); None when no remote is set."""
    from shiftgit.git import publish

    try:
        remote = publish.own_remote(store.repo, store.read_config())
    except ShiftError:
        return None
    if remote is None:
        return None
    argv = [*module_argv("shiftgit.git.publish"), str(store.repo.root), remote]
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
