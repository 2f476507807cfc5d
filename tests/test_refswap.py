"""Refs moved in the files as git's files backend moves them (git/refswap.py): arranged and judged with git."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import Repo

from shiftgit.git import refswap

IDENT = b"Ada Example <ada@example.com> 1700000000 +0000"


def two_refs(repo: Repo) -> tuple[str, str, str]:
    """refs/notes/a and refs/notes/b at HEAD, each with a reflog; returns (git dir, HEAD, HEAD's parent)."""
    head, parent = repo.git("rev-parse", "HEAD", "HEAD^").split()
    for ref in ("refs/notes/a", "refs/notes/b"):
        repo.git("update-ref", "--create-reflog", "-m", "start", ref, parent)
    return str(repo.path / ".git"), head, parent


def test_both_refs_move_with_the_reflog_lines_git_writes(run_repo: Repo) -> None:
    common, head, parent = two_refs(run_repo)
    assert refswap.in_files(common, ["refs/notes/a", "refs/notes/b"], os.environ, str(run_repo.path))
    assert refswap.swap(common, [("refs/notes/b", head, parent), ("refs/notes/a", head, parent)], IDENT, "moved")
    run_repo.git("update-ref", "-m", "moved", "refs/notes/c", head)  # git's own line, to compare with
    for ref in ("refs/notes/a", "refs/notes/b"):
        assert run_repo.git("rev-parse", ref).strip() == head
        assert run_repo.git("log", "-g", "--format=%H %gn <%ge> %gs", ref).splitlines() == [
            f"{head} Ada Example <ada@example.com> moved", f"{parent} Ada Example <ada@example.com> start"]
        ours = (Path(common) / "logs" / ref).read_text().splitlines()[-1]
        gits = (Path(common) / "logs" / "refs/notes/c").read_text().splitlines()[-1]
        assert ours.replace("1700000000", "T") == f"{parent} {head} Ada Example <ada@example.com> T +0000\tmoved"
        assert gits.split(" ", 2)[2].split(">")[0] == ours.split(" ", 2)[2].split(">")[0]
        assert not (Path(common) / f"{ref}.lock").exists()
    assert run_repo.git("fsck", "--no-dangling", "--strict").strip() == ""


def test_a_held_lock_or_a_moved_ref_moves_neither(run_repo: Repo) -> None:
    common, head, parent = two_refs(run_repo)
    swaps: list[tuple[str, str, str | None]] = [("refs/notes/a", head, parent), ("refs/notes/b", head, parent)]
    lock = Path(common) / "refs" / "notes" / "b.lock"
    lock.write_text("")  # another writer holds b
    assert refswap.swap(common, swaps, IDENT, "moved") is False
    assert lock.exists() and not (Path(common) / "refs" / "notes" / "a.lock").exists()  # ours released, theirs kept
    lock.unlink()
    run_repo.git("update-ref", "refs/notes/b", head)  # another writer moved b meanwhile
    assert refswap.swap(common, swaps, IDENT, "moved") is False
    assert run_repo.git("rev-parse", "refs/notes/a", "refs/notes/b").split() == [parent, head]
    assert len(run_repo.git("log", "-g", "--format=%gs", "refs/notes/a").splitlines()) == 1
    run_repo.git("pack-refs", "--all")  # a packed ref is read from packed-refs, and a loose one written over it
    assert refswap.swap(common, [("refs/notes/a", head, parent)], IDENT, "moved") is True
    assert run_repo.git("rev-parse", "refs/notes/a").strip() == head


def test_the_files_do_not_settle_it_where_git_could_do_more(run_repo: Repo) -> None:
    common, _, _ = two_refs(run_repo)
    refs, top = ["refs/notes/a", "refs/notes/b"], str(run_repo.path)
    assert refswap.in_files(common, refs, os.environ, top)
    assert not refswap.in_files(common, [*refs, "refs/notes/new"], os.environ, top)  # no reflog yet: git decides
    assert not refswap.in_files(common, refs, {**os.environ, "GIT_CONFIG_PARAMETERS": "'core.fsync'='all'"}, top)
    for key, value in (("core.sharedRepository", "group"), ("core.hooksPath", "elsewhere"), ("core.fsync", "all")):
        run_repo.git("config", key, value)
        assert not refswap.in_files(common, refs, os.environ, top)
        run_repo.git("config", "--unset", key)
    hook = Path(common) / "hooks" / "reference-transaction"
    hook.write_text("#!/bin/sh\n")
    assert not refswap.in_files(common, refs, os.environ, top)


def test_locks_taken_with_files_made_ahead_exclude_as_o_excl_does(run_repo: Repo) -> None:
    """git/spares.py: a lock taken by hard-linking a spare fails on a held lock as O_EXCL does (nothing moves), a
    move with spares leaves refs and reflogs as git would, and the spares not taken are removed."""
    from shiftgit.git.spares import Spares

    common, head, parent = two_refs(run_repo)
    objects = Path(common) / "objects"
    swaps: list[tuple[str, str, str | None]] = [("refs/notes/a", head, parent), ("refs/notes/b", head, parent)]
    lock = Path(common) / "refs" / "notes" / "b.lock"
    lock.write_text("theirs")
    with Spares(str(objects), {0o666: 3}) as spares:
        assert refswap.swap(common, swaps, IDENT, "moved", spares) is False
        assert lock.read_text() == "theirs" and not (Path(common) / "refs" / "notes" / "a.lock").exists()
        lock.unlink()
        assert refswap.swap(common, swaps, IDENT, "moved", spares) is True
        assert not spares.free[0o666]  # every spare taken (or dropped with the held lock)
    assert run_repo.git("rev-parse", "refs/notes/a", "refs/notes/b").split() == [head, head]
    assert not list(objects.glob("tmp_obj_*")) and not list((Path(common) / "refs" / "notes").glob("*.lock"))
    assert run_repo.git("log", "-g", "--format=%gs", "refs/notes/b").splitlines() == ["moved", "start"]
    with Spares(str(objects), {0o444: 2}) as spares:
        assert len(list(objects.glob("tmp_obj_*"))) == 2
    assert not list(objects.glob("tmp_obj_*"))  # not taken: removed


def test_a_lock_taken_with_an_old_spare_is_not_stale_to_another_writer(run_repo: Repo) -> None:
    """A spare made while the editor was open (minutes before the note is written) becomes a lock of now: another
    writer's stale-lock policy (shiftgit/reflocks.py) must see a live lock, not a killed writer's."""
    import time

    from shiftgit import reflocks
    from shiftgit.git.spares import Spares

    common, _, _ = two_refs(run_repo)
    lock = Path(common) / "refs" / "notes" / "a.lock"
    with Spares(str(Path(common) / "objects"), {0o666: 1}) as spares:
        (path, _), = spares.free[0o666]
        old = time.time() - 60
        os.utime(path, (old, old))
        fd = spares.take(str(lock), 0o666)
        assert fd is not None
        try:
            said = f"fatal: cannot lock ref 'refs/notes/a': Unable to create '{lock}': File exists."
            assert time.time() - lock.stat().st_mtime < reflocks.STALE_LOCK_SECONDS
            assert reflocks.clear_stale_lock(said, "refs/notes/a", common) is False and lock.exists()
        finally:
            os.close(fd)
            lock.unlink()


def test_a_move_that_fails_leaves_no_reflog_line_for_the_fallback_to_repeat(run_repo: Repo,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    common, head, parent = two_refs(run_repo)
    rename = os.rename

    def failing(source: str, target: str) -> None:
        if target.endswith("/b"):
            raise PermissionError(target)
        rename(source, target)

    monkeypatch.setattr(os, "rename", failing)
    swaps: list[tuple[str, str, str | None]] = [("refs/notes/a", head, parent), ("refs/notes/b", head, parent)]
    assert refswap.swap(common, swaps, IDENT, "moved") is None
    monkeypatch.setattr(os, "rename", rename)
    assert run_repo.git("log", "-g", "--format=%gs", "refs/notes/b").splitlines() == ["start"]
    assert run_repo.git("rev-parse", "refs/notes/b").strip() == parent
