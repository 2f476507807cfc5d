"""Whether a published record of a run is newer than this work tree's ledger, for the session start's briefing,
without a git process when the git dir's files settle it.

git/sources.newer_published asks `for-each-ref` and `cat-file` for every published copy of the run (this clone's
`refs/shift/ledgers/<run>`, each remote's fetched copy): two git processes and the modules that read them, at every
session start. A ledger commit never changes, so the (owner epoch, checkpoint seq) its ledger holds is kept by commit
id (git/ledgerref.py `known`: written when shiftgit commits a checkpoint there, and from every answer of the full
look). With the refs read from the files (git/headref.py `read_refs`), a session start whose published copies are
all known compares them with the work tree's ledger as `sources.pick` does (a published record wins only with a
higher epoch, or a higher seq at the same epoch) and asks git nothing. Anything else (a ref only git can read, a
commit not seen yet, a published record that wins) takes the full look.
"""

from __future__ import annotations

from shiftgit.git import headref, ledgerref
from shiftgit.ledger.store import Store

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def newer_is_none(store: Store, run: str, document: Mapping[str, Any]) -> bool:
    """True when no published record of `run` can be newer than DOCUMENT (this work tree's ledger, as read)."""
    refs = headref.read_refs(str(store.repo.common_dir), (ledgerref.LEDGERS, ledgerref.TRACKING))
    if isinstance(refs, str):  # headref.ASK_GIT
        return False
    commits = [commit for ref, commit in refs.items() if ledgerref.run_of(ref) == run]
    if not commits:
        return True
    seen = ledgerref.known(store.repo)
    here = (ledgerref.epoch_of(dict(document)), ledgerref.seq_of(dict(document)))
    return all(commit in seen and seen[commit] <= here for commit in commits)



def owner_line(store: Store, run: str, document: Mapping[str, Any], shiftgit: str = "shiftgit") -> str | None:
    """Who holds the run's lease, when that is another place (host, clone or work tree): the agent must know that
    its writes will be refused until it takes the run over. None when this place holds it, or nobody does."""
    lease = document.get("lease")
    holder = lease.get("holder") if isinstance(lease, dict) else None
    if not isinstance(lease, dict) or not isinstance(holder, dict) or held_here(store, holder):
        return None
    from shiftgit import textsafe
    from shiftgit.git.fence import holder_text

    until = lease.get("expires_at")
    who = f"{textsafe.quote(holder_text(holder))} (owner epoch {ledgerref.epoch_of(dict(document))})"
    if _lapsed(until):
        return f"Owner: the run was last held by {who}; that lease has lapsed: the first write here takes the run over."
    return (f"Owner: the run is held by {who} until {textsafe.quote(until)}: writes from here are refused until "
            f"a person decides that place is gone: `{shiftgit} resume {run} --take-over`.")


def held_elsewhere(store: Store, document: Mapping[str, Any]) -> bool:
    """Another place holds the run's lease and it has not lapsed (runs/lease.held_elsewhere, without datetime)."""
    lease = document.get("lease")
    if not isinstance(lease, dict) or not isinstance(lease.get("holder"), dict):
        return False
    return not held_here(store, lease["holder"]) and not _lapsed(lease.get("expires_at"))


def _lapsed(until: object) -> bool:
    import time

    return not isinstance(until, str) or until <= time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def held_here(store: Store, holder: Mapping[str, Any]) -> bool:
    from shiftgit.procs import clone_id, hostname

    return (holder.get("host") == hostname() and holder.get("worktree") == str(store.repo.root)
            and holder.get("clone") == clone_id(store.repo))


def unsynced_hint(store: Store, shiftgit: str = "shiftgit") -> str | None:
    """A fresh clone that never fetched shiftgit's refs from its remotes (`git clone` does not) cannot know whether
    another machine published a newer record: say so, from the git dir's files alone (git/fetchstate.sync_hint asks
    git). None when it did, has no remote, or the files do not settle it."""
    import os

    common = str(store.repo.common_dir)
    refs = headref.read_refs(common, (ledgerref.TRACKING, "refs/notes/"))
    try:
        synced = any(name.startswith("synced-") for name in os.listdir(os.path.join(common, "shift")))
        with open(os.path.join(common, "config"), encoding="utf-8", errors="replace") as handle:
            remotes = [line.split('"')[1] for line in handle if line.strip().startswith('[remote "')
                       and line.count('"') >= 2]
    except OSError:
        return None
    if isinstance(refs, str) or refs or synced or not remotes:
        return None
    from shiftgit import textsafe

    return (f"Not fetched yet: this clone never fetched the checkpoints other machines published to "
            f"{textsafe.quote(remotes[0])}, so a newer record of this run may exist there: run `{shiftgit} sync`, "
            f"then `{shiftgit} resume`, before building on what follows.")


def newer_line(store: Store, run: str, document: Mapping[str, Any] | None = None) -> str | None:
    """For `show` and `verify`, which read this work tree's ledger: one line when another record of the run is newer
    (a published checkpoint this work tree does not hold), naming it and how to adopt it. The git dir's files settle
    the usual case (`newer_is_none`); else git is asked (git/sources.newer_published)."""
    from shiftgit.errors import ShiftError

    try:
        document = store.document(run) if document is None else document
        if newer_is_none(store, run, document):
            return None
        from shiftgit.git.sources import newer_published

        newer = newer_published(store, run)
    except (ShiftError, OSError):
        return None  # the command itself reports a ledger it cannot read
    if newer is None:
        return None
    return (f"this is this work tree's ledger (checkpoint #{ledgerref.seq_of(dict(document))}), not the newest record "
            f"of the run: {newer.describe()}; `shiftgit resume {run} --adopt` restores it here")


def elsewhere_context(store: Store, shiftgit: str = "shiftgit") -> str | None:
    """A session starts where no run has a ledger: the active runs another clone published that `sync` fetched (their
    commits never reached this branch), each with the command that decides from its record. The git dir's files
    settle that none was fetched (the usual case) without a git process."""
    refs = headref.read_refs(str(store.repo.common_dir), (ledgerref.TRACKING, ledgerref.LEDGERS))
    if not refs:
        return None
    from shiftgit.recovery.elsewhere import active_runs

    found = active_runs(store)
    if not found:
        return None
    lines = [f"- run {run!r}: {source.describe()}; decide with `{shiftgit} resume {run}` (`--adopt` restores its "
             "ledger and files here)" for run, source in sorted(found.items())[:5]]
    return "\n".join(["shiftgit: no run has a ledger in this work tree, but another clone published active runs "
                      "(their commits are not on this branch). Before building anything, take one over:", *lines])
