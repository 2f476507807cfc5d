"""The git side of retention (`shiftgit gc`): snapshot chains trimmed, old refs deleted, all compare-and-swap.

A run's snapshots are one chain on `refs/shift/snapshots/<run>`: each snapshot commit's parents are the
HEAD it was taken on and the previous snapshot. Keeping only some snapshots means a new chain of the kept
ones: each kept commit is written again with the same tree, message, author and dates, its HEAD parent
kept and its previous-snapshot parent the previous *kept* one. The checkpoints name their `tree`, which
stays, so `rollback` restores a kept checkpoint as before. The ref moves compare-and-swap: when a
checkpoint moved it meanwhile, the whole plan is made again from the new tip, so nothing a concurrent
checkpoint adds is lost. Commits only a dropped snapshot reached that are not snapshots themselves (a
checkpoint's HEAD on a branch since deleted) become extra parents of the oldest kept snapshot: retention
drops snapshots, never anybody's commits. Only what no ref, reflog or index reaches any more, and only
loose objects older than the start of the gc, are deleted from the object store.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from shiftgit.errors import GitError
from shiftgit.repo import Repo, clean_env, identity_env

SNAPSHOT_PREFIX = "shiftgit snapshot: "
SYNC_LINK = "shiftgit sync: keep both histories"
REWRITTEN = "Shift-Rewritten-From: "
RETRIES = 20


class Snap(NamedTuple):
    commit: str
    parents: tuple[str, ...]
    tree: str
    time: int  # committer time, seconds since the epoch
    author_date: str
    committer_date: str
    message: str

    @property
    def is_snapshot(self) -> bool:
        return self.message.startswith(SNAPSHOT_PREFIX)

    @property
    def is_link(self) -> bool:
        return self.message.startswith(SYNC_LINK)

    @property
    def seq(self) -> int | None:
        last = self.message.split("\n", 1)[0].rsplit(" ", 1)[-1]
        return int(last) if last.isdigit() else None


class Trim(NamedTuple):
    """One ref's plan: the snapshots kept and dropped (newest first), and the tip to move from."""

    ref: str
    tip: str
    keep: tuple[Snap, ...]
    drop: tuple[Snap, ...]
    orphans: tuple[str, ...]  # non-snapshot commits only dropped snapshots reached: kept as extra parents
    links: frozenset[str] = frozenset()  # `sync` merge commits of two machines' chains: the new chain is linear


_FORMAT = "%H%x1f%P%x1f%T%x1f%ct%x1f%aI%x1f%cI%x1f%B%x1e"


def chain(repo: Repo, ref: str) -> tuple[str | None, list[Snap]]:
    """The ref's tip and the commits only it reaches (not a branch or tag), newest first (topological)."""
    tip = repo.ref(ref)
    if tip is None:
        return None, []
    out = repo.git("log", "--topo-order", f"--format={_FORMAT}", tip, "--not", "--branches", "--tags")
    snaps = []
    for record in out.split("\x1e"):
        fields = record.strip("\n").split("\x1f")
        if len(fields) == 7:
            commit, parents, tree, stamp, adate, cdate, message = fields
            snaps.append(Snap(commit, tuple(parents.split()), tree, int(stamp), adate, cdate, message))
    return tip, snaps


def plan(repo: Repo, ref: str, keep: Callable[[list[Snap]], set[str]],
         found: tuple[str | None, list[Snap]] | None = None) -> Trim | None:
    """What trimming `ref` with the policy `keep` (snapshots -> commits to keep) would do; None: nothing.
    `found`: the ref's `chain`, when the caller just read it."""
    tip, snaps = found if found is not None else chain(repo, ref)
    if tip is None:
        return None
    snapshots = [s for s in snaps if s.is_snapshot]
    kept = keep(snapshots)
    drop = tuple(s for s in snapshots if s.commit not in kept)
    links = [s for s in snaps if s.is_link]
    if not drop and not links:
        return None
    keep_list = tuple(s for s in snapshots if s.commit in kept)
    reached = {p for s in keep_list for p in s.parents}
    dropped = [s for s in snaps if s.commit not in kept and (s.is_snapshot or s.is_link)]
    orphans = tuple(dict.fromkeys(p for s in dropped for p in s.parents
                                  if p in {x.commit for x in snaps if not x.is_snapshot and not x.is_link}
                                  and p not in reached))
    return Trim(ref, tip, keep_list, drop, orphans, frozenset(s.commit for s in links))


def rewrite(repo: Repo, trim: Trim) -> str | None:
    """The new chain of the kept snapshots (oldest first), its tip; None when nothing is kept."""
    snapshot_ids = {s.commit for s in (*trim.keep, *trim.drop)}
    previous: str | None = None
    for n, snap in enumerate(reversed(trim.keep)):
        parents = [p for p in snap.parents if p not in snapshot_ids and p not in trim.links]
        if n == 0:
            parents += list(trim.orphans)
        if previous:
            parents.append(previous)
        parents = list(dict.fromkeys(parents))
        if previous is None and tuple(parents) == snap.parents:
            previous = snap.commit  # the oldest kept snapshot is unchanged: keep its id
            continue
        message = snap.message.rstrip("\n")
        if REWRITTEN not in message:
            message += f"\n\n{REWRITTEN}{snap.commit}"
        env = clean_env(GIT_AUTHOR_DATE=snap.author_date, GIT_COMMITTER_DATE=snap.committer_date)
        args = ["commit-tree", snap.tree, "-F", "-"]
        for parent in parents:
            args += ["-p", parent]
        previous = repo.git(*args, input=message + "\n", env={**identity_env(), **env}).strip()
    return previous


def move(repo: Repo, ref: str, new: str | None, old: str) -> bool:
    """Compare-and-swap the ref from `old` to `new` (None: delete it); False when it moved meanwhile."""
    args = ["update-ref", "-m", "shiftgit gc", ref, new, old] if new else ["update-ref", "-m", "shiftgit gc",
                                                                          "-d", ref, old]
    try:
        repo.git(*args)
    except GitError:
        return False
    return True


def retry_pause(attempt: int) -> None:
    time.sleep(int.from_bytes(os.urandom(2), "big") % (20 * (attempt + 1)) / 1000)


def refs_under(repo: Repo, prefix: str) -> dict[str, tuple[str, int]]:
    """ref -> (commit, committer time) for every ref under `prefix`."""
    out = repo.git("for-each-ref", "--format=%(refname)%09%(objectname)%09%(committerdate:unix)", prefix)
    found = {}
    for line in out.splitlines():
        name, oid, stamp = (line.split("\t") + ["", ""])[:3]
        found[name] = (oid, int(stamp) if stamp.isdigit() else 0)
    return found


def named_in_notes(repo: Repo, ids: Iterable[str]) -> set[str]:
    """Which of these commit ids a handoff note names (so a person reading `git log` can still find them)."""
    wanted = sorted(set(ids))
    notes = repo.git("for-each-ref", "--format=%(refname)", "refs/notes/").split()
    if not wanted or not notes:
        return set()
    patterns = [arg for oid in wanted for arg in ("-e", oid)]
    found: set[str] = set()
    for ref in notes:
        out = repo.git("grep", "-F", "-o", "-h", *patterns, ref, check=False)
        found |= {line.rsplit(":", 1)[-1].strip() for line in out.splitlines()} & set(wanted)
    return found


def store_bytes(repo: Repo) -> int:
    """The object store's size on disk (loose and packed), as `git count-objects -v` reports it."""
    sizes = dict(line.split(": ", 1) for line in repo.git("count-objects", "-v").splitlines() if ": " in line)
    return (int(sizes.get("size", 0)) + int(sizes.get("size-pack", 0)) + int(sizes.get("size-garbage", 0))) * 1024


def prune_unreachable(repo: Repo, old_tips: Sequence[str], started: float) -> int:
    """Delete the loose objects only the dropped tips reached: none that any ref, reflog or index (of any worktree)
    reaches, none written or freshened since the gc started (a concurrent checkpoint reusing one freshens it).
    Packed objects wait for git's own `git gc`; other unreachable objects are git's business, never ours."""
    if not old_tips:
        return 0
    reach = ("--objects", "--no-object-names")
    # a superset: `--not` excludes only the trees of the boundary commits, not of every commit it reaches
    candidates = set(repo.git("rev-list", *reach, *old_tips, "--not", "--all", "--reflog", check=False).split())
    if not candidates:
        return 0
    live = set(repo.git("rev-list", *reach, "--all", "--reflog", "--indexed-objects", check=False).split())
    objects = Path(repo.git("rev-parse", "--git-path", "objects").strip())
    objects = objects if objects.is_absolute() else repo.root / objects
    removed = 0
    for oid in sorted(candidates - live):
        loose = objects / oid[:2] / oid[2:]
        try:
            if loose.stat().st_mtime < started:
                loose.unlink()
                removed += 1
        except OSError:
            continue
    return removed
