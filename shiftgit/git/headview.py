"""The latest checkpoint seen on the HEAD this work tree stands on now.

While the record matches HEAD (SPEC §6), the work tree without edits holds the checkpoint's own tree.
Once HEAD moved (a `git rebase` onto an upstream that committed new files; a commit made without a
handoff), that tree is no longer what the work tree is compared with: it lacks what those commits
brought, and a file the upstream committed would read as an uncommitted edit of the run (and rollback
would remove it). What the work tree holds without edits is then what is really committed (HEAD's
tree) plus the run's own recorded changes that no commit since the checkpoint's base has touched.
"""

from __future__ import annotations

from shiftgit.git import record
from shiftgit.repo import FileEntry, Repo, clean_env


def expected_tree(repo: Repo, point: record.Checkpoint, state: record.HeadState) -> str | None:
    """The tree the work tree holds when nothing was edited since `point`; None when this clone cannot tell."""
    if state.matches or state.head is None or _behind(repo, state):
        return record.checkpoint_tree(repo, point)
    head = state.head
    paths = [f.path for f in point.files]
    at_head = record.entries_at(repo, head, paths)
    base_known = point.base is not None and record.has_object(repo, point.base, "commit")
    at_base = record.entries_at(repo, point.base, paths) if base_known else None
    lines = []
    for f in point.files:
        if at_base is not None and at_head.get(f.path, []) != at_base.get(f.path, []):
            continue  # a commit since the base changed this path (the run's own, rebased or not): HEAD's is committed
        if f.status == "D" or f.id is None:
            lines.append(f"0 {repo.null_id}\t{f.path}\n")
        else:
            modes = [m for m, blob in at_head.get(f.path, []) + (at_base or {}).get(f.path, []) if blob == f.id]
            lines.append(f"{modes[0] if modes else '100644'} {f.id}\t{f.path}\n")
    return record.overlay(repo, head, lines)


def edits(repo: Repo, point: record.Checkpoint, worktree: str, state: record.HeadState) -> list[FileEntry] | None:
    """Files outside `.shift/` the work tree changed since `point` on the HEAD it stands on; None when unknown."""
    if state.matches:
        return record.edits_since(repo, point, worktree)
    from shiftgit.ledger.written import without_ours

    tree = expected_tree(repo, point, state)
    return None if tree is None else without_ours(repo, record.diff_files(repo, tree, worktree))


def _behind(repo: Repo, state: record.HeadState) -> bool:
    """HEAD is an ancestor of the base (no commit on HEAD since it): a clone that lacks the branch the checkpoint
    was made on, or a reset back. Nothing committed since replaces the checkpoint's content: its tree is the one."""
    if state.commits or state.carrier is not None or not state.base or not state.head:
        return False
    return is_ancestor(repo, state.head, state.base)


def is_ancestor(repo: Repo, old: str, new: str) -> bool:
    """`git merge-base --is-ancestor OLD NEW`: NEW's history holds OLD (False too when either is unknown here)."""
    import subprocess

    return subprocess.run(["git", "merge-base", "--is-ancestor", old, new], cwd=repo.root, capture_output=True,
                          env=clean_env()).returncode == 0
