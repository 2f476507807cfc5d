"""refs/notes/shift on real repositories: arranged and asserted with git, written by shiftgit.notes."""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Repo, make_repo

from shiftgit.errors import GitError
from shiftgit.git.notes import (
    NOTES_REF,
    STALE_LOCK_SECONDS,
    _clear_stale_lock,
    _remove_if_same,
    note_blobs,
    read_note,
    read_notes,
    write_notes,
)

ROOT = Path(__file__).resolve().parents[1]
FANOUT = re.compile(r"^[0-9a-f]{2}/[0-9a-f]{38}$")
WRITER = """
import os, sys, time
from shiftgit.git.notes import write_notes
go, ids = sys.argv[1], sys.argv[2:]
while not os.path.exists(go):
    time.sleep(0.001)
for commit in ids:
    write_notes(".", {commit: "note for " + commit})
"""
CRASHER = """
import sys
from shiftgit.git.notes import write_notes
open(sys.argv[2], "w").close()
with open(sys.argv[1], "a") as log:
    for commit in sys.argv[3:]:
        write_notes(".", {commit: "crash " + commit})
        log.write(commit + "\\n")
        log.flush()
"""


def py_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def commits(repo: Repo, n: int, branch: str = "many") -> list[str]:
    """n new commits on `branch`, made in one `git fast-import`."""
    stream = "".join(f"commit refs/heads/{branch}\ncommitter A <a@b> {1700000000 + i} +0000\n"
                     f"data {len(str(i))}\n{i}\n" for i in range(n))
    proc = repo.run(["git", "fast-import", "--quiet"], input=stream)
    assert proc.returncode == 0, proc.stderr
    return repo.git("rev-list", "--reverse", branch).split()


def listed(repo: Repo) -> dict[str, str]:
    """commit -> note blob, as `git notes list` says."""
    lines = repo.git("notes", "--ref=shift", "list").splitlines()
    return {commit: blob for blob, commit in (line.split() for line in lines)}


def names(repo: Repo) -> list[str]:
    return repo.git("ls-tree", "-r", "--name-only", NOTES_REF).split()


def show(repo: Repo, commit: str) -> str:
    return repo.git("notes", "--ref=shift", "show", commit)


def fsck(repo: Repo) -> None:
    """git's own check of every object we wrote: tree format and order, connectivity."""
    proc = repo.run(["git", "fsck", "--strict", "--no-dangling"])
    assert proc.returncode == 0 and "error" not in proc.stderr, proc.stderr


def lock_path(repo: Repo) -> Path:
    return repo.path / ".git" / "refs" / "notes" / "shift.lock"


# -- round trips and layout ------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["plain", "", "ünïcødé ✓\nsecond line\n", '{"a": 1}\n', "x" * 100_000])
def test_round_trip_is_read_back_by_git(repo: Repo, text: str) -> None:
    head = repo.head()
    new = write_notes(repo.path, {head: text})
    assert repo.git("rev-parse", NOTES_REF).strip() == new
    assert show(repo, head) == text
    assert read_note(repo.path, head) == text


def test_many_notes_are_listed_logged_and_read(repo: Repo) -> None:
    ids = commits(repo, 30)
    write_notes(repo.path, {c: f"note {i}" for i, c in enumerate(ids[:20])})
    assert listed(repo) == note_blobs(repo.path)
    assert set(listed(repo)) == set(ids[:20])
    log = repo.git("log", "--notes=shift", "--format=%H %N", "many")
    assert f"{ids[7]} note 7" in log
    assert read_notes(repo.path, ids) == {c: f"note {i}" for i, c in enumerate(ids[:20])}
    assert read_note(repo.path, ids[25]) is None


def test_no_ref_reads_as_no_notes(repo: Repo) -> None:
    assert read_note(repo.path, repo.head()) is None
    assert read_notes(repo.path, [repo.head()]) == {}
    assert note_blobs(repo.path) == {}


def test_removal(repo: Repo) -> None:
    ids = commits(repo, 3)
    write_notes(repo.path, {ids[0]: "zero", ids[1]: "one"})
    write_notes(repo.path, {ids[0]: None})
    assert repo.run(["git", "notes", "--ref=shift", "show", ids[0]]).returncode != 0
    assert set(listed(repo)) == {ids[1]}
    tip = write_notes(repo.path, {ids[1]: None})
    assert listed(repo) == {} and names(repo) == []
    assert write_notes(repo.path, {ids[2]: None}) == tip, "removing a missing note commits nothing"
    assert repo.git("rev-list", "--count", NOTES_REF).strip() == "3"


def test_layout_is_two_hex_fanout(repo: Repo) -> None:
    ids = commits(repo, 300)
    write_notes(repo.path, {c: "n" for c in ids})
    write_notes(repo.path, {ids[0]: "changed"})
    assert sorted(names(repo)) == sorted(f"{c[:2]}/{c[2:]}" for c in ids)
    assert all(FANOUT.match(name) for name in names(repo))
    assert show(repo, ids[0]) == "changed"
    fsck(repo)


def test_other_entries_are_kept_in_git_tree_order(repo: Repo) -> None:
    blob = repo.run(["git", "hash-object", "-w", "--stdin"], input="keep\n").stdout.strip()
    root = repo.run(["git", "mktree"], input="".join(f"100644 blob {blob}\t{name}\n" for name in
                                                     ("README", "ab.x", "ab0", "ab-"))).stdout.strip()
    repo.git("update-ref", NOTES_REF, repo.git("commit-tree", root, "-m", "odd").strip())
    fake = "ab" + "1" * 38
    write_notes(repo.path, {fake: "on a missing object", repo.head(): "real"})
    head = repo.head()
    assert set(names(repo)) == {"README", "ab.x", "ab0", "ab-", f"ab/{'1' * 38}", f"{head[:2]}/{head[2:]}"}
    assert show(repo, fake) == "on a missing object" and show(repo, head) == "real"
    fsck(repo)


def test_flat_notes_from_git_are_kept_and_converted(repo: Repo) -> None:
    ids = commits(repo, 4)
    for c in ids[:3]:
        repo.git("notes", "--ref=shift", "add", "-m", f"by git {c}", c)
    assert names(repo) == sorted(ids[:3]), "git writes small notes trees flat"
    assert read_note(repo.path, ids[0]) == f"by git {ids[0]}\n"
    write_notes(repo.path, {ids[3]: "by shiftgit"})
    assert sorted(names(repo)) == sorted(f"{c[:2]}/{c[2:]}" for c in ids)
    assert [show(repo, c) for c in ids] == [*(f"by git {c}\n" for c in ids[:3]), "by shiftgit"]
    repo.git("notes", "--ref=shift", "add", "-f", "-m", "git again", ids[3])
    assert show(repo, ids[3]) == "git again\n" and read_note(repo.path, ids[3]) == "git again\n"


def test_deeper_fanout_is_read_and_flattened_only_where_written(repo: Repo) -> None:
    ids = commits(repo, 40)
    deep, other = ids[0], next(c for c in ids if c[:2] != ids[0][:2])
    blob = repo.run(["git", "hash-object", "-w", "--stdin"], input="deep\n").stdout.strip()
    inner = repo.run(["git", "mktree"], input=f"100644 blob {blob}\t{deep[4:]}\n").stdout.strip()
    mid = repo.run(["git", "mktree"], input=f"040000 tree {inner}\t{deep[2:4]}\n").stdout.strip()
    root = repo.run(["git", "mktree"], input=f"040000 tree {mid}\t{deep[:2]}\n").stdout.strip()
    repo.git("update-ref", NOTES_REF, repo.git("commit-tree", root, "-m", "deep").strip())
    assert show(repo, deep) == "deep\n" and read_note(repo.path, deep) == "deep\n"
    write_notes(repo.path, {other: "other"})
    assert f"{deep[:2]}/{deep[2:4]}/{deep[4:]}" in names(repo), "untouched subtrees are not rewritten"
    write_notes(repo.path, {deep: "deep, rewritten"})
    assert sorted(names(repo)) == sorted(f"{c[:2]}/{c[2:]}" for c in (deep, other))
    assert show(repo, deep) == "deep, rewritten"
    fsck(repo)


def test_bad_ids_are_refused(repo: Repo) -> None:
    with pytest.raises(ValueError):
        write_notes(repo.path, {"HEAD": "x"})
    with pytest.raises(ValueError):
        read_note(repo.path, repo.head()[:12])


# -- processes, identity, hook environment ---------------------------------------------------------

def test_git_processes_per_call(repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = commits(repo, 2000)
    log, shim = tmp_path / "calls", tmp_path / "bin"
    shim.mkdir()
    (shim / "git").write_text(f'#!/bin/sh\necho "$1" >> {log}\nexec {shutil.which("git")} "$@"\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    write = ["cat-file", "unpack-objects", "commit-tree", "update-ref"]
    batch = ["fast-import", *write]

    def calls() -> list[str]:
        seen = log.read_text().split() if log.exists() else []
        log.write_text("")
        return seen

    write_notes(repo.path, {c: f"batch {c}" for c in ids})
    assert calls() == batch, "2,000 notes in one write"
    write_notes(repo.path, {ids[5]: "one more"})
    assert calls() == write
    write_notes(repo.path, {ids[5]: None})
    assert calls() == write
    assert read_note(repo.path, ids[6]) == f"batch {ids[6]}"
    assert read_notes(repo.path, ids[:50]) == {c: f"batch {c}" for c in ids[:50] if c != ids[5]}
    assert len(note_blobs(repo.path)) == 1999
    assert calls() == ["cat-file"] * 3
    monkeypatch.undo()
    assert len(listed(repo)) == 1999


def test_identity_falls_back_when_none_is_configured(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(var, raising=False)
    repo.git("config", "user.useConfigOnly", "true")
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    assert repo.run(["git", "commit-tree", "-m", "x", tree]).returncode != 0, "git itself has no identity"
    write_notes(repo.path, {repo.head(): "anonymous"})
    assert repo.git("log", "-1", "--format=%cn <%ce>", NOTES_REF).strip() == "shiftgit <shiftgit@localhost>"
    repo.git("config", "user.name", "Bea Config")
    repo.git("config", "user.email", "bea@example.com")
    write_notes(repo.path, {repo.head(): "known"})
    assert repo.git("log", "-1", "--format=%cn <%ce>", NOTES_REF).strip() == "Bea Config <bea@example.com>"


def test_hook_environment_does_not_redirect_writes(repo: Repo, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    other = make_repo(tmp_path / "other")
    monkeypatch.chdir(other.path)
    monkeypatch.setenv("GIT_DIR", ".git")
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "no" / "index.lock"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other.path))
    write_notes(repo.path, {repo.head(): "here"})
    assert read_note(repo.path, repo.head()) == "here"
    for var in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"):
        monkeypatch.delenv(var)
    assert show(repo, repo.head()) == "here"
    assert other.git("rev-parse", "-q", "--verify", NOTES_REF, check=False) == ""


def test_from_a_real_post_commit_hook_in_worktrees(repo: Repo, tmp_path: Path) -> None:
    hook = repo.path / ".git" / "hooks" / "post-commit"
    hook.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c 'import subprocess; from shiftgit.git.notes import write_notes; "
        'h = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(); '
        'write_notes(".", {h: "hooked " + h})\'\n')
    hook.chmod(0o755)
    repo.git("worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    side = Repo(tmp_path / "wt")
    steps = [(repo, ["commit", "-q", "-a", "-m", "all"]), (side, ["commit", "-q", "-m", "p", "calc.py"]),
             (side, ["commit", "-q", "-a", "-m", "all"])]
    for where, argv in steps:
        where.write("calc.py", f"# {argv[-1]} {where.path}\n")
        proc = where.run(["git", *argv], env={"PYTHONPATH": str(ROOT)})
        assert proc.returncode == 0 and not proc.stderr, proc.stderr
        assert show(repo, where.head()) == f"hooked {where.head()}"
    assert len(listed(repo)) == 3


# -- concurrency and crashes -----------------------------------------------------------------------

def test_four_processes_lose_no_notes(repo: Repo, tmp_path: Path) -> None:
    ids = commits(repo, 200)
    for name in ("wt1", "wt2"):
        repo.git("worktree", "add", "-q", "--detach", str(tmp_path / name), "HEAD")
    go = tmp_path / "go"
    places = [repo.path, repo.path, tmp_path / "wt1", tmp_path / "wt2"]
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(go), *ids[i::4]], cwd=place, env=py_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, place in enumerate(places)]
    time.sleep(0.3)
    go.touch()
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, results
    assert set(listed(repo)) == set(ids)
    log = repo.git("log", "--notes=shift", "--format=%H %N", "many")
    assert {line for line in log.splitlines() if line} == {f"{c} note for {c}" for c in ids}
    assert repo.git("rev-list", "--count", NOTES_REF).strip() == "200", "one notes commit per write"
    assert all(FANOUT.match(name) for name in names(repo))
    fsck(repo)


def test_sigkill_at_random_moments_never_breaks_the_ref(repo: Repo, tmp_path: Path) -> None:
    rng = random.Random(20240611)
    acked = tmp_path / "acked"
    acked.touch()
    stale_locks = 0
    for round_ in range(30):
        ids = [hashlib.sha1(f"{round_}-{i}".encode()).hexdigest() for i in range(60)]
        ready = tmp_path / f"ready-{round_}"
        proc = subprocess.Popen([sys.executable, "-c", CRASHER, str(acked), str(ready), *ids], cwd=repo.path,
                                env=py_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 30
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert ready.exists(), "the writer did not start"
        time.sleep(rng.uniform(0, 0.1))  # a few write cycles: the kill lands anywhere in one
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        stale_locks += lock_path(repo).exists()
        if repo.git("rev-parse", "-q", "--verify", NOTES_REF, check=False):
            assert repo.git("cat-file", "-t", NOTES_REF).strip() == "commit"
            assert set(acked.read_text().split()) <= set(listed(repo)), "an acknowledged note was lost"
        marker = hashlib.sha1(f"after-{round_}".encode()).hexdigest()
        write_notes(repo.path, {marker: "after"})
        assert show(repo, marker) == "after"
    assert len(acked.read_text().split()) >= 10, "the writers were killed before they wrote anything"
    fsck(repo)
    assert not lock_path(repo).exists()
    print(f"acknowledged writes: {len(acked.read_text().split())}; stale locks left by SIGKILL: {stale_locks}")


def test_a_stale_lock_is_removed(repo: Repo, tmp_path: Path) -> None:
    write_notes(repo.path, {repo.head(): "before"})
    lock = lock_path(repo)
    lock.write_text("")
    old = time.time() - STALE_LOCK_SECONDS - 1
    os.utime(lock, (old, old))
    repo.git("worktree", "add", "-q", "--detach", str(tmp_path / "wt"), "HEAD")
    write_notes(tmp_path / "wt", {repo.head(): "after"})
    assert show(repo, repo.head()) == "after"
    assert not lock.exists()
    assert not list(lock.parent.glob("*.stale-*"))


def test_a_lock_that_turns_stale_while_waiting_is_removed(repo: Repo) -> None:
    lock = lock_path(repo)
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    almost = time.time() - STALE_LOCK_SECONDS + 1
    os.utime(lock, (almost, almost))
    write_notes(repo.path, {repo.head(): "waited"})
    assert show(repo, repo.head()) == "waited" and not lock.exists()


def test_only_the_notes_ref_lock_and_only_the_file_judged_stale_is_removed(repo: Repo) -> None:
    git_dir = repo.path / ".git"
    packed = git_dir / "packed-refs.lock"
    packed.write_text("")
    os.utime(packed, (0, 0))
    said = f"cannot lock ref '{NOTES_REF}': Unable to create '{packed}': File exists."
    assert not _clear_stale_lock(said, NOTES_REF, repo.path) and packed.exists()
    lock, judged = lock_path(repo), git_dir / "judged"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("a live writer's lock")
    judged.write_text("")
    os.utime(judged, (0, 0))
    assert not _remove_if_same(lock, judged.stat()), "the lock was replaced after it was judged"
    assert lock.read_text() == "a live writer's lock"
    assert sorted(p.name for p in lock.parent.iterdir()) == ["shift.lock"]


def test_a_live_lock_is_waited_for_not_stolen(repo: Repo, tmp_path: Path) -> None:
    ids = commits(repo, 3)
    tip = write_notes(repo.path, {ids[0]: "zero"})
    repo.git("update-ref", "refs/notes/tmp", tip)
    repo.git("notes", "--ref=tmp", "add", "-m", "one", ids[1])
    theirs = repo.git("rev-parse", "refs/notes/tmp").strip()
    holder = subprocess.Popen(["git", "update-ref", "--stdin"], cwd=repo.path, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None
    holder.stdin.write(f"start\nupdate {NOTES_REF} {theirs} {tip}\nprepare\n")
    holder.stdin.flush()
    assert [holder.stdout.readline(), holder.stdout.readline()] == ["start: ok\n", "prepare: ok\n"]
    with pytest.raises(GitError, match="gave up after 2 retries"):
        write_notes(repo.path, {ids[2]: "two"}, retries=2)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), ids[2]], cwd=repo.path,
                              env=py_env())
    time.sleep(1.0)
    assert writer.poll() is None and lock_path(repo).exists(), "a young lock must not be taken"
    holder.stdin.write("commit\n")
    holder.stdin.flush()
    assert holder.stdout.readline() == "commit: ok\n"
    holder.stdin.close()
    assert holder.wait(timeout=10) == 0 and writer.wait(timeout=30) == 0
    assert [show(repo, c) for c in ids] == ["zero", "one\n", f"note for {ids[2]}"]
    assert repo.git("rev-parse", f"{NOTES_REF}^").strip() == theirs
