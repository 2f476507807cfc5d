"""git/worktreecache.py: the agent hooks' work-tree tree from a kept index gives what a fresh build gives
(`Repo.worktree_tree`), through edits, new, deleted and newly ignored files, a staged change and `.shift/`
edits; it reuses the kept index when nothing changed, and builds fresh where it cannot follow the config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import Repo

from shiftgit.git import rawgit, worktreecache
from shiftgit.repo import Repo as GitRepo


def fresh_and_cached(path: Path) -> tuple[str, str]:
    repo = GitRepo.open(path)
    cached = worktreecache.tree(repo)
    return repo.worktree_tree(), cached


@pytest.fixture
def here(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> Repo:
    monkeypatch.chdir(repo.path)
    return repo


def test_the_kept_index_answers_as_a_fresh_build_through_every_kind_of_change(here: Repo) -> None:
    steps = [
        lambda: None,
        lambda: None,  # nothing changed: the kept index answers
        lambda: here.write("calc.py", here.read("calc.py") + "# edited\n"),
        lambda: here.write("new_module.py", "X = 1\n"),
        lambda: here.write("notes.log", "scratch\n"),
        lambda: here.write(".gitignore", "*.log\n"),  # notes.log, in the kept index, is ignored now
        lambda: (here.path / "new_module.py").unlink(),
        lambda: here.write("docs/later.txt", "t\n"),
        lambda: (here.path / ".git" / "info").mkdir(exist_ok=True),
        lambda: (here.path / ".git" / "info" / "exclude").write_text("docs/\n"),  # outside the work tree
        lambda: here.write(".shift/ignored-by-the-tree.txt", "x\n"),
        lambda: here.git("add", "calc.py"),  # the real index changed
        lambda: here.write("calc.py", here.read("calc.py") + "# again\n"),
    ]
    trees = []
    for step in steps:
        step()
        fresh, cached = fresh_and_cached(here.path)
        assert cached == fresh
        trees.append(cached)
    assert len(set(trees)) > 5, "the steps change the tree (the comparison above can fail)"
    assert (here.path / ".git" / "shift" / worktreecache.RECORD).exists()


def test_nothing_changed_runs_no_build(here: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    here.write("calc.py", here.read("calc.py") + "# edited\n")
    repo = GitRepo.open(here.path)
    first = worktreecache.tree(repo)

    def no_build(self: GitRepo) -> None:
        raise AssertionError("built again although nothing changed")

    monkeypatch.setattr(GitRepo, "start_worktree_tree", no_build)
    assert worktreecache.tree(repo) == first
    here.write("calc.py", here.read("calc.py") + "# more\n")  # an edit: `add` and `write-tree` in the kept index
    assert worktreecache.tree(repo) != first
    monkeypatch.undo()
    assert worktreecache.tree(repo) == repo.worktree_tree()


def test_a_config_it_cannot_follow_builds_fresh_each_time(here: Repo) -> None:
    with open(here.path / ".git" / "config", "a") as config:
        config.write("[core]\n\texcludesFile = elsewhere\n")
    fresh, cached = fresh_and_cached(here.path)
    assert cached == fresh
    assert not (here.path / ".git" / "shift" / worktreecache.RECORD).exists()
    assert not (here.path / ".git" / "shift" / worktreecache.INDEX).exists()


def test_a_prestarted_add_is_taken_even_once_it_changed_the_index(here: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = GitRepo.open(here.path)
    first = worktreecache.tree(repo)
    here.write("calc.py", here.read("calc.py") + "# edited\n")
    worktreecache.prestart(os.getcwd())  # what an agent hook's process does first
    for process in list(rawgit._READY.values()):
        process.wait()  # git has rewritten the kept index before the hook asks for the tree

    def no_build(self: GitRepo) -> None:
        raise AssertionError("built fresh although the kept index had only taken an edit")

    monkeypatch.setattr(GitRepo, "start_worktree_tree", no_build)
    second = worktreecache.tree(repo)
    monkeypatch.undo()
    assert second == repo.worktree_tree() != first


def test_a_wrong_record_is_not_trusted_once_the_index_changes(here: Repo) -> None:
    repo = GitRepo.open(here.path)
    worktreecache.tree(repo)
    record = here.path / ".git" / "shift" / worktreecache.RECORD
    key = record.read_text().split("\n")[0]
    record.write_text(f"{key}\n{'0' * 40}\n")  # a record whose tree is not the index's
    here.write("calc.py", "changed\n")
    assert worktreecache.tree(repo) == repo.worktree_tree() != "0" * 40


def test_the_early_rev_parse_asks_what_repo_open_asks() -> None:
    from shiftgit.repo import OPEN_ARGS

    assert worktreecache.OPEN == list(OPEN_ARGS)  # else Repo.opened reads an answer to another question


def test_the_diff_beside_write_tree_is_what_diff_tree_says(here: Repo) -> None:
    """`tree(repo, against)` keeps `diff-index --cached` of the kept index as record.py's last diff of the two trees:
    it must equal `diff-tree` of them (modified, added, deleted, a new directory), and be what `diff_files` answers."""
    from shiftgit.git import record
    from shiftgit.repo import DIFF_TREE

    repo = GitRepo.open(here.path)
    against = worktreecache.tree(repo)
    worktreecache.tree(repo)  # the kept index and its record exist: the next change runs write-tree
    here.write("calc.py", here.read("calc.py") + "# edited\n")
    here.write("pkg/new.py", "X = 1\n")
    tracked = here.git("ls-files").split()
    (here.path / next(p for p in tracked if p.endswith(".py") and p != "calc.py")).unlink()
    memo = here.path / ".git" / "shift" / record.DIFF_MEMO
    memo.unlink(missing_ok=True)
    new = worktreecache.tree(repo, against)
    assert new != against and new == repo.worktree_tree()
    kept = memo.read_bytes()
    expected = here.git(*DIFF_TREE, against, new).encode()
    assert kept == f"{against} {new}\n".encode() + expected
    assert len(expected.split(b"\0")) > 6, "three changes listed (the comparison above can fail)"
    assert sorted(e.path for e in record.diff_files(repo, against, new)) == sorted(
        e.path for e in repo.changes(against, new))


def test_no_diff_is_kept_for_a_tree_git_does_not_have(here: Repo) -> None:
    from shiftgit.git import record

    repo = GitRepo.open(here.path)
    worktreecache.tree(repo)
    worktreecache.tree(repo)
    here.write("calc.py", here.read("calc.py") + "# edited\n")
    memo = here.path / ".git" / "shift" / record.DIFF_MEMO
    memo.unlink(missing_ok=True)
    assert worktreecache.tree(repo, "0" * 40) == repo.worktree_tree()
    assert not memo.exists()


def test_the_diff_memo_is_records() -> None:
    from shiftgit.git import record

    assert worktreecache.DIFF_MEMO == record.DIFF_MEMO  # else the hold asks git for a diff the chain kept


def test_the_prestarted_chain_writes_the_tree_and_keeps_the_diff_against_the_checkpoint(
        here: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """After an edit, the `sh` that `prestart` starts runs add, write-tree and diff-index against the guessed tree (the
    recorded one): the hook runs no git itself, and gets the tree and the diff that write-tree and diff-tree give."""
    from shiftgit.git import record
    from shiftgit.repo import DIFF_TREE

    repo = GitRepo.open(here.path)
    against = worktreecache.tree(repo)
    worktreecache.tree(repo)
    here.write("calc.py", here.read("calc.py") + "# edited\n")
    here.write("pkg/new.py", "X = 1\n")
    memo = here.path / ".git" / "shift" / record.DIFF_MEMO
    memo.unlink(missing_ok=True)
    chain_answered(monkeypatch)
    new = worktreecache.tree(repo, against)
    monkeypatch.undo()
    assert new == repo.worktree_tree() != against
    expected = here.git(*DIFF_TREE, against, new).encode()
    assert memo.read_bytes() == f"{against} {new}\n".encode() + expected
    assert b"pkg/new.py" in expected and b"calc.py" in expected


def chain_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chain `prestart` started (this process's cwd) has finished; from here on any git the hook runs fails."""
    worktreecache.prestart(os.getcwd())
    for process in list(rawgit._READY.values()):
        process.wait()

    def no_git(*args: object, **kwargs: object) -> None:
        raise AssertionError("the hook ran git although the chain had answered")

    monkeypatch.setattr(rawgit, "run", no_git)
    monkeypatch.setattr(rawgit, "spawn", no_git)
    monkeypatch.setattr(GitRepo, "start_worktree_tree", no_git)


def test_a_wrong_guess_keeps_no_diff_and_nothing_changed_writes_no_tree(here: Repo) -> None:
    from shiftgit.git import record

    repo = GitRepo.open(here.path)
    worktreecache.tree(repo)
    same = worktreecache.tree(repo)
    memo = here.path / ".git" / "shift" / record.DIFF_MEMO
    worktreecache.prestart(os.getcwd())  # nothing changed: add alone
    assert worktreecache.tree(repo, same) == same
    here.write("calc.py", here.read("calc.py") + "# edited\n")
    memo.unlink(missing_ok=True)
    worktreecache.prestart(os.getcwd())  # guesses `same`; the caller compares with another tree
    other = "1" * 40
    assert worktreecache.tree(repo, other) == repo.worktree_tree() != same
    assert not memo.exists() or not memo.read_bytes().startswith(other.encode())


def test_a_sparse_checkout_gets_no_diff_of_its_index(here: Repo) -> None:
    """A sparse index may list directories, which diff-tree never does: no diff-index there, in the chain or beside
    write-tree (the hold diffs the two trees itself)."""
    from shiftgit.git import record

    here.git("config", "core.sparseCheckout", "false")  # the word is enough: its value may change
    repo = GitRepo.open(here.path)
    against = worktreecache.tree(repo)
    worktreecache.tree(repo)
    here.write("calc.py", here.read("calc.py") + "# edited\n")
    memo = here.path / ".git" / "shift" / record.DIFF_MEMO
    memo.unlink(missing_ok=True)
    worktreecache.prestart(os.getcwd())
    new = worktreecache.tree(repo, against)
    assert new == repo.worktree_tree() != against
    assert not memo.exists()


def test_the_chain_diffs_against_the_active_runs_checkpoint(run_repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guess is the active run's latest checkpoint tree, read from its ledger when prestart starts: right also
    when the recorded tree is not the checkpoint's (an earlier edit the hook saw)."""
    import json

    from shiftgit.git import record
    from shiftgit.repo import DIFF_TREE

    monkeypatch.chdir(run_repo.path)
    run_repo.ok("checkpoint", "--step", "one")
    point = json.loads(run_repo.read(".shift/runs/demo/ledger.json"))["checkpoint"]["tree"]
    repo = GitRepo.open(run_repo.path)
    worktreecache.tree(repo)
    run_repo.write("calc.py", run_repo.read("calc.py") + "# first\n")
    seen = worktreecache.tree(repo)  # the recorded tree: not the checkpoint's
    memo = run_repo.path / ".git" / "shift" / record.DIFF_MEMO
    memo.unlink(missing_ok=True)
    run_repo.write("calc.py", run_repo.read("calc.py") + "# second\n")
    chain_answered(monkeypatch)
    new = worktreecache.tree(repo, point)
    monkeypatch.undo()
    assert point != seen != new == repo.worktree_tree()
    assert memo.read_bytes() == f"{point} {new}\n".encode() + run_repo.git(*DIFF_TREE, point, new).encode()
