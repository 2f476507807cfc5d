"""Post-commit without Python (git/waiter.py): the gate's fork writes the note, the shim only wakes it; and
whenever that child is not there (aborted commit, killed child, stale FIFOs) nothing hangs and the note
still comes the usual way."""

from __future__ import annotations

import os
import subprocess
import time

from conftest import Repo
from test_quicknote import checkpoint, expected

from shiftgit.git import waiter
from shiftgit.git.notes import DATA_REF, read_note


def fifos(repo: Repo) -> list[str]:
    return sorted(n for n in os.listdir(repo.path / ".git" / "shift") if n.startswith(("wait-", "go-")))


def gone(repo: Repo) -> bool:
    """The FIFOs are gone (the child removes them just before it leaves)."""
    deadline = time.monotonic() + 10
    while fifos(repo) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not fifos(repo)


def without_python(repo: Repo) -> None:
    """The post-commit shim can no longer start Python: only the gate's child can write a note."""
    shim = repo.path / ".git" / "hooks" / "post-commit"
    text = shim.read_text()
    start = text.index("\npython=") + 1
    end = text.index("\n", start)
    shim.write_text(text[:start] + "python=/nonexistent/python" + text[end:])


def test_the_gates_child_writes_the_note_and_post_commit_starts_no_python(run_repo: Repo) -> None:
    without_python(run_repo)
    checkpoint(run_repo, "waited")
    proc = run_repo.run(["git", "commit", "-q", "-m", "waited"], env={"PATH": os.defpath})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr  # no "python is gone" from the shim
    head = run_repo.head()
    assert (read_note(run_repo.path, head), read_note(run_repo.path, head, DATA_REF)) == expected(run_repo, head)
    assert gone(run_repo)
    assert run_repo.git("fsck", "--no-dangling").strip() == ""


def test_an_aborted_commit_leaves_no_child_and_the_next_commit_gets_its_note(run_repo: Repo) -> None:
    checkpoint(run_repo, "aborted")
    proc = run_repo.run(["git", "commit", "-q", "-m", ""])  # the gate passes, then git aborts: empty message
    assert proc.returncode != 0
    assert gone(run_repo)  # the child saw its `git commit` end
    assert run_repo.commit("after the abort").returncode == 0
    head = run_repo.head()
    assert (read_note(run_repo.path, head), read_note(run_repo.path, head, DATA_REF)) == expected(run_repo, head)


def test_a_refused_commit_forks_no_child_and_writes_nothing(run_repo: Repo) -> None:
    """The gate forks once it passed: a refused commit leaves no child, writes no note, prepares none, records no
    ledger as validated, and leaves no FIFO."""
    checkpoint(run_repo, "before")
    assert run_repo.commit("before").returncode == 0
    checkpoint(run_repo, "refused")
    run_repo.write("calc.py", run_repo.read("calc.py") + "# edited after the checkpoint\n")
    run_repo.git("add", "-A")
    shift = run_repo.path / ".git" / "shift"
    kept = {name: (shift / name).read_bytes() for name in ("handoff", "trailers", "validated")}
    notes = run_repo.git("rev-parse", "refs/notes/shift", "refs/notes/shift-data")
    proc = run_repo.run(["git", "commit", "-q", "-m", "refused"])
    assert proc.returncode != 0 and "commit refused" in proc.stderr
    assert not fifos(run_repo)
    assert {name: (shift / name).read_bytes() for name in kept} == kept
    assert run_repo.git("rev-parse", "refs/notes/shift", "refs/notes/shift-data") == notes


def test_a_gate_that_cannot_leave_its_trailers_refuses_and_writes_nothing(run_repo: Repo) -> None:
    """The fork comes once the gate passed and wrote the trailers: when that write fails, the hook refuses, forks
    nothing, and nothing is written."""
    checkpoint(run_repo, "before")
    assert run_repo.commit("before").returncode == 0
    checkpoint(run_repo, "unwritable trailers")
    shift = run_repo.path / ".git" / "shift"
    (shift / "trailers").unlink()
    (shift / "trailers").mkdir()  # the trailers cannot be written: the hook fails after the fork
    kept = {name: (shift / name).read_bytes() for name in ("handoff", "validated")}
    notes = run_repo.git("rev-parse", "refs/notes/shift", "refs/notes/shift-data")
    proc = run_repo.run(["git", "commit", "-q", "-m", "unwritable"])
    assert proc.returncode != 0 and "shiftgit pre-commit:" in proc.stderr, proc.stderr
    assert not fifos(run_repo)
    assert {name: (shift / name).read_bytes() for name in kept} == kept
    assert run_repo.git("rev-parse", "refs/notes/shift", "refs/notes/shift-data") == notes


def test_fifos_without_a_live_child_of_this_commits_gate_never_block_post_commit(run_repo: Repo) -> None:
    """FIFOs a killed child left: its pid is dead, or (taken since) this `git commit`'s gate did not pass.
    Post-commit goes the usual way at once (opening a FIFO nobody holds would block it for ever)."""
    checkpoint(run_repo, "stale")
    assert run_repo.commit("stale").returncode == 0
    folder = run_repo.path / ".git" / "shift"
    parent = os.getpid()  # what the shim sees as $PPID when run from here
    zombie = subprocess.Popen(["true"])  # exits at once; not reaped until the end: kill -0 still finds it
    while not _state(zombie.pid).startswith("Z"):
        time.sleep(0.01)
    other = subprocess.Popen(["sleep", "60"])  # alive, but not the child the name says (another start time)
    cases = ((f"{2 ** 22 + 1}-1", parent), (f"{parent}-{waiter.started(parent)}", parent + 1),
             (f"{zombie.pid}-{waiter.started(zombie.pid)}", parent), (f"{other.pid}-1", parent),
             (str(other.pid), parent))  # dead; another commit's; a zombie; a pid taken since; an older name
    for child, gate in cases:
        (folder / "trailers").write_text(f"{gate} plain\n")
        for kind in ("wait", "go"):
            os.mkfifo(folder / f"{kind}-{parent}-{child}")
        proc = run_repo.run(["sh", "-c", "exec .git/hooks/post-commit"], timeout=30)
        assert proc.returncode == 0, proc.stderr
        for name in fifos(run_repo):
            (folder / name).unlink()
    zombie.wait()
    other.kill()
    other.wait()
    head = run_repo.head()
    assert (read_note(run_repo.path, head), read_note(run_repo.path, head, DATA_REF)) == expected(run_repo, head)


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rpartition(") ")[2]
