"""git/shiftrefs.py: a save that writes its objects itself (two git processes) makes the very commit the plain
plumbing (`hash-object`, `mktree`, `commit-tree`, `update-ref`) makes, and hands over to it when it must."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import Repo

from shiftgit.git import shiftrefs
from shiftgit.repo import Repo as GitRepo

DATES = {"GIT_AUTHOR_DATE": "2026-01-02T03:04:05+01:00", "GIT_COMMITTER_DATE": "2026-01-02T03:04:06+01:00"}
FILES = {"context.md": b"# a saved context\nwith two lines\n"}
MESSAGE = "shiftgit context: demo (claude transcript, 3 entries)\n\n{\"run\": \"demo\"}\n"


def both_ways(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """The same two saves (a first one, then its child) on two refs: written directly, and by the plumbing."""
    for key, value in DATES.items():
        monkeypatch.setenv(key, value)
    repo = GitRepo.open(root)
    by = shiftrefs.writer(repo)
    assert by is not None
    tips = []
    for ref, writer in (("refs/shift/context/direct", by), ("refs/shift/context/plumbing", None)):
        first = shiftrefs.save(repo, ref, FILES, MESSAGE, previous="", by=writer)
        second = shiftrefs.save(repo, ref, {"context.md": b"changed\n"}, MESSAGE.rstrip("\n"), previous=first.commit,
                                by=writer)
        assert second.commit == repo.ref(ref)
        tips.append(second.commit)
    return tips[0], tips[1]


def test_a_direct_save_makes_the_commit_the_plumbing_makes(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    direct, plumbing = both_ways(repo.path, monkeypatch)
    assert direct == plumbing
    assert repo.git("fsck", "--no-dangling").strip() == ""


def test_the_same_in_a_sha256_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = subprocess.run(["git", "init", "-q", "--object-format=sha256", str(tmp_path / "probe")],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"this git cannot make sha256 repositories: {made.stderr.strip()}")
    direct, plumbing = both_ways(tmp_path / "probe", monkeypatch)
    assert direct == plumbing and len(direct) == 64


def test_a_lost_swap_lands_on_the_new_tip(repo: Repo) -> None:
    git = GitRepo.open(repo.path)
    by = shiftrefs.writer(git)
    first = shiftrefs.save(git, "refs/shift/context/demo", FILES, MESSAGE, previous="", by=by)
    second = shiftrefs.save(git, "refs/shift/context/demo", {"context.md": b"second\n"}, MESSAGE,
                            previous=first.commit, by=by)
    stale = shiftrefs.save(git, "refs/shift/context/demo", {"context.md": b"third\n"}, MESSAGE,
                           previous=first.commit, by=by)  # another save moved the ref meanwhile
    assert repo.git("rev-parse", "refs/shift/context/demo").strip() == stale.commit
    assert repo.git("rev-parse", f"{stale.commit}^").strip() == second.commit


@pytest.mark.parametrize("setting", [("user.signingkey", "ABCDEF"), ("i18n.commitEncoding", "ISO-8859-1")])
def test_signing_or_a_commit_encoding_leaves_the_commit_to_git(repo: Repo, setting: tuple[str, str]) -> None:
    repo.git("config", *setting)
    assert shiftrefs.writer(GitRepo.open(repo.path)) is None


def test_no_explicit_identity_leaves_the_commit_to_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for who in ("AUTHOR", "COMMITTER"):
        for part in ("NAME", "EMAIL"):
            monkeypatch.delenv(f"GIT_{who}_{part}")
    monkeypatch.delenv("EMAIL", raising=False)
    subprocess.run(["git", "init", "-q", str(tmp_path / "anon")], check=True)
    assert shiftrefs.writer(GitRepo.open(tmp_path / "anon")) is None
    subprocess.run(["git", "-C", str(tmp_path / "anon"), "config", "user.name", "Ada"], check=True)
    subprocess.run(["git", "-C", str(tmp_path / "anon"), "config", "user.email", "ada@example.com"], check=True)
    by = shiftrefs.writer(GitRepo.open(tmp_path / "anon"))
    assert by is not None and by.author.startswith(b"Ada <ada@example.com> ")


def test_the_tip_read_from_files_is_what_git_says_and_git_is_asked_when_packed(repo: Repo) -> None:
    git = GitRepo.open(repo.path)
    by = shiftrefs.writer(git)
    assert by is not None
    ref = "refs/shift/context/demo"
    assert shiftrefs.file_id(git, ref, "context.md", by.width) == (None, None)
    saved = shiftrefs.save(git, ref, FILES, MESSAGE, previous="", by=by)
    blob = repo.git("rev-parse", f"{ref}:context.md").strip()
    assert shiftrefs.file_id(git, ref, "context.md", by.width) == (saved.commit, blob)
    assert shiftrefs.file_id(git, ref, "other.md", by.width) == (saved.commit, None)
    repo.git("gc", "-q")  # refs and objects packed: the files do not say
    assert shiftrefs.file_id(git, ref, "context.md", by.width) is None
    assert shiftrefs.tip(git, ref, "context.md").commit == saved.commit


def test_a_ref_moved_in_files_is_what_update_ref_makes_and_respects_its_lock(repo: Repo) -> None:
    git = GitRepo.open(repo.path)
    by = shiftrefs.writer(git)
    assert by is not None and by.plain_refs
    ref = "refs/shift/context/demo"
    first = shiftrefs.save(git, ref, FILES, MESSAGE, previous="", by=by)
    assert (repo.path / ".git" / ref).read_text() == first.commit + "\n"
    repo.git("pack-refs", "--all")  # the old value in packed-refs only: still checked
    common = str(git.common_dir)
    assert shiftrefs._swap_in_files(common, ref, "1" * 40, "2" * 40) is False
    lock = repo.path / ".git" / f"{ref}.lock"
    lock.write_text("")  # git's update-ref holds it
    assert shiftrefs._swap_in_files(common, ref, "1" * 40, first.commit) is False
    assert lock.exists()  # not ours to remove
    lock.unlink()
    second = shiftrefs.save(git, ref, {"context.md": b"second\n"}, MESSAGE, previous=first.commit, by=by)
    assert repo.git("rev-parse", ref).strip() == second.commit
    assert repo.git("fsck", "--no-dangling").strip() == ""
    assert not list((repo.path / ".git" / "refs" / "shift" / "context").glob("*.lock"))


@pytest.mark.parametrize("setting", [("core.hooksPath", "hooks-elsewhere"), ("core.logAllRefUpdates", "always")])
def test_settings_that_ask_more_of_update_ref_leave_the_move_to_git(repo: Repo, setting: tuple[str, str]) -> None:
    repo.git("config", *setting)
    by = shiftrefs.writer(GitRepo.open(repo.path))
    assert by is not None and not by.plain_refs
    saved = shiftrefs.save(GitRepo.open(repo.path), "refs/shift/context/demo", FILES, MESSAGE, previous="", by=by)
    assert repo.git("rev-parse", "refs/shift/context/demo").strip() == saved.commit
    if setting[0] == "core.logAllRefUpdates":
        assert (repo.path / ".git" / "logs" / "refs" / "shift" / "context" / "demo").exists()


def test_a_reference_transaction_hook_or_a_reflog_leaves_the_move_to_git(repo: Repo) -> None:
    git = GitRepo.open(repo.path)
    common, ref = str(git.common_dir), "refs/shift/context/demo"
    hook = repo.path / ".git" / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\ncat >> \"$(git rev-parse --git-dir)/transactions.txt\"\n")
    hook.chmod(0o755)
    assert shiftrefs._swap_in_files(common, ref, "1" * 40, None) is None
    by = shiftrefs.writer(git)
    saved = shiftrefs.save(git, ref, FILES, MESSAGE, previous="", by=by)
    assert saved.commit in (repo.path / ".git" / "transactions.txt").read_text()  # git ran the hook
    hook.unlink()
    log = repo.path / ".git" / "logs" / ref
    log.parent.mkdir(parents=True)
    log.write_text("")
    assert shiftrefs._swap_in_files(common, ref, "1" * 40, saved.commit) is None
