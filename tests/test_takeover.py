"""Takeover on another machine: two clones with their own HOMEs, one bare remote, a machine that dies.

Machine A checkpoints five times without committing and is SIGKILLed; its checkpoints left through
the background publisher. Machine B syncs, resumes from checkpoint #5, briefs its agent from it,
adopts it and carries on: the commit gate accepts the adopted state.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import SG, Repo, make_repo


class Machine(Repo):
    """A clone with a HOME, XDG dirs and global git config of its own."""

    def __init__(self, path: Path, env: dict[str, str]) -> None:
        super().__init__(path)
        self.env = env

    def run(self, argv: list[str], *, env: dict[str, str] | None = None, input: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return super().run(argv, env={**self.env, **(env or {})}, input=input, timeout=timeout)


def machine(tmp_path: Path, origin: Path, name: str) -> Machine:
    home = tmp_path / f"home-{name}"
    home.mkdir()
    (home / "gitconfig").write_text("")
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"),
           "GIT_CONFIG_GLOBAL": str(home / "gitconfig")}
    subprocess.run(["git", "clone", "-q", str(origin), str(tmp_path / name)], check=True, env={**os.environ, **env})
    clone = Machine(tmp_path / name, env)
    clone.ok("init", "--hooks", "git")
    return clone


def remote_with_a_published_run(tmp_path: Path) -> Path:
    """A bare remote holding a started run whose config publishes checkpoints to origin."""
    seed = make_repo(tmp_path / "seed")
    seed.ok("init", "--hooks", "git")
    config = json.loads(seed.read(".shift/config.json"))
    seed.write(".shift/config.json", json.dumps({**config, "publish": "origin"}, indent=2) + "\n")
    assert seed.commit("set up shiftgit, publishing to origin").returncode == 0
    seed.ok("start", "demo", "--goal", "make calc correct", "--stop-when", "tests pass",
            "--constraint", "never edit tests/")
    assert seed.commit("start demo").returncode == 0
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.path), str(origin)], check=True)
    return origin


def remote_ledger(origin: Path) -> dict[str, Any]:
    proc = subprocess.run(["git", "--git-dir", str(origin), "show", "refs/shift/ledgers/demo:ledger.json"],
                          capture_output=True, text=True)
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


AGENT = """\
import subprocess, sys, time
for i in range(1, 6):
    with open("calc.py", "a") as f:
        f.write(f"# machine A step {i}\\n")
    subprocess.run(SG + ["checkpoint", "--step", f"A step {i}", "--next", "finish sub()"], check=True,
                   stdout=subprocess.DEVNULL)
print("checkpointed", flush=True)
time.sleep(600)
"""


def machine_a_dies(a: Machine, origin: Path) -> None:
    """An agent process on A checkpoints five times, never commits, and is SIGKILLed once #5 is on the remote."""
    script = f"SG = {SG!r}\n" + AGENT
    agent = subprocess.Popen([sys.executable, "-c", script], cwd=a.path, env={**os.environ, **a.env},
                             stdout=subprocess.PIPE, text=True)
    try:
        assert agent.stdout is not None and agent.stdout.readline().strip() == "checkpointed"
        deadline = time.monotonic() + 60
        while remote_ledger(origin).get("checkpoint", {}).get("seq") != 5 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait()
    assert remote_ledger(origin)["checkpoint"]["step"] == "A step 5", "checkpoint #5 never left machine A"
    assert a.git("status", "--porcelain").strip(), "machine A committed nothing"


def session_start(clone: Repo) -> str:
    event = {"session_id": "s-b", "transcript_path": str(clone.path / "t.jsonl"), "cwd": str(clone.path),
             "hook_event_name": "SessionStart", "source": "startup"}
    proc = clone.sg("hook", "claude", "session-start", input=json.dumps(event))
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
    return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])


@pytest.fixture
def after_a_died(tmp_path: Path) -> tuple[Machine, Machine]:
    origin = remote_with_a_published_run(tmp_path)
    a = machine(tmp_path, origin, "machine-a")
    machine_a_dies(a, origin)
    b = machine(tmp_path, origin, "machine-b")
    return a, b


def test_machine_b_resumes_from_checkpoint_5_that_a_never_committed(after_a_died: tuple[Machine, Machine]) -> None:
    a, b = after_a_died
    before = b.sg("resume", "--no-run", "--json")
    assert json.loads(before.stdout)["source"]["seq"] == 0  # nothing fetched yet: the committed ledger
    assert "shiftgit sync" in b.sg("status").stdout
    b.ok("sync")
    proc = b.sg("resume", "--no-run", "--json")
    report = json.loads(proc.stdout)
    # machine A's lease has not expired: a person decides (--take-over); its files are not here yet (--adopt)
    assert proc.returncode == 4 and report["decision"] == "escalate"
    assert "is held by" in report["reasons"][0] and "machine-a" in report["reasons"][0]
    assert "shiftgit resume demo --take-over" in report["reasons"][0]
    assert report["lease"]["held_elsewhere"] and report["lease"]["epoch"] == 1
    assert report["source"]["kind"] == "published" and report["source"]["seq"] == 5
    assert report["source"]["ref"] == "refs/shift-remote/origin/shift/ledgers/demo"
    assert any("shiftgit resume demo --adopt" in reason for reason in report["reasons"])
    assert "calc.py" in {c["path"] for c in report["changes"]["uncommitted"]}  # what checkpoint #5 holds
    context = session_start(b)
    assert '"A step 5"' in context and "never edit tests/" in context
    assert "published from host" in context and "not committed" in context
    status = b.sg("status").stdout
    assert "checkpoint #5 published" in status and "shiftgit resume demo --adopt" in status
    log = b.sg("log", "--json")
    assert json.loads(log.stdout)[0]["step"] == "A step 5" and "commit" not in json.loads(log.stdout)[0]


def test_b_adopts_checkpoint_5_keeps_its_own_edit_and_commits_through_the_gate(
        after_a_died: tuple[Machine, Machine]) -> None:
    a, b = after_a_died
    b.ok("sync")
    b.write("calc.py", b.read("calc.py") + "# B-ONLY-EDIT\n")
    old_ledger = b.ledger_path("demo").read_text()
    proc = b.sg("resume", "demo", "--adopt", "--take-over", "--no-run", "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert report["adopt"]["adopted"] and report["source"]["seq"] == 5
    assert report["take_over"]["epoch"] == 2 and report["lease"]["here"]
    assert b.read("calc.py") == a.read("calc.py")
    assert b.ledger("demo")["checkpoint"]["step"] == "A step 5"
    rescue = report["adopt"]["rescue"]
    assert "# B-ONLY-EDIT" in b.git("show", f"{rescue}:calc.py")
    assert b.git("show", f"{rescue}:.shift/runs/demo/ledger.json") == old_ledger
    assert b.git("rev-parse", "refs/shift/ledgers/demo^").strip() == report["adopt"]["source"]["commit"]
    again = json.loads(b.sg("resume", "demo", "--adopt", "--no-run", "--json").stdout)
    assert not again["adopt"]["adopted"] and "nothing to adopt" in again["adopt"]["detail"]
    assert b.commit("carry on from machine A's checkpoint #5").returncode == 0  # the gate accepts it
    b.write("calc.py", b.read("calc.py") + "# machine B step 6\n")
    b.ok("checkpoint", "--step", "B step 6")
    chain = b.git("log", "--format=%s", "refs/shift/ledgers/demo").splitlines()
    # B's first write takes owner epoch 2: its claim (compare-and-swap) lies between A's #5 and B's #6
    assert chain[:3] == ["shiftgit ledger: demo checkpoint 6", "shiftgit ledger: demo owner epoch 2",
                         "shiftgit ledger: demo checkpoint 5"]


def test_adopt_refuses_a_corrupt_working_ledger_and_writes_nothing(after_a_died: tuple[Machine, Machine]) -> None:
    _, b = after_a_died
    b.ok("sync")
    b.ledger_path("demo").write_text("{ not json")
    before = b.read("calc.py")
    proc = b.sg("resume", "demo", "--adopt")
    assert proc.returncode == 2 and "corrupt" in proc.stderr and "Traceback" not in proc.stderr
    assert b.ledger_path("demo").read_text() == "{ not json" and b.read("calc.py") == before
    assert b.git("for-each-ref", "refs/shift/rescue/") == ""


def test_a_fresh_clone_s_briefing_says_sync_first_and_who_holds_the_run(after_a_died: tuple[Machine, Machine]) -> None:
    _, b = after_a_died
    before = session_start(b)
    assert "Not fetched yet" in before and "shiftgit sync`" in before.split("Not fetched yet", 1)[1].split("\n")[0]
    assert "Owner:" not in before  # the committed ledger: no lease taken yet
    b.ok("sync")
    after = session_start(b)
    assert "Not fetched yet" not in after
    owner = next(line for line in after.splitlines() if line.startswith("Owner:"))
    assert "machine-a" in owner and "owner epoch 1" in owner and "shiftgit resume demo --take-over`" in owner
    b.sg("resume", "demo", "--adopt", "--no-run")  # A's ledger here, A's lease in it
    session_start(b)
    assert "s-b" not in {s["id"] for s in b.ledger("demo").get("sessions", [])}  # A's record: not B's to write
    b.ok("resume", "demo", "--take-over", "--no-run")
    assert "Owner:" not in session_start(b)  # this place holds it now
    assert [s["id"] for s in b.ledger("demo")["sessions"]] == ["s-b"]


def test_show_and_verify_say_when_a_newer_record_was_published(after_a_died: tuple[Machine, Machine]) -> None:
    _, b = after_a_died
    assert "newest record" not in b.sg("show", "demo").stderr  # nothing fetched: nothing to say
    b.ok("sync")
    for args in (("show", "demo"), ("show", "demo", "--json"), ("verify", "demo")):
        said = b.sg(*args).stderr
        assert "not the newest record of the run: checkpoint #5 published from host" in said, (args, said)
        assert "shiftgit resume demo --adopt" in said
    b.ok("resume", "demo", "--adopt", "--take-over", "--no-run")
    assert "newest record" not in b.sg("show", "demo").stderr
