"""`rollback`: put the files outside `.shift/` back to the last checkpoint's snapshot, losing nothing.

Before a byte changes, the current working tree (tracked and untracked, not ignored) is kept as
a commit under `refs/shift/rescue/<run>/<UTC time>`. HEAD, the index and `.shift/` are never
touched, so effects and approvals recorded since the checkpoint stay. Every path is checked to
stay inside the work tree, and every conflict is found before anything is written.

Nothing secret enters a rescue tree (`git.secretscan`): a file holding what looks like a secret
that HEAD does not hold is left out of the rescue and so left as it is, and a file the checkpoint
withheld from its snapshot for the same reason is not restored; both are reported.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shiftgit.errors import ShiftError, UsageError
from shiftgit.git import headview, record, secretscan
from shiftgit.ledger import written
from shiftgit.ledger.model import Checkpoint
from shiftgit.ledger.store import Store
from shiftgit.repo import SHIFT_DIR, Repo
from shiftgit.textsafe import path_text


@dataclass(frozen=True)
class Change:
    path: str
    mode: str        # the mode in the checkpoint ("000000" when the path must go)
    blob: str | None  # the content in the checkpoint; None when the path must go


@dataclass(frozen=True)
class Plan:
    run: str
    seq: int
    target: str      # the checkpoint's tree
    current: str     # the working tree now
    changes: tuple[Change, ...]
    snapshot: str | None = None  # the checkpoint's snapshot commit, when this clone has it
    withheld: tuple[dict[str, str], ...] = ()  # changes rollback leaves undone: {path, rule, why}

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "checkpoint": self.seq,
                "restore": [path_text(c.path) for c in self.changes if c.blob],
                "remove": [path_text(c.path) for c in self.changes if not c.blob],
                "withheld": list(self.withheld)}


def plan(store: Store, run: str) -> Plan:
    """What rollback would do; raises when it cannot do all of it safely."""
    ledger = store.read(run)
    point = ledger.checkpoint
    if point is None:
        raise UsageError(f"run {run!r} has no checkpoint to roll back to; record one with `shiftgit checkpoint`")
    return plan_checkpoint(store, run, point)


def plan_checkpoint(store: Store, run: str, point: Checkpoint, paths: tuple[str, ...] = ()) -> Plan:
    """What restoring `point`'s snapshot would do (rollback; `resume --adopt` for a published checkpoint);
    with `paths`, only the files at or under those paths (the rest of the work tree stays as it is)."""
    repo = store.repo
    moved = _moved_head(store, run, point)
    target = _target_tree(repo, point, run, moved)
    current = repo.worktree_tree()
    held_now = secretscan.withheld(repo, repo.head(), current)
    changes, withheld = _leave_withheld(_only(_diff(repo, current, target), paths), point, held_now)
    removed = {c.path for c in changes if not c.blob}
    for change in changes:
        _check_path(repo.root, change, removed)
    _check_conflicts(repo.root, changes)
    _check_blobs(repo, run, point.seq, changes)
    # once HEAD moved, the snapshot holds none of what the new commits brought: the rescue's parent is HEAD
    snapshot = point.snapshot if moved is None and record.has_object(repo, point.snapshot, "commit") else None
    return Plan(run, point.seq, target, current, changes, snapshot, withheld)


def _only(changes: list[Change], paths: tuple[str, ...]) -> list[Change]:
    if not paths:
        return changes
    wanted = [p.strip("/") for p in paths]
    bad = [p for p in wanted if not p or p.startswith("..") or p.split("/")[0] == SHIFT_DIR]
    if bad:
        raise UsageError(f"rollback -- {bad[0]!r}: give paths inside the work tree, outside {SHIFT_DIR}/")
    return [c for c in changes if any(c.path == p or c.path.startswith(p + "/") for p in wanted)]


CANNOT_RESTORE = "the checkpoint withheld it from its snapshot: it held what looks like a secret ({rule})"
LEFT_AS_IS = "it holds what looks like a secret ({rule}) now, so no rescue ref may keep it: left as it is"


def _leave_withheld(changes: list[Change], point: Checkpoint, held_now: list[secretscan.Withheld]
                    ) -> tuple[tuple[Change, ...], tuple[dict[str, str], ...]]:
    """The changes rollback makes, and those it leaves undone because a secret is involved (reported)."""
    at_checkpoint = {str(w.get("path")): str(w.get("rule")) for w in point.extra.get("withheld") or []
                     if isinstance(w, dict)}
    now = {w.path: w.rule for w in held_now}
    kept, left = [], []
    for change in changes:
        shown = path_text(change.path)
        if shown in at_checkpoint:
            left.append({"path": shown, "rule": at_checkpoint[shown],
                         "why": CANNOT_RESTORE.format(rule=at_checkpoint[shown])})
        elif change.path in now:
            left.append({"path": shown, "rule": now[change.path], "why": LEFT_AS_IS.format(rule=now[change.path])})
        else:
            kept.append(change)
    return tuple(kept), tuple(left)


def _moved_head(store: Store, run: str, point: Checkpoint) -> record.HeadState | None:
    """How HEAD moved away from the run's latest checkpoint `point` (a rebase, a commit without a handoff); None
    when the record matches HEAD, or `point` is an earlier checkpoint (`--to N`) or a published one (`--adopt`)."""
    try:
        latest = store.read(run).checkpoint if store.exists(run) else None
    except ShiftError:
        return None
    if latest is None or latest.id != point.id:
        return None
    state = record.head_state(store.repo, point, store.rel(store.ledger_path(run)))
    return None if state.matches else state


def _target_tree(repo: Repo, point: Checkpoint, run: str, moved: record.HeadState | None) -> str:
    """The checkpoint's tree; once HEAD moved, HEAD's tree plus the run's recorded changes (git/headview.py): a
    file the new commits brought is committed, not an edit rollback removes."""
    tree = record.checkpoint_tree(repo, point) if moved is None else headview.expected_tree(repo, point, moved)
    if tree is None:
        raise UsageError(f"the content of checkpoint #{point.seq} of run {run!r} is not in this clone; fetch it "
                         "with `shiftgit sync`, then run rollback again")
    return tree


def _check_blobs(repo: Repo, run: str, seq: int, changes: tuple[Change, ...]) -> None:
    """Every byte rollback will write must be here before the first file changes."""
    missing = [c.path for c in changes if c.blob and c.mode != "160000"
               and not record.has_object(repo, c.blob, "blob")]
    if missing:
        raise UsageError(f"the content of checkpoint #{seq} of run {run!r} is not all in this clone (missing: "
                         f"{', '.join(missing[:5])}); its snapshot lives under refs/shift/ in the clone that made "
                         "it: fetch it with `shiftgit sync`, then run rollback again; nothing was changed")


def _diff(repo: Repo, current: str, target: str) -> list[Change]:
    """Raw diff from the working tree to the checkpoint, with modes (`.shift/` left out)."""
    out = repo.git("diff-tree", "-r", "-z", "--no-renames", current, target)
    parts = out.split("\0")
    changes = []
    ours = written.read(repo)  # files shiftgit wrote (`init --agent`) and nobody changed since: never rolled back
    for meta, path in zip(parts[0::2], parts[1::2], strict=False):
        if not meta.startswith(":") or path == ".shift" or path.startswith(".shift/"):
            continue
        _, new_mode, old_blob, new_blob, status = meta[1:].split(" ")
        if ours.get(path) == old_blob:
            continue
        gone = status.startswith("D")
        changes.append(Change(path, "000000" if gone else new_mode, None if gone else new_blob))
    return changes


def _check_path(root: Path, change: Change, removed: set[str]) -> None:
    if not record.is_safe_path(root, change.path):
        raise UsageError(f"refusing to roll back: the path {change.path!r} would leave the work tree; "
                         "nothing was changed")
    parent = root
    for part in change.path.split("/")[:-1]:
        parent = parent / part
        if parent.is_symlink() and str(parent.relative_to(root)) not in removed:
            raise UsageError(f"refusing to roll back: {parent.relative_to(root)} is a symbolic link, and "
                             f"{change.path} lies below it; nothing was changed")


def _check_conflicts(root: Path, changes: tuple[Change, ...]) -> None:
    """A file must go where a directory still holds files rollback will not remove (ignored ones)."""
    removed = {c.path for c in changes if not c.blob}
    for change in changes:
        path = root / change.path
        if change.blob and path.is_dir() and not path.is_symlink():
            left = [str(p.relative_to(root)) for p in path.rglob("*")
                    if not p.is_dir() and str(p.relative_to(root)) not in removed]
            if left:
                raise UsageError(f"refusing to roll back: {change.path} must become a file but the directory "
                                 f"there holds files git ignores ({', '.join(left[:3])}); move them, then run "
                                 "rollback again; nothing was changed")


def _rescue_ref(repo: Repo, run: str, now: dt.datetime) -> str:
    stamp = now.strftime("%Y%m%dT%H%M%S%fZ")
    ref = f"refs/shift/rescue/{run}/{stamp}"
    n = 1
    while repo.ref(ref):
        n += 1
        ref = f"refs/shift/rescue/{run}/{stamp}-{n}"
    return ref


def rescue(repo: Repo, chosen: Plan, now: dt.datetime | None = None, why: str = "rollback to") -> tuple[str, str]:
    """Keep the working files about to be replaced as a commit under refs/shift/rescue/.

    Its parent is the checkpoint's snapshot (else HEAD), so `git show --stat REF` lists what rollback replaced.
    A file holding what looks like a secret HEAD lacks is left out (the plan leaves such a file as it is).
    """
    moment = now or dt.datetime.now(dt.timezone.utc)
    run, seq = chosen.run, chosen.seq
    parent = chosen.snapshot or repo.head()
    tree, _ = secretscan.clean_tree(repo, repo.head(), chosen.current)
    commit = repo.commit_tree(tree, [parent] if parent else [],
                              f"shiftgit rescue: {run}, the working tree before {why} checkpoint {seq}")
    ref = _rescue_ref(repo, run, moment)
    repo.update_ref(ref, commit, repo.null_id, f"shiftgit rollback {run}")
    return ref, commit


def apply(store: Store, chosen: Plan) -> dict[str, Any]:
    """Rescue what the working tree holds, then restore the checkpoint. Returns a report."""
    repo = store.repo
    if repo.worktree_tree() != chosen.current:
        raise UsageError("the working tree changed while rollback was being confirmed; nothing was changed; "
                         "run `shiftgit rollback` again")
    report = chosen.to_dict()
    if not chosen.changes:
        return {**report, "rescue": None, "rescue_commit": None}
    ref, commit = rescue(repo, chosen)
    restore_files(repo, chosen)
    return {**report, "rescue": ref, "rescue_commit": commit}


def restore_files(repo: Repo, chosen: Plan) -> None:
    """Write the plan's changes into the work tree (after its rescue was kept)."""
    for change in chosen.changes:
        if not change.blob:
            _remove(repo.root, change.path)
    for change in chosen.changes:
        if change.blob:
            _write(repo, change)


def _remove(root: Path, rel: str) -> None:
    path = root / rel
    if path.is_symlink() or path.is_file():
        path.unlink()
    parent = path.parent
    while parent != root and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


def _write(repo: Repo, change: Change) -> None:
    assert change.blob is not None
    if change.mode == "160000":  # a submodule commit: not file content rollback can write
        return
    path = repo.root / change.path
    if path.is_dir() and not path.is_symlink():
        _remove_tree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = repo_blob(repo, change.blob)
    tmp = path.with_name(f".{path.name}.shiftgit-{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    if change.mode == "120000":
        os.symlink(data.decode("utf-8", "surrogateescape"), tmp)
    else:
        tmp.write_bytes(data)
        tmp.chmod(0o755 if change.mode == "100755" else 0o644)
    os.replace(tmp, path)


def _remove_tree(path: Path) -> None:
    for child in sorted(path.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if child.is_dir() and not child.is_symlink():
            child.rmdir()
        else:
            child.unlink()
    path.rmdir()


def repo_blob(repo: Repo, blob: str) -> bytes:
    proc = subprocess.run(["git", "cat-file", "blob", blob], cwd=repo.root, capture_output=True)
    if proc.returncode != 0:
        raise UsageError(f"blob {blob} is missing from this clone; fetch it, then run rollback again")
    return proc.stdout


def restore_command(repo: Repo, rescue_ref: str, paths: list[str]) -> tuple[str | None, list[str]]:
    """The command that brings back what was replaced, and the paths it cannot (they were not there before).

    `git restore --source RESCUE -- PATHS` writes the rescued files into the work tree (index untouched).
    """
    import shlex

    listed = repo.git("ls-tree", "-r", "-z", "--name-only", rescue_ref, "--", *paths).split("\0") if paths else []
    kept = sorted(p for p in listed if p)
    absent = sorted(set(paths) - set(kept))
    if not kept:
        return None, absent
    return f"git restore --source {shlex.quote(rescue_ref)} -- {' '.join(shlex.quote(p) for p in kept)}", absent
