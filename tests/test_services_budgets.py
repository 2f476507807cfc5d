"""Services (detached, recorded, alive or not) and budgets (spend across sessions, exhaustion shown)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo
from test_effects import with_demo_run

from shiftgit import procs


@pytest.fixture
def effects_repo(repo: Repo) -> Repo:
    return with_demo_run(repo)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def started() -> Iterator[list[int]]:
    """Pids of services a test started; each is killed afterwards whatever happened."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def service_row(repo: Repo, name: str) -> dict[str, Any]:
    return next(s for s in repo.json("service", "list") if s["name"] == name)


def wait_alive(repo: Repo, name: str, want: bool, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if service_row(repo, name)["alive"] is want:
            return True
        time.sleep(0.2)
    return False


def test_a_service_runs_detached_is_recorded_and_can_be_stopped(effects_repo: Repo, started: list[int]) -> None:
    port = free_port()
    proc = effects_repo.run([sys.executable, "-m", "shiftgit", "service", "start", "--name", "web", "--port", str(port),
                         "--", sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], timeout=30)
    assert proc.returncode == 0, proc.stderr  # returned although the service still holds no pipe of ours
    pid = int(proc.stdout.strip())
    started.append(pid)
    stored = next(e for e in effects_repo.ledger("demo")["effects"] if e["key"] == "service:web")
    assert (stored["kind"], stored["state"], stored["reversibility"]) == ("service", "completed", "reversible")
    assert stored["pid"] == pid and stored["port"] == port and stored["argv"][-3:] == [str(port), "--bind",
                                                                                      "127.0.0.1"]
    assert stored["process"]["start"] == procs.start_ticks(pid)
    assert os.getsid(pid) == pid  # its own session: not in the caller's process group
    assert wait_alive(effects_repo, "web", True)
    again = effects_repo.sg("service", "start", "--name", "web", "--", sys.executable, "-c", "pass")
    assert again.returncode == 1 and "already running" in again.stderr
    effects_repo.ok("service", "stop", "--name", "web")
    assert not procs.pid_exists(pid)
    assert service_row(effects_repo, "web")["alive"] is False
    stopped = next(e for e in effects_repo.ledger("demo")["effects"] if e["key"] == "service:web")
    assert stopped["state"] == "compensated"
    log = Path(stored["log"])
    assert log.is_file() and str(effects_repo.path / ".git") in str(log)


def test_restarts_and_stops_are_each_recorded_and_pass_the_commit_gate(run_repo: Repo, started: list[int]) -> None:
    """Each start is its own effect, so no record leaves a final state: the gate lets every commit through."""
    sleeper = ("--", sys.executable, "-c", "import time; time.sleep(60)")
    steps = [("service", "start", "--name", "w", *sleeper), ("service", "stop", "--name", "w"),
             ("service", "start", "--name", "w", *sleeper), ("service", "stop", "--name", "w"),
             ("service", "start", "--name", "w", *sleeper)]
    for i, step in enumerate(steps):
        run_repo.ok(*step)
        started.extend(e["pid"] for e in run_repo.ledger("demo")["effects"] if e["pid"])
        run_repo.write("calc.py", run_repo.read("calc.py") + f"\n# step {i}\n")
        run_repo.ok("checkpoint", "--step", f"step {i}")
        proc = run_repo.commit(f"step {i}")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    effects = run_repo.ledger("demo")["effects"]
    assert [(e["key"], e["state"]) for e in effects] == [
        ("service:w", "compensated"), ("service:w@2", "compensated"), ("service:w@3", "completed")]
    rows = run_repo.json("service", "list")
    assert [r["alive"] for r in rows] == [False, False, True]


def test_a_killed_service_is_not_alive_and_a_reused_pid_is_not_it(effects_repo: Repo, started: list[int]) -> None:
    effects_repo.ok("service", "start", "--name", "sleeper", "--", sys.executable, "-c", "import time; time.sleep(60)")
    row = service_row(effects_repo, "sleeper")
    started.append(row["pid"])
    assert row["alive"] is True and row["port"] is None
    path = effects_repo.ledger_path("demo")
    document = json.loads(path.read_text())
    document["effects"][0]["process"]["start"] += 1  # the same pid, another process
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    assert service_row(effects_repo, "sleeper")["alive"] is False
    document["effects"][0]["process"]["start"] -= 1
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    os.kill(row["pid"], signal.SIGKILL)
    assert wait_alive(effects_repo, "sleeper", False)


def test_stop_signals_the_process_it_checked_never_the_group_of_the_recorded_pid(effects_repo: Repo,
                                                                                started: list[int]) -> None:
    """The record's `pid` and its process identity disagree (an edited or merged ledger, a reused pid): `stop`
    checked the identity, so it stops that process and its group, and leaves the other pid's group alone."""
    effects_repo.ok("service", "start", "--name", "sleeper", "--", sys.executable, "-c", "import time; time.sleep(60)")
    service = service_row(effects_repo, "sleeper")["pid"]
    started.append(service)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        path = effects_repo.ledger_path("demo")
        document = json.loads(path.read_text())
        document["effects"][0]["pid"] = bystander.pid  # the identity still names the service's process
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
        effects_repo.ok("service", "stop", "--name", "sleeper")
        assert bystander.poll() is None, "stop signalled the group of the recorded pid"
        deadline = time.monotonic() + 20
        while procs.pid_exists(service) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not procs.pid_exists(service), "the service it checked still runs"
        stopped = effects_repo.ledger("demo")["effects"][0]
        assert stopped["state"] == "compensated" and stopped["result"] == f"stopped (pid {service})"
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.parametrize("identity", ["no start", "no boot", "none"])
def test_stop_signals_nothing_a_record_does_not_identify(effects_repo: Repo, started: list[int], identity: str) -> None:
    """A hand-edited (or merged) record names a live pid but no start time or boot to tell it is the service: `stop`
    refuses in one line and signals nothing; the victim process and its group live on, the record stays as it was."""
    effects_repo.ok("service", "start", "--name", "sleeper", "--", sys.executable, "-c", "import time; time.sleep(60)")
    started.append(service_row(effects_repo, "sleeper")["pid"])
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        path = effects_repo.ledger_path("demo")
        document = json.loads(path.read_text())
        record = document["effects"][0]
        record["pid"], record["process"] = victim.pid, procs.identity(victim.pid)
        if identity == "none":
            del record["process"]
        else:
            record["process"]["start" if identity == "no start" else "boot"] = None
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
        proc = effects_repo.sg("service", "stop", "--name", "sleeper")
        assert victim.poll() is None, "stop signalled a process its record does not identify"
        assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "does not identify the process" in proc.stderr and "by hand" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        assert effects_repo.ledger("demo")["effects"][0]["state"] == "completed"
    finally:
        victim.kill()
        victim.wait()


def test_a_service_outlives_the_shiftgit_process_that_started_it(effects_repo: Repo, started: list[int],
                                                                tmp_path: Path) -> None:
    marker = tmp_path / "ticks"
    script = f"import time\nwhile True:\n    open({str(marker)!r}, 'a').write('t\\n'); time.sleep(0.1)"
    effects_repo.ok("service", "start", "--name", "ticker", "--", sys.executable, "-c", script)
    pid = service_row(effects_repo, "ticker")["pid"]
    started.append(pid)
    count = len(marker.read_text().splitlines()) if marker.exists() else 0
    time.sleep(0.5)
    assert len(marker.read_text().splitlines()) > count and procs.pid_exists(pid)


def test_a_forbidden_service_kind_starts_nothing(repo: Repo, tmp_path: Path) -> None:
    repo.ok("init", "--hooks", "none")
    repo.ok("start", "r", "--goal", "g", "--stop-when", "s", "--forbid", "service")
    marker = tmp_path / "ran"
    proc = repo.sg("service", "start", "--name", "x", "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')")
    assert proc.returncode == 2 and "service" in proc.stderr
    time.sleep(0.3)
    assert not marker.exists() and repo.ledger("r")["effects"] == []


def _age_last_write(repo: Repo, minutes: float) -> None:
    """As if the previous session's last write happened `minutes` ago."""
    path = repo.ledger_path("demo")
    document = json.loads(path.read_text())
    at = time.time() - minutes * 60
    document["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def test_minutes_accrue_at_every_write_across_sessions_capped_when_idle(effects_repo: Repo) -> None:
    _age_last_write(effects_repo, 10)
    effects_repo.ok("constraint", "add", "no friday deploys")  # any write counts the time since the last one
    first = effects_repo.ledger("demo")["spend"]["minutes"]
    assert 9.9 <= first <= 10.5
    _age_last_write(effects_repo, 180)  # the session died; nobody worked for three hours
    effects_repo.ok("approval", "request", "k", "--reason", "r")
    second = effects_repo.ledger("demo")["spend"]["minutes"]
    assert 29.9 <= second - first <= 30.5
    _age_last_write(effects_repo, 5)
    effects_repo.write("calc.py", effects_repo.read("calc.py") + "\n# x\n")
    effects_repo.ok("checkpoint", "--step", "s", "--tokens", "10")
    ledger = effects_repo.ledger("demo")
    assert 4.9 <= ledger["spend"]["minutes"] - second <= 5.5  # counted once, not by checkpoint and store both
    assert ledger["checkpoint"]["spend"] == ledger["spend"]


def test_a_spent_budget_shows_in_status(repo: Repo) -> None:
    repo.ok("init", "--hooks", "none")
    repo.ok("start", "r", "--goal", "g", "--stop-when", "s", "--token-budget", "1000", "--cost-budget", "5")
    repo.ok("checkpoint", "--tokens", "600", "--cost", "1.5")
    run = repo.json("status")["runs"][0]
    assert run["budget_exhausted"] == [] and run["spend"]["tokens"] == 600
    assert run["budgets"] == {"tokens": 1000, "cost": 5}
    repo.ok("checkpoint", "--tokens", "500")
    run = repo.json("status")["runs"][0]
    assert run["spend"]["tokens"] == 1100 and run["spend"]["cost"] == 1.5
    assert run["budget_exhausted"] == ["tokens: spent 1100 of 1000"]
    text = repo.ok("status").stdout
    assert "BUDGET EXHAUSTED: tokens" in text and "1100 tokens" in text


def test_status_names_unknown_effects_and_pending_approvals(effects_repo: Repo) -> None:
    effects_repo.ok("approval", "request", "ship", "--reason", "r")
    proc = effects_repo.sg("effect", "run", "--key", "slow", "--kind", "job", "--reversible", "--timeout", "0.5", "--",
                       sys.executable, "-c", "import time; time.sleep(10)")
    assert proc.returncode == 124
    run = effects_repo.json("status")["runs"][0]
    assert run["unknown_effects"] == ["slow"] and run["pending_approvals"] == ["ship"]
    assert "effect outcome unknown: slow" in effects_repo.ok("status").stdout
