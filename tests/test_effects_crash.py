"""SIGKILL `shiftgit effect run` at every stage: each key is applied at most once, unknown is never retried.

The command's side effect is a line appended to a file, so the test counts applications itself.
SHIFTGIT_TEST_PAUSE (test-only) holds the runner at a named stage so the kill lands exactly there.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import SG, Repo
from test_effects import appender, lines, with_demo_run

from shiftgit import procs


@pytest.fixture
def effects_repo(repo: Repo) -> Repo:
    return with_demo_run(repo)


def spawn(repo: Repo, key: str, argv: list[str], *flags: str, pause: str = "") -> subprocess.Popen[str]:
    env = dict(os.environ, SHIFTGIT_TEST_PAUSE=pause)
    return subprocess.Popen([*SG, "effect", "run", "--key", key, "--kind", "job", *flags, "--", *argv],
                            cwd=repo.path, env=env, start_new_session=True, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for_pause(proc: subprocess.Popen[str], stage: str) -> None:
    assert proc.stderr is not None
    for line in proc.stderr:
        if f"test pause: {stage}" in line:
            return
    raise AssertionError(f"shiftgit never reached {stage} (exit {proc.wait()})")


def kill(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    if proc.stderr is not None:
        proc.stderr.close()


def state(repo: Repo, key: str) -> str | None:
    """The state now, as shiftgit presents it (an attempt whose runner is gone reads as unknown)."""
    rows = repo.json("effect", "list")
    return next((r["state"] for r in rows if r["key"] == key), None)


def wait_gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not procs.pid_exists(pid):
            return True
        time.sleep(0.05)
    return False


def test_killed_after_planned_it_never_ran_and_runs_once_later(effects_repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "k.log"
    proc = spawn(effects_repo, "k", appender(log), "--reversible", pause="after-planned")
    wait_for_pause(proc, "after-planned")
    kill(proc)
    assert state(effects_repo, "k") == "planned" and lines(log) == []
    effects_repo.ok("effect", "run", "--key", "k", "--kind", "job", "--", *appender(log))
    assert state(effects_repo, "k") == "completed" and lines(log) == ["applied"]


def test_killed_after_attempted_it_is_unknown_and_refused_until_reconciled(effects_repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "k.log"
    proc = spawn(effects_repo, "k", appender(log), "--reversible", pause="after-attempted")
    wait_for_pause(proc, "after-attempted")
    assert effects_repo.ledger("demo")["effects"][0]["state"] == "attempted"  # durable before the command starts
    kill(proc)
    assert state(effects_repo, "k") == "unknown"
    again = effects_repo.sg("effect", "run", "--key", "k", "--kind", "job", "--", *appender(log))
    assert again.returncode == 1 and "effect reconcile k" in again.stderr
    assert effects_repo.ledger("demo")["effects"][0]["state"] == "unknown"  # now recorded as such
    assert lines(log) == []
    effects_repo.ok("effect", "reconcile", "k", "--state", "failed", "--evidence", "the log shows it never ran")
    effects_repo.ok("effect", "run", "--key", "k", "--kind", "job", "--", *appender(log))
    assert lines(log) == ["applied"]


def test_killed_after_the_command_finished_it_is_applied_once_and_never_again(effects_repo: Repo,
                                                                              tmp_path: Path) -> None:
    log = tmp_path / "k.log"
    proc = spawn(effects_repo, "k", appender(log), "--reversible", pause="after-command")
    wait_for_pause(proc, "after-command")
    kill(proc)
    assert lines(log) == ["applied"] and state(effects_repo, "k") == "unknown"
    for _ in range(2):
        assert effects_repo.sg("effect", "run", "--key", "k", "--kind", "job", "--", *appender(log)).returncode == 1
    effects_repo.ok("effect", "reconcile", "k", "--state", "completed", "--evidence", "the log has the line")
    effects_repo.ok("effect", "run", "--key", "k", "--kind", "job", "--", *appender(log))
    assert lines(log) == ["applied"]


GRANDPARENT = """
import subprocess, sys, time
log, pids = sys.argv[1], sys.argv[2]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open(pids, "w").write(f"{__import__('os').getpid()} {child.pid}")
open(log, "a").write("started\\n")
time.sleep(60)
open(log, "a").write("finished\\n")
"""


@pytest.mark.parametrize("target", ["pid", "group"])
def test_killing_the_runner_kills_the_command_and_its_children(effects_repo: Repo, tmp_path: Path,
                                                               target: str) -> None:
    log, pids = tmp_path / "k.log", tmp_path / "pids"
    proc = spawn(effects_repo, "k", [sys.executable, "-c", GRANDPARENT, str(log), str(pids)], "--reversible")
    deadline = time.monotonic() + 30
    while lines(log) != ["started"] and time.monotonic() < deadline:
        time.sleep(0.05)
    command, grandchild = map(int, pids.read_text().split())
    assert procs.pid_exists(command) and procs.pid_exists(grandchild)
    if target == "pid":
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    else:
        kill(proc)
    assert wait_gone(command), "the effect's command outlived the shiftgit process running it"
    assert wait_gone(grandchild), "a child of the effect's command outlived the shiftgit process"
    assert state(effects_repo, "k") == "unknown" and lines(log) == ["started"]
    assert effects_repo.sg("effect", "run", "--key", "k", "--kind", "job", "--", "true").returncode == 1


def stored_state(repo: Repo, key: str) -> str | None:
    effects = repo.ledger("demo").get("effects", [])
    return next((e["state"] for e in effects if e["key"] == key), None)


def test_random_kills_never_apply_a_key_twice_nor_retry_an_unknown_one(effects_repo: Repo, tmp_path: Path) -> None:
    rng = random.Random(20240611)
    seen: dict[str, int] = {}
    started = time.monotonic()
    effects_repo.ok("effect", "run", "--key", "calibrate", "--kind", "job", "--reversible", "--", "true")
    whole = time.monotonic() - started  # one uninterrupted run
    for i in range(12):
        key, log = f"k{i}", tmp_path / f"k{i}.log"
        argv = [sys.executable, "-c", f"import time; time.sleep({rng.uniform(0, 0.2):.3f}); "
                f"open({str(log)!r}, 'a').write('x\\n')"]
        proc = spawn(effects_repo, key, argv, "--reversible")
        if i % 4 == 0:
            time.sleep(rng.uniform(0, 1.1) * whole)
        else:  # aim at the interesting part: from `planned` on, through the command, to the result
            deadline = time.monotonic() + 30
            while stored_state(effects_repo, key) is None and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.5))
        kill(proc)
        now = stored_state(effects_repo, key)  # read from the file; the runner is dead, so attempted = unknown
        seen[str(now)] = seen.get(str(now), 0) + 1
        applied = len(lines(log))
        assert applied <= 1
        assert now in (None, "planned", "attempted", "completed"), now
        if now == "completed":
            assert applied == 1
        if now in (None, "planned"):
            assert applied == 0
        again = effects_repo.sg("effect", "run", "--key", key, "--kind", "job", "--reversible", "--", *argv)
        if now == "attempted":
            assert again.returncode == 1 and len(lines(log)) == applied  # never retried silently
            verdict = "completed" if applied else "failed"
            effects_repo.ok("effect", "reconcile", key, "--state", verdict, "--evidence", f"log has {applied} line(s)")
            again = effects_repo.sg("effect", "run", "--key", key, "--kind", "job", "--", *argv)
        assert again.returncode == 0, again.stderr
        assert stored_state(effects_repo, key) == "completed" and len(lines(log)) == 1
    print("states the random kills left:", json.dumps(seen, sort_keys=True))
    effects_repo.ok("validate")


def test_parallel_runs_of_one_key_apply_it_once(effects_repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "k.log"
    argv = [sys.executable, "-c", f"import time; open({str(log)!r}, 'a').write('x\\n'); time.sleep(1)"]
    runners = [subprocess.Popen([*SG, "effect", "run", "--key", "k", "--kind", "job", "--reversible", "--", *argv],
                                cwd=effects_repo.path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
               for _ in range(4)]
    results: list[Any] = [(p.wait(), p.communicate()[1]) for p in runners]
    assert lines(log) == ["x"]
    codes = sorted(code for code, _ in results)
    assert codes.count(0) >= 1 and set(codes) <= {0, 1}, results
    for code, err in results:
        if code == 1:
            assert "running now" in err
    assert state(effects_repo, "k") == "completed"
