"""HEAD read from the git dir's files agrees with `git rev-parse --verify -q HEAD^{commit}` in every layout git
leaves: a loose branch, packed refs, detached, an unborn branch, a linked worktree, a sha256 repository; a layout
it does not read (a symbolic ref chain) is left to git."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Repo, make_repo

from shiftgit.git.headref import ASK_GIT, head_and_branch, read_head, read_refs
from shiftgit.repo import Repo as ShiftRepo


def agree(path: Path) -> str | None:
    repo = ShiftRepo.open(path)
    found = read_head(str(repo.git_dir), str(repo.common_dir))
    assert found != ASK_GIT
    assert found == repo.head()
    return found


def test_loose_packed_detached_and_unborn(repo: Repo) -> None:
    assert agree(repo.path) == repo.head()
    repo.git("pack-refs", "--all")
    assert not (repo.path / ".git/refs/heads/main").exists()
    assert agree(repo.path) == repo.head()
    first = repo.head()
    repo.write("x.txt", "x")
    repo.commit("second")  # a loose ref again, newer than the packed one
    assert agree(repo.path) == repo.head() != first
    repo.git("checkout", "-q", "--detach", first)
    assert agree(repo.path) == first
    repo.git("checkout", "-q", "--orphan", "fresh")
    assert agree(repo.path) is None


def test_a_linked_worktree_reads_its_own_head(repo: Repo, tmp_path: Path) -> None:
    first = repo.head()
    repo.git("worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    side = Repo(tmp_path / "side")
    side.write("y.txt", "y")
    side.commit("on side")
    assert agree(side.path) == side.head() != first
    assert agree(repo.path) == first


def test_sha256_repository(tmp_path: Path) -> None:
    path = tmp_path / "sha256"
    path.mkdir()
    repo = Repo(path)
    if repo.run(["git", "init", "-q", "--object-format=sha256", "-b", "main"]).returncode != 0:
        pytest.skip("this git cannot make sha256 repositories")
    repo.write("a.txt", "a")
    repo.commit("one")
    assert len(agree(path) or "") == 64


def test_a_symbolic_ref_chain_is_left_to_git(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "work")
    repo.git("symbolic-ref", "refs/heads/alias", "refs/heads/main")
    repo.git("symbolic-ref", "HEAD", "refs/heads/alias")
    shift = ShiftRepo.open(repo.path)
    assert read_head(str(shift.git_dir), str(shift.common_dir)) == ASK_GIT
    assert shift.head() == repo.git("rev-parse", "main").strip()


def for_each_ref(repo: Repo, *prefixes: str) -> dict[str, str]:
    out = repo.git("for-each-ref", "--format=%(refname) %(objectname)", *prefixes)
    return dict(line.split(" ") for line in out.splitlines())


def test_refs_under_prefixes_agree_with_for_each_ref_packed_loose_or_both(repo: Repo) -> None:
    first = repo.head()
    prefixes = ("refs/shift/ledgers/", "refs/shift-remote/")
    common = str(ShiftRepo.open(repo.path).common_dir)
    assert read_refs(common, prefixes) == {}
    repo.git("update-ref", "refs/shift/ledgers/demo", first)
    repo.git("update-ref", "refs/shift-remote/origin/shift/ledgers/demo", first)
    repo.git("update-ref", "refs/heads/other", first)  # under no prefix
    assert read_refs(common, prefixes) == for_each_ref(repo, *prefixes) != {}
    repo.git("pack-refs", "--all")
    repo.write("x.txt", "x")
    repo.commit("second")
    repo.git("update-ref", "refs/shift/ledgers/demo", repo.head())  # loose again, newer than the packed one
    (repo.path / ".git/refs/shift/ledgers/demo.lock").write_text("0" * 40 + "\n")  # git's lock: no ref
    assert read_refs(common, prefixes) == for_each_ref(repo, *prefixes)
    assert read_refs(common, prefixes)["refs/shift/ledgers/demo"] == repo.head() != first
    (repo.path / ".git/refs/shift/ledgers/odd").write_text("ref: refs/heads/main\n")  # a symbolic ref: git's
    assert read_refs(common, prefixes) == ASK_GIT
    (repo.path / ".git/refs/shift/ledgers/odd").unlink()
    (repo.path / ".git/reftable").mkdir()
    assert read_refs(common, prefixes) == ASK_GIT


def pair_agrees(path: Path) -> tuple[str | None, str | None] | str:
    """`head_and_branch` is what `git rev-parse HEAD^{commit} --abbrev-ref HEAD` says (an unborn branch: what
    `symbolic-ref --short` says), or ASK_GIT."""
    repo = ShiftRepo.open(path)
    found = head_and_branch(str(repo.git_dir), str(repo.common_dir))
    if found != ASK_GIT:
        out = repo.git("rev-parse", "HEAD^{commit}", "--abbrev-ref", "HEAD", check=False).split()
        said = (out[0], None if out[1] == "HEAD" else out[1]) if len(out) == 2 else (repo.head(), repo.branch())
        assert found == said
    return found


def test_head_and_branch_as_git_spells_them_or_left_to_git(repo: Repo, tmp_path: Path) -> None:
    assert pair_agrees(repo.path) == (repo.head(), "main")
    repo.git("pack-refs", "--all")
    assert pair_agrees(repo.path) == (repo.head(), "main")
    for shadow in (["tag", "main"], ["update-ref", "refs/remotes/main/HEAD", "HEAD"], ["update-ref", "refs/main",
                                                                                      "HEAD"]):
        repo.git(*shadow)  # git now says `heads/main`: a name the files alone do not settle
        assert repo.git("rev-parse", "--abbrev-ref", "HEAD").strip() == "heads/main"
        assert pair_agrees(repo.path) == ASK_GIT
        repo.git("pack-refs", "--all")
        assert pair_agrees(repo.path) == ASK_GIT
        repo.git("update-ref", "-d", "refs/tags/main" if shadow[0] == "tag" else shadow[1])
    assert pair_agrees(repo.path) == (repo.head(), "main")
    repo.git("worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    assert pair_agrees(tmp_path / "side") == (repo.head(), "side")
    repo.git("checkout", "-q", "--detach")
    assert pair_agrees(repo.path) == (repo.head(), None)
    repo.git("checkout", "-q", "--orphan", "fresh")
    assert pair_agrees(repo.path) == (None, "fresh")
