"""Is a run's ledger fresh? Uncheckpointed edits and HEAD moves, read from git (never from the caller).

Used by the agent hooks (stop, pre-compact) and the MCP server. Reads only: no command runs,
no file outside the git dir is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from shiftgit.ledger import Checkpoint, Ledger
from shiftgit.repo import Repo
from shiftgit.store import Store

FILES_SHOWN = 20


@dataclass(frozen=True)
class Freshness:
    """What separates the working tree and HEAD from the run's latest checkpoint."""

    run: str
    checkpoint_id: str | None
    seq: int | None
    head: str | None
    base: str | None
    tree: str
    files: tuple[str, ...]  # paths outside .shift/ that differ from the checkpoint's tree
    head_moved: bool
    pending_checks: int

    @property
    def stale(self) -> bool:
        return bool(self.files) or self.head_moved

    @property
    def signature(self) -> str:
        """Identifies one staleness: the same edits on the same HEAD give the same signature."""
        return f"{self.run}:{self.checkpoint_id}:{self.head}:{self.tree}"

    def describe(self) -> str:
        """One paragraph of facts: what differs, and the command that records it."""
        where = f"checkpoint #{self.seq}" if self.seq else "the start of the run (no checkpoint yet)"
        parts = []
        if self.files:
            parts.append(f"{len(self.files)} file(s) changed since {where} and not recorded: {_list(self.files)}")
        if self.head_moved:
            parts.append(f"HEAD ({_short(self.head)}) moved away from {where}, which was made on "
                         f"{_short(self.base)}: commits were made without a handoff")
        facts = "; ".join(parts)
        return (f"shiftgit: the ledger of run {self.run!r} is stale: {facts}. "
                f"Record the current state with `shiftgit checkpoint --step TEXT --next TEXT` "
                f"(then commit it with the change), or run `shiftgit status` to see the run.")


def assess(store: Store, run: str, ledger: Ledger | None = None) -> Freshness:
    """Compare the working tree and HEAD with the latest checkpoint of `run`."""
    ledger = ledger or store.read(run)
    repo = store.repo
    point = ledger.checkpoint
    head = repo.head()
    tree = repo.worktree_tree()
    if point is None:
        reference = head
    else:
        reference = point.tree or point.base
    files: tuple[str, ...] = ()
    if point is None or point.tree != tree:
        files = tuple(entry.path for entry in repo.diff_trees(reference, tree))
    moved = point is not None and not record_matches_head(repo, store.rel(store.ledger_path(run)), point, head)
    return Freshness(run=run, checkpoint_id=point.id if point else None, seq=point.seq if point else None,
                     head=head, base=point.base if point else None, tree=tree, files=files,
                     head_moved=moved, pending_checks=len(ledger.pending_checks))


def record_matches_head(repo: Repo, ledger_rel: str, point: Checkpoint, head: str | None) -> bool:
    """HEAD is the checkpoint's base, or a child of it whose committed ledger carries the checkpoint."""
    if head == point.base:
        return True
    if head is None or point.base is None:
        return False
    parents = repo.git("rev-parse", f"{head}^@", check=False).split()
    if point.base not in parents:
        return False
    return committed_checkpoint_id(repo, head, ledger_rel) == point.id


def committed_checkpoint_id(repo: Repo, commit: str, ledger_rel: str) -> str | None:
    data = repo.show(f"{commit}:{ledger_rel}")
    if data is None:
        return None
    try:
        document = json.loads(data)
    except ValueError:
        return None
    point = document.get("checkpoint") if isinstance(document, dict) else None
    value = point.get("id") if isinstance(point, dict) else None
    return value if isinstance(value, str) else None


def _list(paths: tuple[str, ...]) -> str:
    shown = ", ".join(paths[:FILES_SHOWN])
    more = len(paths) - FILES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _short(commit: str | None) -> str:
    return commit[:12] if commit else "no commit"
