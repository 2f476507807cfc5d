"""A checkpoint writes its snapshot and ledger-ref commits itself (rawgit.write_refs): the very commits
`commit-tree` writes, on the ref's real tip even when the guess of it was wrong, and git's own way
whenever the user's config asks for more than a plain commit (a commit encoding, a signing key)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Repo

from shiftgit.git import fence, ledgerref, rawgit, shiftrefs
from shiftgit.repo import Repo as GitRepo
from shiftgit.repo import clean_env

DATES = {"GIT_AUTHOR_DATE": "2026-01-02T03:04:05+01:00", "GIT_COMMITTER_DATE": "2026-01-02T03:04:06+01:00"}
SNAPSHOT, LEDGER = "refs/shift/snapshots/demo", "refs/shift/ledgers/demo"


def parts(repo: Repo, commit: str) -> tuple[str, list[str], str]:
    """The commit's tree, parents and message."""
    head, _, message = repo.git("cat-file", "commit", commit).partition("\n\n")
    fields = [line.split(" ", 1) for line in head.splitlines()]
    return ([v for k, v in fields if k == "tree"][0], [v for k, v in fields if k == "parent"], message)


def by_commit_tree(repo: Repo, commit: str) -> str:
    """What `git commit-tree` makes of the same tree, parents and message, at the same dates."""
    tree, parents, message = parts(repo, commit)
    argv = ["commit-tree", tree, *(x for p in parents for x in ("-p", p)), "-m", message.removesuffix("\n")]
    return repo.git(*argv, env=DATES).strip()


def test_the_checkpoint_commits_are_those_commit_tree_makes(run_repo: Repo) -> None:
    for step in ("one", "two"):
        run_repo.write("calc.py", f"# {step}\n")
        run_repo.ok("checkpoint", "--step", step, env=DATES)
        for ref in (SNAPSHOT, LEDGER):
            tip = run_repo.git("rev-parse", ref).strip()
            assert by_commit_tree(run_repo, tip) == tip, ref
    point = run_repo.ledger("demo")["checkpoint"]
    assert point["snapshot"] == run_repo.git("rev-parse", SNAPSHOT).strip()
    assert parts(run_repo, point["snapshot"])[0] == point["tree"]
    assert parts(run_repo, point["snapshot"])[1][0] == run_repo.head()
    assert run_repo.git("cat-file", "blob", f"{LEDGER}:ledger.json") == run_repo.read(".shift/runs/demo/ledger.json")
    assert run_repo.git("fsck", "--no-dangling").strip() == ""


def test_a_snapshot_ref_moved_elsewhere_is_the_parent_still(run_repo: Repo) -> None:
    run_repo.ok("checkpoint", "--step", "one")
    first = run_repo.git("rev-parse", SNAPSHOT).strip()
    moved = run_repo.git("commit-tree", f"{first}^{{tree}}", "-p", first, "-m", "another worktree's").strip()
    run_repo.git("update-ref", SNAPSHOT, moved)  # not the snapshot the ledger's last checkpoint names
    run_repo.write("calc.py", "# two\n")
    run_repo.ok("checkpoint", "--step", "two")
    second = run_repo.ledger("demo")["checkpoint"]["snapshot"]
    assert second == run_repo.git("rev-parse", SNAPSHOT).strip()
    assert parts(run_repo, second)[1] == [run_repo.head(), moved]


def test_a_commit_encoding_leaves_both_commits_to_git(run_repo: Repo) -> None:
    run_repo.git("config", "i18n.commitEncoding", "ISO-8859-1")
    run_repo.ok("checkpoint", "--step", "one")
    for ref in (SNAPSHOT, LEDGER):
        assert "\nencoding ISO-8859-1\n" in run_repo.git("cat-file", "commit", ref), ref


def test_a_ledger_commit_that_cannot_be_written_directly_is_written_by_the_plumbing(
        run_repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    run_repo.ok("checkpoint", "--step", "one")
    repo = GitRepo.open(run_repo.path)
    before = run_repo.git("rev-parse", LEDGER).strip()
    data = b'{"checkpoint": {"seq": 7}}\n'
    monkeypatch.setattr(rawgit, "write_refs", lambda *args: False)  # as when another writer won the swap
    made = ledgerref.commit_ledger(repo, "demo", data, None, shiftrefs.writer(repo))
    assert made == run_repo.git("rev-parse", LEDGER).strip() and parts(run_repo, made)[1] == [before]
    assert run_repo.git("cat-file", "blob", f"{LEDGER}:ledger.json").encode() == data


def test_the_objects_are_written_loose_unless_git_must_write_them(run_repo: Repo,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """rawgit.store_objects writes plain loose objects itself (the very files git reads), and leaves them to
    `git unpack-objects` when the config may ask for more (shared permissions, ...) or the environment points
    git at another object directory."""
    repo = GitRepo.open(run_repo.path)
    width = len(run_repo.head())
    started: list[list[str]] = []
    real_run = rawgit.run

    def run(argv: list[str], env: dict[str, str], data: bytes = b"") -> tuple[int, bytes]:
        started.append(argv)
        return real_run(argv, env, data)

    monkeypatch.setattr(rawgit, "run", run)
    where, env = ["-C", str(repo.root)], clean_env()
    cases = [({}, "plain"), ({}, "shared"), ({"GIT_OBJECT_DIRECTORY": str(repo.common_dir / "objects")}, "plain")]
    for n, (extra, config) in enumerate(cases):
        if config == "shared":
            run_repo.git("config", "core.sharedRepository", "group")
        blob = f"object {n}\n".encode()
        started.clear()
        assert rawgit.store_objects(where, {**env, **extra}, [("blob", blob)], width, str(repo.common_dir))
        assert run_repo.git("cat-file", "blob", rawgit.object_id("blob", blob, width)).encode() == blob
        assert [argv[2:] for argv in started] == ([] if not extra and config == "plain" else [["unpack-objects",
                                                                                                "-q"]])
        run_repo.git("config", "--unset-all", "core.sharedRepository", check=False)
    assert run_repo.git("fsck", "--no-dangling").strip() == ""


def test_the_ledger_commit_goes_onto_the_tip_the_fence_read(run_repo: Repo, tmp_path: Path) -> None:
    """The ledger ref's tip is read once per checkpoint (by the fence), not a second time to commit onto it."""
    run_repo.ok("checkpoint", "--step", "one")
    first = run_repo.git("rev-parse", LEDGER).strip()
    trace = tmp_path / "trace"
    run_repo.write("calc.py", "# two\n")
    run_repo.ok("checkpoint", "--step", "two", env={"GIT_TRACE": str(trace)})
    listed = [line for line in trace.read_text().splitlines() if "built-in: git for-each-ref" in line]
    assert len(listed) == 1, listed
    assert parts(run_repo, run_repo.git("rev-parse", LEDGER).strip())[1] == [first]


def test_a_ledger_tip_that_moved_since_the_fence_read_it_is_the_parent_still(run_repo: Repo) -> None:
    run_repo.ok("checkpoint", "--step", "one")
    repo = GitRepo.open(run_repo.path)
    seen = next(c for c in fence.tips(repo.git, "demo") if c.ref == LEDGER)
    moved = run_repo.git("commit-tree", f"{seen.commit}^{{tree}}", "-p", seen.commit, "-m", "another worktree's")
    run_repo.git("update-ref", LEDGER, moved.strip())
    data = b'{"checkpoint": {"seq": 7}}\n'
    made = ledgerref.commit_ledger(repo, "demo", data, None, shiftrefs.writer(repo), seen)
    assert made == run_repo.git("rev-parse", LEDGER).strip() and parts(run_repo, made)[1] == [moved.strip()]
    assert run_repo.git("cat-file", "blob", f"{LEDGER}:ledger.json").encode() == data


def git_commands(repo: Repo, trace: Path, *args: str) -> list[str]:
    trace.unlink(missing_ok=True)
    repo.ok(*args, env={"GIT_TRACE2_EVENT": str(trace)})
    starts = [e["argv"][1:] for e in map(json.loads, trace.read_text().splitlines()) if e["event"] == "start"]
    return [" ".join(argv[2:4] if argv[:1] == ["-C"] else argv[:2]) for argv in starts]


def test_the_checkpoint_moves_its_refs_as_git_would_without_update_ref(run_repo: Repo, tmp_path: Path) -> None:
    """Both refs moved in the files (shiftrefs._swap_in_files: git's lock file, the value checked under it), no
    `update-ref` process; a setting that asks git for more (a reflog for every ref) leaves both moves to git."""
    run_repo.ok("checkpoint", "--step", "one")  # the first also takes the owner epoch (runs/lease.py)
    run_repo.write("calc.py", "# two\n")
    commands = git_commands(run_repo, tmp_path / "t", "checkpoint", "--step", "two")
    assert not any(c.startswith("update-ref") for c in commands), commands
    point = run_repo.ledger("demo")["checkpoint"]
    assert point["seq"] == 2 and run_repo.git("rev-parse", SNAPSHOT).strip() == point["snapshot"]
    assert run_repo.git("cat-file", "blob", f"{LEDGER}:ledger.json") == run_repo.read(".shift/runs/demo/ledger.json")
    assert not list((run_repo.path / ".git" / "refs" / "shift").rglob("*.lock"))
    run_repo.git("config", "core.logAllRefUpdates", "always")
    run_repo.write("calc.py", "# three\n")
    commands = git_commands(run_repo, tmp_path / "t", "checkpoint", "--step", "three")
    assert sum(c.startswith("update-ref") for c in commands) == 2, commands
    for ref in (SNAPSHOT, LEDGER):
        assert "shiftgit checkpoint demo 3" in run_repo.git("reflog", "show", ref), ref
    assert run_repo.git("fsck", "--no-dangling").strip() == ""
