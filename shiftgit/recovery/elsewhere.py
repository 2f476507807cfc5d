"""Runs this work tree holds no ledger of, known from a record another clone published.

Machine A checkpointed and published (`init --publish`), but the commits holding `.shift/runs/<run>/` never
reached the branch machine B cloned: after `shiftgit sync`, B holds A's record under
`refs/shift-remote/<remote>/shift/ledgers/<run>` and no file. `resume` decides from that record and proposes
restoring it (`resume RUN --adopt`), as for a published record newer than the work tree's ledger; `resume` with
no run picks it when it is the only active run known that way. Never "unknown run": that would send the
person taking over to start a second run under the same name.
"""

from __future__ import annotations

from shiftgit import textsafe
from shiftgit.errors import LedgerError, UsageError
from shiftgit.git import headview, record, sources
from shiftgit.git.record import Provenance
from shiftgit.git.sources import Source
from shiftgit.ledger.discovery import HOW_TO_PICK, Pick, discover
from shiftgit.ledger.store import Store
from shiftgit.recovery.takeover import Record, select
from shiftgit.repo import Repo


def pick(store: Store, run: str | None, adopt: bool = False) -> Pick:
    """Discovery's pick (ledger/discovery.py); when it finds nothing here, a run only a published record holds."""
    if adopt and run and not store.exists(run):
        return Pick(run, "named")  # `resume RUN --adopt`: adopt says when there is nothing to adopt
    try:
        return discover(store, run)
    except UsageError:
        if run is not None:
            source = _published(store, run)
            if source is None:
                raise
            branch = sources.branch_holding(store.repo, run, source)
            if branch is not None:  # not lost: on a branch not checked out here
                raise UsageError(on_branch(run, branch)) from None
            return Pick(run, "named")
        active = active_runs(store)
        if len(active) != 1:
            raise
        (only, source), = active.items()
        return Pick(only, "published", f"picked run {only!r}: this work tree holds no ledger of it, and it is the "
                                       f"only active run another clone published ({source.describe()}); {HOW_TO_PICK}")


def active_runs(store: Store) -> dict[str, Source]:
    """The runs with no ledger file here whose newest published record says `active`, on no branch here, not
    archived here (git/sources.lost_runs)."""
    return {run: source for run, source in sources.lost_runs(store).items() if not store.is_archived(run)}


def on_branch(run: str, branch: str) -> str:
    return (f"run {run!r} is not on this branch: its ledger is committed on branch {branch}; `git switch {branch}`, "
            f"then `shiftgit resume {run}`")


def newest_record(store: Store, run: str, where: str, provenance: Provenance,
                  found: list[Source]) -> Record | str:
    """The record resume decides from (takeover.select), also for a run with no ledger file here: then the newest
    published one, not yet adopted. A str: why no record can be used."""
    if store.exists(run) or store.is_archived(run):
        try:
            working = store.read(run)
        except LedgerError as exc:
            return str(exc)
        return select(store, run, working, where, provenance, found)
    source = _published(store, run, found)
    if source is None:
        return f"run {run!r} has no ledger in this work tree and no published record here"
    place = f"{source.ref}:ledger.json"
    try:
        from shiftgit.ledger.schema import parse_ledger

        ledger = parse_ledger(source.data, place)
    except LedgerError as exc:
        return f"{source.describe()} cannot be used: {exc}"
    published_by = Provenance(source.commit, source.author, source.committed_at, uncommitted=False)
    return Record(ledger, place, published_by, source, 0, here=False)


def _published(store: Store, run: str, found: list[Source] | None = None) -> Source | None:
    found = sources.candidates(store, run) if found is None else found
    return sources.pick([source for source in found if source.kind == "published"])



def not_here_hint(repo: Repo) -> str | None:
    """For a work tree with no `.shift/` (a fresh clone of a branch the other machine never pushed to): the active
    runs another clone published, each with the git command that brings the commit it was checkpointed on. None:
    no published run here (`sync` fetches them)."""
    lines = []
    for run, source in sources.published_only(Store(repo)).items():
        point = source.parsed.get("checkpoint")
        base, branch = (point.get("base"), point.get("branch")) if isinstance(point, dict) else (None, None)
        if source.parsed.get("status") != "active" or not isinstance(base, str):
            continue
        held = sources.branch_holding(repo, run, source)
        how = f"`git switch {held}` (its ledger is committed there)" if held else bring(repo, base, branch)
        lines.append(f"run {run!r} (checkpoint #{source.seq}, published by another clone) was made on commit "
                     f"{base[:12]}{_on(branch)}: {how}, then `shiftgit resume {run}`")
        if len(lines) == 3:
            break
    return "; ".join(lines) if lines else None


def _on(branch: object) -> str:
    return f" of branch {textsafe.quote(branch)}" if isinstance(branch, str) else ""


def bring(repo: Repo, base: str, branch: object) -> str:
    """The git command that puts HEAD on BASE, the commit a checkpoint was made on (on BRANCH, as recorded): onto
    that branch (made, or fast-forwarded), a fast-forward of HEAD's when it is that branch, else a detached HEAD."""
    if not record.has_object(repo, base, "commit"):
        return "its commits are not in this clone (fetch the branch it was made on)"
    name = sources.plain_branch(branch)
    if name is not None and name != repo.branch():
        if repo.ref(f"refs/heads/{name}") is None:
            return f"`git switch -c {name} {base[:12]}` checks it out"
        if headview.is_ancestor(repo, f"refs/heads/{name}", base):
            return f"`git switch {name} && git merge --ff-only {base[:12]}` brings it (it builds on {name})"
    elif headview.is_ancestor(repo, "HEAD", base):
        return f"`git merge --ff-only {base[:12]}` brings it (it builds on HEAD)"
    return f"`git switch --detach {base[:12]}` checks it out"
