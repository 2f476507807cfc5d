"""Objects read from the loose files (git/looseread.py) answer as `git cat-file --batch` does; git for the rest."""

from __future__ import annotations

import subprocess

import pytest
from conftest import Repo

from shiftgit.errors import GitError
from shiftgit.git import looseread
from shiftgit.git.notestree import CatFile
from shiftgit.git.view import Objects, hook_env, staged_on_head

NAMES = ["HEAD", "HEAD^", "HEAD^{tree}", "HEAD:calc.py", "HEAD^:calc.py", "HEAD:.shift", "HEAD:.shift/config.json",
         "HEAD:nothing/here", "HEAD:calc.py/below", "refs/heads/main", "refs/heads/main:calc.py", "refs/notes/shift",
         "refs/notes/shift^{tree}", "refs/notes/none", "refs/notes/none:x", "refs/notes/none^{tree}",
         ":calc.py", ":gone.py", ":new.py", ":.shift/config.json", ":nothing"]


def cat_file(repo: Repo, names: list[str]) -> list[tuple[str, str, bytes] | None]:
    with CatFile(repo.path, hook_env()) as cat:
        return cat.get(names)


def staged_repo(repo: Repo) -> None:
    """One commit more, then an index that changes, adds and deletes files against it."""
    repo.write("gone.py", "x = 1\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "--no-verify", "-m", "gone.py")
    repo.write("calc.py", repo.read("calc.py") + "# staged\n")
    repo.write("new.py", "y = 2\n")
    repo.git("add", "calc.py", "new.py")
    repo.git("rm", "-q", "--cached", "gone.py")


def test_loose_files_answer_as_cat_file_does_and_git_is_asked_only_for_the_rest(run_repo: Repo) -> None:
    staged_repo(run_repo)
    names = [*NAMES, run_repo.head(), f"{run_repo.head()}^:calc.py", "0" * 40]
    git_dir = str(run_repo.path / ".git")
    started: list[object] = []

    def start() -> CatFile:
        started.append(1)
        return CatFile(run_repo.path, hook_env())

    reader = looseread.Loose(git_dir, git_dir, start)
    with Objects(run_repo.path, hook_env(), reader) as objects:
        _, changes = staged_on_head(objects, run_repo.path, hook_env())
        objects.note_staged(changes)
        assert reader.get(names) == cat_file(run_repo, names)
    assert started == [1]  # asked once: the null id, the only name no loose file answers
    assert reader.get([n for n in names if n != "0" * 40]) == cat_file(run_repo, names[:-1])
    assert started == [1]
    run_repo.git("gc", "-q", "--prune=now")  # everything packed: git answers, the same way
    reader = looseread.Loose(git_dir, git_dir, start)
    reader.staged = {c.path: c.new for c in changes}
    assert reader.get(names) == cat_file(run_repo, names) and len(started) == 2


def test_the_index_is_git_s_to_read_until_diff_index_says_what_it_changes(run_repo: Repo) -> None:
    staged_repo(run_repo)
    git_dir = str(run_repo.path / ".git")
    reader = looseread.Loose(git_dir, git_dir, lambda: CatFile(run_repo.path, hook_env()))
    with reader:
        assert reader.get([":calc.py", ":new.py"]) == cat_file(run_repo, [":calc.py", ":new.py"])
        assert reader.started is not None  # no staged changes known: cat-file read the index
    env = {**hook_env(), "GIT_DIR": git_dir}
    assert looseread.for_hook(str(run_repo.path), git_dir, env, env) is None  # found another way: git reads all
    assert looseread.for_hook(str(run_repo.path), git_dir, hook_env(), hook_env()) is not None


def test_a_corrupt_loose_object_is_not_answered_from_its_file(run_repo: Repo) -> None:
    head = run_repo.head()
    git_dir = run_repo.path / ".git"
    tree = run_repo.git("rev-parse", "HEAD^{tree}").strip()
    path = git_dir / "objects" / tree[:2] / tree[2:]
    saved = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(b"not zlib")
    reader = looseread.Loose(str(git_dir), str(git_dir), lambda: CatFile(run_repo.path, hook_env()))
    with pytest.raises(GitError), reader:
        reader.get([f"{head}:calc.py"])  # git says what is wrong with it
    assert reader.started is not None
    path.write_bytes(saved)
    assert subprocess.run(["git", "fsck"], cwd=run_repo.path, capture_output=True).returncode == 0


def test_replaced_objects_and_grafts_leave_every_read_to_git(run_repo: Repo) -> None:
    """diff-index sees HEAD through `refs/replace/`; an unlisted `:path` answered from HEAD's own tree would be
    neither the index's blob nor git's answer (review of c17: a staged secret read as the replaced file)."""
    git_dir = str(run_repo.path / ".git")
    head = run_repo.head()
    run_repo.write("calc.py", "SECRET = 'x'\n")
    run_repo.git("add", "calc.py")
    run_repo.git("commit", "-q", "--no-verify", "-m", "replacement")
    other = run_repo.head()
    run_repo.git("reset", "-q", "--hard", head)
    run_repo.git("replace", head, other)
    run_repo.git("reset", "-q", "--hard", "HEAD")
    assert looseread.for_hook(str(run_repo.path), git_dir, hook_env(), hook_env()) is None
    run_repo.git("replace", "-d", head)
    assert looseread.for_hook(str(run_repo.path), git_dir, hook_env(), hook_env()) is not None
    (run_repo.path / ".git" / "info").mkdir(exist_ok=True)
    (run_repo.path / ".git" / "info" / "grafts").write_text(f"{head}\n")
    assert looseread.for_hook(str(run_repo.path), git_dir, hook_env(), hook_env()) is None


def test_each_loose_object_is_read_once_and_a_blob_keeps_its_checked_id(run_repo: Repo) -> None:
    """An object two names reach (HEAD's tree, by HEAD and by the branch) is read from its file once; a blob read so
    gives digests.blob_id its id, checked on reading, without hashing it again."""
    from shiftgit import digests

    git_dir = str(run_repo.path / ".git")
    reader = looseread.Loose(git_dir, git_dir, lambda: CatFile(run_repo.path, hook_env()))
    tree, blob = reader.get(["HEAD^{tree}", "HEAD:calc.py"])
    assert tree is not None and blob is not None
    for oid in (tree[0], blob[0]):  # gone from the files: only what was read before can answer
        (run_repo.path / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    assert reader.get(["refs/heads/main^{tree}", "refs/heads/main:calc.py"]) == [tree, blob]
    assert digests._REMEMBERED[(id(blob[2]), 40)] == (blob[2], blob[0])
