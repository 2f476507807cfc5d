"""The index entries the packer hands `update-index --index-info` (shiftgit/staging.py): only for files whose blob
git would store as their bytes are, in the mode their stat says; every other path left to `git add`; and the tree
always the one `git add -A` alone gives."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from conftest import Repo, make_repo
from test_packs import git_alone

from shiftgit import packs, staging
from shiftgit.repo import Repo as GitRepo

MANY = packs.PACK_MIN + 6


def packer_says(repo: Repo, extra: bytes = b"") -> tuple[dict[str, str], list[str]]:
    """What the build's packer leaves for `update-index` (path -> "mode id") and for `git add` (paths), run as the
    build runs it: the listing of `ls-files` in a copy of the index."""
    index = repo.path / ".git" / "probe.idx"
    shutil.copy2(repo.path / ".git" / "index", index)  # its time kept, as the build's (git's racy-clean check)
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    listing = subprocess.run(["git", *packs.LIST], cwd=repo.path, env=env, capture_output=True, check=True).stdout
    argv = packs.build_command(str(repo.path), str(repo.path / ".git"), str(repo.path / ".git"), 40)[4:]
    argv = argv[1:] if argv[:1] == ["early"] else argv
    assert argv, "the store is the packer's to write"
    subprocess.run(argv, cwd=repo.path, env=env, input=listing + extra, check=True)
    info, rest = Path(f"{index}{staging.INFO}"), Path(f"{index}{staging.REST}")
    entries = {}
    for line in info.read_bytes().split(b"\0") if info.exists() else []:
        if line:
            head, _, path = line.partition(b"\t")
            entries[path.decode()] = head.decode()
    left = [p.decode() for p in rest.read_bytes().split(b"\0") if p] if rest.exists() else []
    assert not Path(f"{index}{staging.ATTRS}").exists()  # check-attr's answer, read and removed
    for path in (index, info, rest):
        path.unlink(missing_ok=True)
    return entries, left


def many_changes(tmp_path: Path) -> Repo:
    repo = make_repo(tmp_path / "many")
    for n in range(MANY):
        repo.write(f"src/f{n}.py", f"X = {n}\n")
    repo.write("gone.txt", "gone\n")
    repo.write("dir_or_file", "a file now, a folder later\n")
    repo.write("tool.sh", "echo tool\n")
    repo.commit("files")
    for n in range(MANY):
        repo.write(f"src/f{n}.py", f"X = {n} + 1\n")
    (repo.path / "gone.txt").unlink()
    (repo.path / "dir_or_file").unlink()
    repo.write("dir_or_file/inside.txt", "inside\n")
    (repo.path / "tool.sh").chmod(0o755)
    repo.write("new.sh", "echo new\n")
    (repo.path / "new.sh").chmod(0o755)
    (repo.path / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    repo.write(".gitattributes", "*.id ident\n*.up filter=upper\n")
    repo.git("config", "filter.upper.clean", "tr a-z A-Z")
    repo.write("stamp.id", "$Id: anything $\n")
    repo.write("notes.up", "lower case\n")
    (repo.path / "link").symlink_to("new.sh")
    return repo


def test_plain_files_are_staged_and_the_rest_left_to_git_add(tmp_path: Path) -> None:
    repo = many_changes(tmp_path)
    entries, left = packer_says(repo, b"? gone-untracked.txt\0C gone/tracked.txt\0")  # gone since ls-files listed them
    blob = repo.git("hash-object", "src/f0.py").strip()
    assert entries["src/f0.py"] == f"100644 {blob}"
    assert all(f"src/f{n}.py" in entries for n in range(MANY))
    assert entries["tool.sh"].startswith("100755 ") and entries["new.sh"].startswith("100755 ")
    assert entries["gone.txt"] == entries["gone/tracked.txt"] == "0 " + "0" * 40  # removed
    assert "gone-untracked.txt" not in entries  # nothing to add
    assert entries["dir_or_file/inside.txt"].startswith("100644 ")
    # end of line, a file become a folder, a symlink, attributes
    assert sorted(left) == ["crlf.txt", "dir_or_file", "link", "notes.up", "stamp.id"]
    tree = GitRepo.open(repo.path).worktree_tree()
    assert tree == git_alone(repo)
    assert repo.git("cat-file", "-p", f"{tree}:notes.up") == "LOWER CASE\n"
    assert repo.git("cat-file", "-p", f"{tree}:stamp.id") == "$Id$\n"
    assert repo.run(["git", "fsck", "--strict", "--no-dangling"]).returncode == 0


def test_settings_that_change_what_git_add_stores_leave_everything_to_it(tmp_path: Path) -> None:
    repo = many_changes(tmp_path)
    for setting in ("core.filemode=false", "core.safecrlf=true", "core.ignorecase=true", "core.symlinks=false",
                    "core.filemode=00", "core.symlinks=0x0", "core.sparseCheckout=true"):  # 00, 0x0: false to git
        key, value = setting.split("=")
        repo.git("config", key, value)
        entries, left = packer_says(repo)
        assert entries == {} and left == [], setting
        repo.git("config", "--unset", key)
        assert GitRepo.open(repo.path).worktree_tree() == git_alone(repo), setting
    repo.git("config", "core.safecrlf", "warn")
    assert packer_says(repo)[0]


def test_a_nested_repository_leaves_everything_to_git_add(tmp_path: Path) -> None:
    repo = many_changes(tmp_path)
    nested = make_repo(repo.path / "nested")
    assert nested.head()
    assert packer_says(repo) == ({}, [])
    assert GitRepo.open(repo.path).worktree_tree() == git_alone(repo)


def test_submodules_leave_everything_to_git_add(tmp_path: Path) -> None:
    """`git add -A` looks into each submodule (and fails on a broken one): a .gitmodules at the top, no entries."""
    repo = many_changes(tmp_path)
    repo.write(".gitmodules", '[submodule "lib"]\n\tpath = lib\n\turl = ./lib\n')
    assert packer_says(repo) == ({}, [])


def test_a_path_through_a_symlinked_folder_is_never_read(tmp_path: Path) -> None:
    """A tracked file whose folder became a symlink to one outside: git takes the file as gone; the packer neither
    packs the outside file nor stages it (os.stat and O_NOFOLLOW refuse a symlink only as a path's last part)."""
    repo = many_changes(tmp_path)
    repo.write("lib/config.txt", "in the repository\n")
    repo.commit("lib")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.txt").write_text("SECRET_TOKEN=outside-the-repository\n")
    for n in range(MANY):
        repo.write(f"src/f{n}.py", f"X = {n} + 2\n")
    (repo.path / "lib" / "config.txt").unlink()
    (repo.path / "lib").rmdir()
    (repo.path / "lib").symlink_to(outside)
    repo.write(".git/info/exclude", "lib\n")  # ignored: no `git add` of it would set the entry right
    entries, left = packer_says(repo, b"C lib/config.txt\0")
    assert "lib/config.txt" not in entries and entries["src/f0.py"].startswith("100644 ")
    outside_blob = repo.git("hash-object", str(outside / "config.txt")).strip()
    assert repo.run(["git", "cat-file", "-e", outside_blob]).returncode != 0  # never packed
    tree = GitRepo.open(repo.path).worktree_tree()
    assert tree == git_alone(repo)
    assert repo.run(["git", "cat-file", "-e", f"{tree}:lib/config.txt"]).returncode != 0


def test_a_cut_listing_leaves_everything_to_git_add(tmp_path: Path) -> None:
    """`ls-files` failed (CUT beside the index): its listing may not be the whole change; the entries go unused."""
    repo = many_changes(tmp_path)
    index = repo.path / ".git" / "cut.idx"
    shutil.copy2(repo.path / ".git" / "index", index)  # its time kept (git's racy-clean check)
    staging.write(str(index), {b"src/f0.py": (0o100644, repo.git("hash-object", "-w", "tool.sh").strip())}, [], [])
    Path(f"{index}{staging.CUT}").write_bytes(b"")
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    build = subprocess.run(["sh", "-c", packs.BUILD, "sh"], cwd=repo.path, env=env, capture_output=True)
    assert build.returncode == 0 and build.stdout.decode().strip() == git_alone(repo)


def test_a_wrong_entry_costs_only_the_fast_way(tmp_path: Path) -> None:
    """An entry naming an object the store lacks: `write-tree` refuses it, and `git add -A` builds the tree."""
    repo = many_changes(tmp_path)
    index = repo.path / ".git" / "wrong.idx"
    shutil.copy2(repo.path / ".git" / "index", index)
    staging.write(str(index), {b"src/f0.py": (0o100644, "2" * 40)}, [], [b"link"])
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    build = subprocess.run(["sh", "-c", packs.BUILD, "sh"], cwd=repo.path, env=env, capture_output=True)
    assert build.returncode == 0 and build.stdout.decode().strip() == git_alone(repo)


def test_after_a_large_build_the_packer_starts_beside_ls_files(tmp_path: Path) -> None:
    repo = many_changes(tmp_path)
    command = packs.build_command(str(repo.path), str(repo.path / ".git"), str(repo.path / ".git"), 40)
    assert "early" not in command  # no build packed anything yet
    assert GitRepo.open(repo.path).worktree_tree() == git_alone(repo)
    command = packs.build_command(str(repo.path), str(repo.path / ".git"), str(repo.path / ".git"), 40)
    assert command[4] == "early"
    for n in range(MANY):
        repo.write(f"src/f{n}.py", f"X = {n} + 2\n")
    (repo.path / "src" / "f1.py").unlink()
    before = {p.name for p in (repo.path / ".git" / "objects" / "pack").glob("*.pack")}
    assert GitRepo.open(repo.path).worktree_tree() == git_alone(repo)
    assert len({p.name for p in (repo.path / ".git" / "objects" / "pack").glob("*.pack")} - before) == 1
    assert not [p.name for p in (repo.path / ".git" / "shift").iterdir() if p.name.startswith("index.")]  # nothing left
    repo.commit("all of it")  # the index newer than the record: most files unchanged now, no early packer
    assert "early" not in packs.build_command(str(repo.path), str(repo.path / ".git"), str(repo.path / ".git"), 40)


def test_the_record_trusts_no_stat_as_new_as_itself(tmp_path: Path) -> None:
    record = tmp_path / "record"
    old, new = b"1:2:1000:1000", b"1:2:%d:%d" % (10 ** 19, 10 ** 19)
    packs._save(str(record), {b"old.txt": (old, "a" * 40), b"new.txt": (new, "b" * 40)})
    assert packs._load(str(record)) == {b"old.txt": (old, "a" * 40)}


def test_config_values_as_git_reads_them() -> None:
    assert staging._config_allows(b"")
    assert staging._config_allows(b"core.filemode\ntrue\0core.safecrlf\nwarn\0")
    assert not staging._config_allows(b"core.filemode\nfalse\0")
    assert staging._config_allows(b"core.filemode\nfalse\0core.filemode\nyes\0")  # the last one wins
    assert not staging._config_allows(b"core.ignorecase\0")  # a key without a value is true
    assert not staging._config_allows(b"core.safecrlf\ntrue\0")
