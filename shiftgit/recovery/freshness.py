"""Is a run's ledger fresh? Uncheckpointed edits and HEAD moves, read from git (never from the caller).

Used by the agent hooks (stop, pre-compact) and the MCP server. Reads only: no command runs,
no file outside the git dir is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from shiftgit.git.record import edits_since, head_state
from shiftgit.ledger.model import Ledger
from shiftgit.ledger.store import Store

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
        files = tuple(entry.path for entry in repo.diff_trees(head, tree))
    elif point.tree == tree:
        files = ()
    else:  # edits_since rebuilds the checkpoint's tree in a clone that lacks it; None: cannot tell
        files = tuple(entry.path for entry in edits_since(repo, point, tree) or ())
    moved = point is not None and not head_state(repo, point, store.rel(store.ledger_path(run))).matches
    return Freshness(run=run, checkpoint_id=point.id if point else None, seq=point.seq if point else None,
                     head=head, base=point.base if point else None, tree=tree, files=files,
                     head_moved=moved, pending_checks=len(ledger.pending_checks))


def _list(paths: tuple[str, ...]) -> str:
    shown = ", ".join(paths[:FILES_SHOWN])
    more = len(paths) - FILES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _short(commit: str | None) -> str:
    return commit[:12] if commit else "no commit"
