"""The work tree's tree with its new blobs prepacked (shiftgit/packs.py): one pack, not a loose object per file,
sound by `git fsck`, and the same tree `git add -A` alone gives (git stays the judge: filters, ignores, secrets)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from conftest import Repo, make_repo

from shiftgit import packs
from shiftgit.objectdir import object_dir
from shiftgit.repo import Repo as GitRepo


def pack_files(repo: Repo) -> set[str]:
    return {p.name for p in (repo.path / ".git" / "objects" / "pack").glob("*.pack")}


def loose(repo: Repo) -> int:
    return sum(1 for d in (repo.path / ".git" / "objects").glob("[0-9a-f][0-9a-f]") for _ in d.iterdir())


def git_alone(repo: Repo) -> str:
    """The tree `git add -A` gives in a copy of the index, `.shift/` left out: what the build must equal."""
    env = {"GIT_INDEX_FILE": str(repo.path / ".git" / "reference.idx")}
    # its time kept: git's racy-clean check must see a file edited in the index's second (same size, same inode)
    shutil.copy2(repo.path / ".git" / "index", repo.path / ".git" / "reference.idx")
    repo.git("add", "-A", env=env)
    repo.git("rm", "--cached", "-r", "-q", "--ignore-unmatch", "--", ".shift", env=env)
    tree = repo.git("write-tree", env=env).strip()
    (repo.path / ".git" / "reference.idx").unlink()
    return tree


def test_many_new_and_changed_files_go_in_one_pack_and_the_tree_is_gits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "many")
    repo.ok("init", "--hooks", "none")
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    repo.write(".gitignore", ".shift/*.lock\nbuild/\n")
    repo.write(".gitattributes", "*.up filter=upper\n")
    repo.git("config", "filter.upper.clean", "tr a-z A-Z")
    for n in range(packs.PACK_MIN + 10):
        repo.write(f"src/f{n}.py", f"X = {n}\n" * n)  # small files stored, larger ones deflated
    repo.write("build/out.bin", "ignored\n")
    repo.write("notes.up", "lower case\n")  # git's blob is the filtered one, not the file's bytes
    repo.write("calc.py", "changed\n")
    (repo.path / "link").symlink_to("calc.py")
    repo.write(".env", "AWS_SECRET_ACCESS_KEY=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n")
    before, loose_before = pack_files(repo), loose(repo)
    repo.ok("checkpoint", "--step", "many")
    point = repo.ledger("demo")["checkpoint"]
    assert len(pack_files(repo) - before) == 1
    assert loose(repo) - loose_before < 20  # the trees, the commits, the filtered blob: not a blob per file
    assert point["tree"] == git_alone(repo)
    listed = repo.git("ls-tree", "-r", "--name-only", point["snapshot"]).split()
    assert f"src/f{packs.PACK_MIN + 9}.py" in listed and "link" in listed
    assert ".env" not in listed  # the secret withheld, as before
    assert not any(p.startswith((".shift/", "build/")) for p in listed)
    assert repo.git("cat-file", "-p", f"{point['snapshot']}:notes.up") == "LOWER CASE\n"
    assert repo.git("cat-file", "-p", f"{point['snapshot']}:src/f70.py") == "X = 70\n" * 70
    ignored = repo.git("hash-object", "build/out.bin").strip()  # an ignored file's blob: never written
    assert repo.run(["git", "cat-file", "-e", ignored]).returncode != 0
    fsck = repo.run(["git", "fsck", "--strict", "--no-dangling"])
    assert fsck.returncode == 0 and not fsck.stderr.strip(), fsck.stderr


def test_files_prepacked_once_are_not_packed_again_while_unchanged(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "again")
    edited = packs.PACK_MIN + 5
    for n in range(edited + 10):
        repo.write(f"src/f{n}.py", f"X = {n}\n")
    GitRepo.open(repo.path).worktree_tree()
    first = pack_files(repo)
    assert len(first) == 1 and (repo.path / ".git" / "shift" / packs.RECORD).exists()
    for n in range(edited):  # edited again; the real index still lists all of them as changed
        repo.write(f"src/f{n}.py", f"X = {n} + 1\n")
    (pack,) = pack_files(repo) - first if GitRepo.open(repo.path).worktree_tree() else set()
    verified = repo.git("verify-pack", "-v", str(repo.path / ".git" / "objects" / "pack" / pack))
    assert sum(" blob " in line for line in verified.splitlines()) == edited
    (repo.path / "src" / f"f{edited + 9}.py").touch()  # a new stat, the same bytes: below PACK_MIN, left to git
    assert GitRepo.open(repo.path).worktree_tree() and len(pack_files(repo)) == 2
    assert repo.run(["git", "fsck", "--strict"]).returncode == 0


def test_a_store_with_as_many_packs_as_git_allows_gets_no_more_from_checkpoints(tmp_path: Path) -> None:
    """An agent checkpointing big edits for hours with no commit (so no `git gc --auto`) must not pile packs up."""
    repo = make_repo(tmp_path / "full")
    repo.ok("init", "--hooks", "none")
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    for n in range(packs.PACKS_MAX):  # packs a fetch or earlier checkpoints left, one blob each
        blob = repo.run(["git", "hash-object", "-w", "--stdin"], input=f"old {n}\n").stdout.strip()
        repo.run(["git", "pack-objects", "-q", str(repo.path / ".git" / "objects" / "pack" / "pack")],
                 input=blob + "\n")
    before = pack_files(repo)
    assert len(before) == packs.PACKS_MAX
    for n in range(packs.PACK_MIN + 10):
        repo.write(f"src/f{n}.py", f"X = {n}\n")
    repo.ok("checkpoint", "--step", "many")
    assert pack_files(repo) == before  # git wrote the blobs loose
    assert repo.ledger("demo")["checkpoint"]["tree"] == git_alone(repo)
    assert repo.run(["git", "fsck", "--strict", "--no-dangling"]).returncode == 0


def test_a_few_files_are_left_loose_to_git(repo: Repo) -> None:
    repo.ok("init", "--hooks", "none")
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    repo.write("one.txt", "one\n")
    before = pack_files(repo)
    repo.ok("checkpoint", "--step", "one")
    assert pack_files(repo) == before
    assert repo.ledger("demo")["checkpoint"]["tree"] == git_alone(repo)


def test_a_prepacked_pack_verifies_in_sha1_and_sha256_repositories(tmp_path: Path) -> None:
    for kind, width in (("sha1", 40), ("sha256", 64)):
        repo = Repo(tmp_path / kind)
        repo.path.mkdir()
        repo.git("init", "-q", f"--object-format={kind}")
        for n in range(packs.PACK_MIN + 2):
            repo.write(f"f{n}.txt", f"{n}\n" * n)  # an empty file, and the same bytes twice below
        repo.write("again.txt", "1\n")
        repo.write("big.txt", "".join(f"line {n}\n" for n in range(2000)))  # deflated whole, not stored
        names = [f"f{n}.txt".encode() for n in range(packs.PACK_MIN + 2)] + [b"again.txt", b"missing.txt", b"big.txt"]
        ids = packs.prepack(str(repo.path), str(repo.path / ".git" / "objects"), names, width)
        assert ids == {repo.git("hash-object", name).strip() for name in [*(n.decode() for n in names[:-3]), "big.txt"]}
        (pack,) = (repo.path / ".git" / "objects" / "pack").glob("*.pack")
        verified = repo.git("verify-pack", "-v", str(pack))
        assert all(oid in verified for oid in ids)
        assert repo.git("cat-file", "-p", repo.git("hash-object", "f3.txt").strip()) == "3\n3\n3\n"
        assert repo.git("cat-file", "-p", repo.git("hash-object", "big.txt").strip()) == repo.read("big.txt")


def test_a_shared_repository_or_another_object_directory_is_not_prepacked(repo: Repo, monkeypatch) -> None:
    common = str(repo.path / ".git")
    assert object_dir(common, os.environ) == str(repo.path / ".git" / "objects")
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(repo.path / ".git" / "objects"))
    assert object_dir(common, os.environ) is None
    monkeypatch.delenv("GIT_OBJECT_DIRECTORY")
    repo.git("config", "core.sharedRepository", "group")
    assert object_dir(common, os.environ) is None
    assert packs.build_command(str(repo.path), common, common, 40)[4:] == []  # no packer


def test_the_build_leaves_no_listing_or_index_behind(repo: Repo) -> None:
    for n in range(30):
        repo.write(f"new/f{n}.txt", f"{n}\n")
    build = GitRepo.open(repo.path).start_worktree_tree()
    tree = build.result()
    assert "new" in repo.git("ls-tree", "--name-only", tree).split()
    assert not build.index.exists() and not Path(f"{build.index}.list").exists()
    assert not [name for name in os.listdir(repo.path / ".git" / "objects" / "pack") if name.startswith("tmp_")]
