"""`Repo.start_worktree_tree`: `.shift/` dropped from a private index, `git add`, the tree written, by one process
while the caller goes on; `result` gives the tree or raises git's error, and the index is gone after."""

from __future__ import annotations

import pytest
from conftest import Repo

from shiftgit import packs
from shiftgit.errors import GitError
from shiftgit.repo import Repo as GitRepo


def test_the_tree_of_the_work_tree_without_shift(repo: Repo) -> None:
    repo.ok("init", "--hooks", "none")
    repo.write("new.txt", "new\n")
    opened = GitRepo.open(repo.path)
    build = opened.start_worktree_tree()
    tree = build.result()
    assert repo.git("ls-tree", "--name-only", tree).split() == sorted(
        [".gitignore", "calc.py", "conftest.py", "new.txt", "tests"])
    assert not build.index.exists()
    assert repo.git("status", "--porcelain").splitlines() == ["?? .shift/", "?? new.txt"]  # the real index untouched


def test_a_failing_git_add_is_raised_by_result_and_the_index_removed(repo: Repo) -> None:
    opened = GitRepo.open(repo.path)
    (repo.path / ".git" / "index").write_bytes(b"not an index")
    build = opened.start_worktree_tree()
    with pytest.raises(GitError) as failed:
        build.result()
    assert failed.value.argv == list(packs.DROP)  # the first step that writes the index
    assert not build.index.exists()
    build.close()  # again: nothing left to do


def test_a_build_given_up_leaves_no_index(repo: Repo) -> None:
    with GitRepo.open(repo.path).start_worktree_tree() as build:
        pass
    assert not build.index.exists()
