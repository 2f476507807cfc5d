"""Is a run's ledger fresh? Uncheckpointed edits and HEAD moves, read from git (never from the caller).

Used by the agent hooks (stop, pre-compact) and the MCP server. Reads only: no command runs,
no file outside the git dir is written. `assess` takes the model; `assess_document` takes the ledger's
JSON, so the agent hooks never build the model (its import is their largest cost).

A checkpoint an agent hook recorded by itself (`auto`: before a compaction, at session end) keeps the
tree fresh but is not the agent's own record: `unrecorded` lists what changed since the last checkpoint
a command recorded, and the end-of-turn hold treats those files as not yet recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shiftgit import textsafe
from shiftgit.git import headview
from shiftgit.git.headref import head as read_head
from shiftgit.git.record import Checkpoint, diff_files, head_state
from shiftgit.git.worktreecache import tree as worktree_tree

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any, NamedTuple, Protocol

    from shiftgit.ledger.model import Ledger
    from shiftgit.ledger.store import Store
else:
    from shiftgit.tuples import NamedTuple
    Protocol = object  # the classes below are for mypy only

FILES_SHOWN = 20


class Freshness(NamedTuple):
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
    auto: str | None = None  # the hook event that recorded the latest checkpoint by itself
    unrecorded: tuple[str, ...] = ()  # paths only automatic checkpoints recorded since the agent's last one

    @property
    def stale(self) -> bool:
        return bool(self.files) or self.head_moved

    @property
    def needs_record(self) -> bool:
        """Stale, or fresh only thanks to an automatic checkpoint: the agent has not recorded its step."""
        return self.stale or bool(self.unrecorded)

    @property
    def signature(self) -> str:
        """Identifies one staleness: the same edits on the same HEAD give the same signature."""
        return f"{self.run}:{self.checkpoint_id}:{self.head}:{self.tree}"

    def describe(self, shiftgit: str = "shiftgit") -> str:
        """One paragraph of facts: what differs, and the command that records it (`shiftgit`: how to
        invoke shiftgit where the reader runs commands, see agents/shell.py)."""
        where = f"checkpoint #{self.seq}" if self.seq else "the start of the run (no checkpoint yet)"
        parts = []
        if self.files:
            parts.append(f"{len(self.files)} file(s) changed since {where} and not recorded: {_list(self.files)}")
        if self.head_moved:
            parts.append(f"HEAD ({_short(self.head)}) moved away from {where}, which was made on "
                         f"{_short(self.base)}: commits were made without a handoff")
        if not parts and self.unrecorded:
            parts.append(f"{len(self.unrecorded)} file(s) are recorded only by {where}, which shiftgit made by "
                         f"itself at {textsafe.quote(self.auto, 40)} (no step described): {_list(self.unrecorded)}")
        facts = "; ".join(parts)
        return (f"shiftgit: the ledger of run {self.run!r} is stale: {facts}. "
                f"Record the current state with `{shiftgit} checkpoint --step TEXT --next TEXT` "
                f"(then commit it with the change), or run `{shiftgit} status` to see the run.")


class Point(Checkpoint, Protocol):
    """What freshness reads of the latest checkpoint: the model's, or a `PointView` of its JSON."""

    @property
    def seq(self) -> int: ...
    @property
    def auto(self) -> str | None: ...
    @property
    def unrecorded(self) -> Sequence[str]: ...


class RecordedFile(NamedTuple):
    path: str
    id: str | None
    status: str


class PointView(NamedTuple):
    """A checkpoint read from the ledger's JSON, with the attributes the git helpers read."""

    id: str
    seq: int
    base: str | None
    tree: str | None
    files: tuple[RecordedFile, ...]
    auto: str | None
    unrecorded: tuple[str, ...]


def point_view(point: Any) -> PointView | None:
    """The latest checkpoint of a validated ledger's JSON (None when there is none)."""
    if not isinstance(point, Mapping):
        return None
    files = tuple(RecordedFile(str(f["path"]), f.get("id"), str(f.get("status", "M")))
                  for f in point.get("files") or () if isinstance(f, Mapping))
    return PointView(str(point["id"]), int(point["seq"]), point.get("base"), point.get("tree"), files,
                     point.get("auto"), tuple(point.get("unrecorded") or ()))


def assess(store: Store, run: str, ledger: Ledger | None = None) -> Freshness:
    """Compare the working tree and HEAD with the latest checkpoint of `run`."""
    ledger = ledger or store.read(run)
    return _assess(store, run, ledger.checkpoint, len(ledger.pending_checks))


def assess_document(store: Store, run: str, document: Mapping[str, Any]) -> Freshness:
    """`assess` from the ledger's JSON (validated), without the model."""
    pending: Sequence[Any] = document.get("pending_checks") or ()
    return _assess(store, run, point_view(document.get("checkpoint")), len(pending))


def _assess(store: Store, run: str, point: Point | None, pending: int) -> Freshness:
    repo = store.repo
    head = read_head(repo)  # from the git dir's files where it can: the agent hooks ask at every turn
    tree = worktree_tree(repo, point.tree if point else None)  # one git process when nothing changed since the last
    # hook (git/worktreecache.py); when it writes a tree, the diff against the checkpoint's runs beside it
    if point is None:
        files, moved = tuple(entry.path for entry in diff_files(repo, head, tree)), False
    else:  # once HEAD moved, against HEAD plus the run's recorded changes (git/headview.py); None: cannot tell
        state = head_state(repo, point, store.rel(store.ledger_path(run)), head)
        moved = not state.matches
        files = () if point.tree == tree and not moved else \
            tuple(entry.path for entry in headview.edits(repo, point, tree, state) or ())
    return Freshness(run=run, checkpoint_id=point.id if point else None, seq=point.seq if point else None,
                     head=head, base=point.base if point else None, tree=tree, files=files,
                     head_moved=moved, pending_checks=pending, auto=point.auto if point else None,
                     unrecorded=tuple(point.unrecorded) if point and point.auto else ())


def _list(paths: tuple[str, ...]) -> str:
    """File names quoted: they are the work tree's (a cloned repository's), never shiftgit's words."""
    shown = ", ".join(textsafe.quote(p, 200) for p in paths[:FILES_SHOWN])
    more = len(paths) - FILES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _short(commit: str | None) -> str:
    return commit[:12] if commit else "no commit"
