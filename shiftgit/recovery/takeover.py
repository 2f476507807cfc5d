"""Takeover on any machine: resume from the newest record of a run, and adopt a published one.

`resume` decides from the newest record (git/sources.py): the working ledger, or a checkpoint
another machine published (`refs/shift/ledgers/<run>`, fetched by `sync`) that this work tree does not
hold yet. Then the files of that checkpoint are not here: the decision is to restore them first
(`shiftgit resume RUN --adopt`), which writes the published ledger into `.shift/runs/<run>/` and its
snapshot's files into the work tree, keeping what it replaces (files and ledger) under a rescue ref.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shiftgit.errors import GitError, LedgerError, UsageError
from shiftgit.git import headview, ledgerref, publish, record, sources
from shiftgit.git.record import Provenance
from shiftgit.git.sources import Source
from shiftgit.ledger.model import Ledger
from shiftgit.ledger.record import replace
from shiftgit.ledger.schema import parse_ledger
from shiftgit.ledger.store import Store
from shiftgit.repo import clean_env
from shiftgit.runs.contract import activate


@dataclass(frozen=True)
class Record:
    """The record resume decides from."""

    ledger: Ledger
    where: str                  # the ledger's path in the work tree, or the ref it was published on
    provenance: Provenance
    source: Source | None       # None: no readable record besides the working ledger
    working_seq: int            # the checkpoint seq the work tree's ledger holds
    problem: str | None = None  # a newer published record that could not be read
    here: bool = True           # False: this work tree holds no ledger of the run (recovery/elsewhere.py)

    @property
    def elsewhere(self) -> bool:
        """The newest record is a published one this work tree does not hold yet."""
        return self.source is not None and self.source.kind == "published"


def select(store: Store, run: str, working: Ledger, where: str, provenance: Provenance,
           found: list[Source] | None = None) -> Record:
    """The working ledger, or a newer published one (schema-checked before it is used). FOUND: the run's records,
    when the caller has them (`sources.candidates`)."""
    found = sources.candidates(store, run) if found is None else found
    newest = sources.pick(found)
    here = next((s for s in found if s.kind != "published"), None)  # what sources.newest_local says
    seq = working.checkpoint.seq if working.checkpoint else 0
    if newest is None or newest.kind != "published":
        return Record(working, where, provenance, newest, seq)
    if (newest.epoch, newest.seq) <= (ledgerref.epoch_of({"lease": dict(working.lease or {})}), seq):
        # not newer than the ledger in hand: no working file here (an archived run, read from the archive)
        return Record(working, where, provenance, here, seq)
    place = f"{newest.ref}:ledger.json"
    try:
        ledger = parse_ledger(newest.data, place)
    except LedgerError as exc:
        return Record(working, where, provenance, here, seq,
                      problem=f"{newest.describe()} cannot be used: {exc}")
    published_by = Provenance(newest.commit, newest.author, newest.committed_at, uncommitted=False)
    return Record(ledger, place, published_by, newest, seq)


def bring_effects(store: Store, run: str) -> list[str]:
    """Effects another clone published that this ledger lacks (runs/foreign.py): they count in the decision."""
    from shiftgit.errors import ShiftError
    from shiftgit.runs.foreign import absorb

    if not store.exists(run):  # no ledger here to bring them into (a run known only from a published record)
        return []
    try:
        return absorb(store, run)
    except ShiftError:  # a corrupt or newer ledger: resume's report names it
        return []


def target_tree(store: Store, chosen: Record) -> str:
    """The tree a published checkpoint recorded (what the work tree would hold after adopting it)."""
    point = chosen.ledger.checkpoint
    tree = record.checkpoint_tree(store.repo, point) if point is not None else None
    return tree or store.repo.worktree_tree()


def adopt_reason(run: str, chosen: Record) -> str:
    assert chosen.source is not None
    mine = (f"a newer record than this work tree's ledger (checkpoint #{chosen.working_seq}) exists" if chosen.here
            else "this work tree holds no ledger of the run (the commits holding it never reached this branch); "
                 "another clone published one")
    return (f"{mine}: {chosen.source.describe()}; its files are not here: `shiftgit resume {run} --adopt` restores "
            "that ledger and its files (what they replace is kept under refs/shift/rescue/)")


def adjust(verdict: dict[str, Any], run: str, chosen: Record) -> dict[str, Any]:
    """A newer published record not adopted yet: restore it first (rollback), unless a human must look."""
    if not chosen.elsewhere:
        return verdict
    reason = adopt_reason(run, chosen)
    if verdict["decision"] in ("escalate", "finished"):
        return {**verdict, "reasons": [*verdict["reasons"], reason]}
    return {**verdict, "decision": "rollback", "reasons": [reason]}


def record_lines(store: Store, chosen: Record) -> list[str]:
    """Where the record comes from and where it was published last: for the briefing and `status`."""
    lines = []
    if chosen.source is not None:
        lines.append(f"used: {chosen.source.describe()}")
    if chosen.problem:
        lines.append(f"not used: {chosen.problem}")
    last = publish.describe(publish.last_result(store.repo))
    if last:
        lines.append(last)
    return lines


# -- resume --adopt ------------------------------------------------------------------------------------

def adopt(store: Store, run: str) -> dict[str, Any]:
    """Restore a newer published ledger and its snapshot's files; keep what they replace under a rescue ref."""
    old = store.ledger_path(run).read_bytes() if store.exists(run) else None
    if old is not None:
        store.read(run)  # a corrupt ledger is reported, never overwritten
    newest = sources.newest(store, run)
    if newest is None or newest.kind != "published":
        seq = newest.seq if newest else 0
        return {"adopted": False, "detail": f"nothing to adopt: this work tree's ledger (checkpoint #{seq}) is the "
                                            "newest record of the run here (`shiftgit sync` fetches newer ones)"}
    from shiftgit.recovery import rollback  # here: the git side of a restore is no part of `resume --no-run`

    ledger = _keep_newer_lease(parse_ledger(newest.data, f"{newest.ref}:ledger.json"), old)
    _refuse_command_secret(newest)
    point = ledger.checkpoint
    assert point is not None  # newer than the working ledger, so it holds a checkpoint
    plan = rollback.plan_checkpoint(store, run, point)
    repo = store.repo
    kept = _with_ledger(store, plan.current, run, old)
    ref, commit = rollback.rescue(repo, replace(plan, current=kept), why="adopting published")
    if repo.worktree_tree() != plan.current:
        raise UsageError("the working tree changed while adopting; nothing was changed except the rescue ref "
                         f"{ref}; run `shiftgit resume {run} --adopt` again")
    rollback.restore_files(repo, plan)
    with store.lock(run):
        store.write(ledger)
    activate(store, run)
    _continue_refs(store, run, newest, point.snapshot)
    return {"adopted": True, "source": newest.to_dict(), "detail": f"adopted {newest.describe()}",
            "rescue": ref, "rescue_commit": commit, **plan.to_dict()}


def _refuse_command_secret(newest: Source) -> None:
    """Another clone's ledger whose recorded command gives a secret as a word of its own (ledger/commandsecrets.py)
    is not written here: it would land in this work tree, its commits and what this clone publishes."""
    from shiftgit import rawjson
    from shiftgit.ledger.commandsecrets import command_secret

    where = command_secret(rawjson.loads(newest.data))
    if where is not None:
        raise UsageError(f"the published ledger ({newest.describe()}) holds what looks like a secret in a recorded "
                         f"command ({where}); nothing was adopted: have it recorded again with the secret passed "
                         "through an environment variable, then `shiftgit sync` and adopt that")


def _keep_newer_lease(ledger: Ledger, old: bytes | None) -> Ledger:
    """A takeover made here before adopting stays: the adopted ledger keeps the newer owner lease."""
    import json

    mine = json.loads(old).get("lease") if old else None
    if ledgerref.epoch_of({"lease": mine}) > ledgerref.epoch_of({"lease": ledger.lease}):
        return replace(ledger, lease=mine)
    return ledger


def _continue_refs(store: Store, run: str, adopted: Source, snapshot: str | None) -> None:
    """This clone's ledger and snapshot refs continue from what was adopted (when they are absent or behind),
    so the next checkpoint here extends that history instead of starting a second one."""
    repo = store.repo
    for ref, target in ((ledgerref.ref_name(run), adopted.commit), (f"refs/shift/snapshots/{run}", snapshot)):
        current = repo.ref(ref)
        if not target or not record.has_object(repo, target, "commit") or current == target:
            continue
        if current is None or headview.is_ancestor(repo, current, target):
            try:
                repo.update_ref(ref, target, current or repo.null_id, f"shiftgit resume --adopt {run}")
            except GitError:
                pass  # moved meanwhile: the next checkpoint and sync keep both histories


def _with_ledger(store: Store, tree: str, run: str, data: bytes | None) -> str:
    """`tree` plus the ledger file it replaces (worktree trees leave `.shift/` out)."""
    if data is None:
        return tree
    repo = store.repo
    blob = repo.git("hash-object", "-w", "--stdin", input=data).strip()
    tmp = repo.private(f"index.adopt.{os.getpid()}.tmp")
    env = clean_env(GIT_INDEX_FILE=str(tmp))
    try:
        repo.git("read-tree", tree or repo.empty_tree, env=env)
        repo.git("update-index", "--add", "--cacheinfo", f"100644,{blob},{store.rel(store.ledger_path(run))}",
                 env=env)
        return repo.git("write-tree", env=env).strip()
    finally:
        tmp.unlink(missing_ok=True)


def adopt_text(result: Mapping[str, Any]) -> str:
    if not result["adopted"]:
        return str(result["detail"])
    return (f"{result['detail']}: restored {len(result['restore'])}, removed {len(result['remove'])} file(s); "
            f"what they replaced (and the ledger) is kept at {result['rescue']}")
