"""One owner at a time: B takes a run over while A's agent keeps running; A can write nothing after that.

Two machines (clones with HOMEs of their own) share a bare remote, as in test_takeover. A's agent is one
long-lived process that runs shiftgit commands as it is told; B syncs, adopts and takes over. A's next
checkpoint, check, effect and service are refused with one line naming B, the effect never starts, A's
commit is refused by the gate, nothing A records after the takeover reaches the remote, and B works on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import SG, Repo
from test_takeover import Machine, machine, remote_ledger, remote_with_a_published_run

AGENT = """\
import json, subprocess, sys
for line in sys.stdin:
    argv = json.loads(line)
    proc = subprocess.run(SG + argv, capture_output=True, text=True)
    print(json.dumps({"code": proc.returncode, "out": proc.stdout, "err": proc.stderr}), flush=True)
"""


class Agent:
    """A's agent: one process that keeps running and runs what it is told, as an agent's shell would."""

    def __init__(self, clone: Machine) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", f"SG = {SG!r}\n" + AGENT], cwd=clone.path,
                                     env={**os.environ, **clone.env}, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def sg(self, *argv: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(list(argv)) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        assert "Traceback" not in answer["err"], answer["err"]
        return answer

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def wait_for_step(origin: Path, step: str) -> None:
    """B's publisher pushes in the background: wait until the remote holds `step`."""
    deadline = time.monotonic() + 60
    while remote_ledger(origin).get("checkpoint", {}).get("step") != step and time.monotonic() < deadline:
        time.sleep(0.2)
    assert remote_ledger(origin)["checkpoint"]["step"] == step


def remote_tip(origin: Path) -> str:
    return subprocess.run(["git", "--git-dir", str(origin), "rev-parse", "refs/shift/ledgers/demo"],
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def two_machines(tmp_path: Path) -> Any:
    origin = remote_with_a_published_run(tmp_path)
    a = machine(tmp_path, origin, "machine-a")
    agent = Agent(a)
    try:
        for step in (1, 2):
            a.write("calc.py", a.read("calc.py") + f"# A step {step}\n")
            assert agent.sg("checkpoint", "--step", f"A step {step}", "--next", "finish sub()")["code"] == 0
        b = machine(tmp_path, origin, "machine-b")
        b.ok("sync")
        yield a, agent, b, origin
    finally:
        agent.stop()


def test_after_b_takes_over_a_running_agent_on_a_can_write_nothing(two_machines: Any) -> None:
    a, agent, b, origin = two_machines
    held = b.sg("resume", "demo", "--no-run", "--json")
    assert held.returncode == 4 and "machine-a" in json.loads(held.stdout)["reasons"][0]
    refused = b.sg("checkpoint", "--step", "B without taking over")
    assert refused.returncode == 4 and "is held by" in refused.stderr and "--take-over" in refused.stderr
    taken = b.sg("resume", "demo", "--adopt", "--take-over", "--no-run", "--json")
    assert taken.returncode == 0, taken.stderr
    assert json.loads(taken.stdout)["take_over"]["epoch"] == 2
    assert remote_ledger(origin)["lease"]["epoch"] == 2, "the takeover was published"
    b.write("calc.py", b.read("calc.py") + "# B step 3\n")
    b.ok("checkpoint", "--step", "B step 3")
    wait_for_step(origin, "B step 3")
    b_tip = remote_tip(origin)

    a.write("calc.py", a.read("calc.py") + "# A step 3, after the takeover\n")
    marker = a.path / "effect-ran"
    answers = {
        "checkpoint": agent.sg("checkpoint", "--step", "A step 3"),
        "check": agent.sg("check", "--name", "smoke", "--", sys.executable, "-c", "pass"),
        "effect": agent.sg("effect", "run", "--key", "deploy-1", "--kind", "deploy", "--reversible", "--",
                           sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"),
        "service": agent.sg("service", "start", "--name", "web", "--", sys.executable, "-c",
                            "import time; time.sleep(60)"),
    }
    for what, answer in answers.items():
        assert answer["code"] == 4, (what, answer)
        lines = answer["err"].strip().splitlines()
        assert len(lines) == 1 and "taken over" in lines[0] and "epoch 2" in lines[0], (what, lines)
        assert "machine-b" in lines[0], (what, lines)  # names the new holder
    assert not marker.exists(), "a fenced process started an effect"
    ledger = a.ledger("demo")
    assert ledger["checkpoint"]["step"] == "A step 2" and ledger["lease"]["epoch"] == 1
    assert not ledger["effects"] and not ledger["pending_checks"]

    commit = a.commit("A commits after the takeover")
    assert commit.returncode == 1 and "[rule 9]" in commit.stderr and "machine-b" in commit.stderr
    active = a.run(["git", "commit", "-q", "-m", "again, the run active"], env={"SHIFT_RUN": "demo"})
    assert active.returncode == 1 and "[rule 9] run demo was taken over: epoch 2" in active.stderr
    a.ok("sync")
    assert remote_tip(origin) == b_tip, "nothing A did after the takeover reached the remote"
    assert remote_ledger(origin)["checkpoint"]["step"] == "B step 3"
    b.write("calc.py", b.read("calc.py") + "# B step 4\n")
    b.ok("checkpoint", "--step", "B step 4")
    assert b.commit("B carries on").returncode == 0
    assert b.json("verify", "--chain", "demo")["result"] == "intact"


def test_a_checkpoint_made_while_the_remote_was_away_never_reaches_it_after_a_takeover(two_machines: Any,
                                                                                          tmp_path: Path) -> None:
    a, agent, b, origin = two_machines
    b.ok("resume", "demo", "--adopt", "--take-over", "--no-run")
    b_tip = remote_tip(origin)
    away = tmp_path / "origin-away.git"
    shutil.move(origin, away)  # A cannot see the takeover: its write goes ahead, with a warning
    try:
        a.write("calc.py", a.read("calc.py") + "# A step 3, blind\n")
        answer = agent.sg("checkpoint", "--step", "A step 3 blind")
        assert answer["code"] == 0 and "could not check origin for a takeover" in answer["err"]
    finally:
        shutil.move(away, origin)
    report = json.loads(a.ok("sync", "--json").stdout)
    assert "demo" in report["fenced"] and "machine-b" in report["fenced"]["demo"]
    assert remote_tip(origin) == b_tip, "A's checkpoint after the takeover landed on the remote"
    assert agent.sg("checkpoint", "--step", "A step 4")["code"] == 4  # it sees the newer epoch now
    resumed = json.loads(a.sg("resume", "demo", "--no-run", "--json").stdout)
    assert resumed["source"]["kind"] == "published" and "machine-b" in resumed["reasons"][0]


def test_after_a_takeover_every_other_write_of_the_old_holder_is_refused_naming_the_new_one(two_machines: Any) -> None:
    a, agent, b, origin = two_machines
    constraint = a.ledger("demo")["constraints"][0]["id"]
    b.ok("resume", "demo", "--adopt", "--take-over", "--no-run")
    before = a.ledger_path("demo").read_bytes()
    answers = {
        "constraint add": agent.sg("constraint", "add", "never touch prod"),
        "constraint lift": agent.sg("constraint", "lift", constraint, "--reason", "no longer"),
        "constraint promote": agent.sg("constraint", "promote", constraint, "--by", "lead@example.com"),
        "amend": agent.sg("amend", "--goal", "another goal", "--reason", "changed my mind"),
        "approval request": agent.sg("approval", "request", "deploy", "--reason", "ship it"),
        "stop": agent.sg("stop", "--reason", "user_paused"),
        "finish": agent.sg("finish", "--status", "abandoned"),
    }
    for what, answer in answers.items():
        assert answer["code"] == 4, (what, answer)
        lines = answer["err"].strip().splitlines()
        assert len(lines) == 1 and "taken over" in lines[0] and "machine-b" in lines[0], (what, lines)
    assert a.ledger_path("demo").read_bytes() == before, "a fenced write changed the ledger"
    assert not (a.path / ".shift" / "memory.json").exists() or "never" not in a.read(".shift/memory.json")
    b.ok("stop", "--reason", "user_paused")  # B stops the run; A, given B's stopped ledger with its old
    stopped = {**b.ledger("demo"), "lease": a.ledger("demo")["lease"]}  # lease, cannot archive it either
    a.write(".shift/runs/demo/ledger.json", json.dumps(stopped, indent=2) + "\n")
    archived = agent.sg("archive", "demo")
    assert archived["code"] == 4 and "machine-b" in archived["err"], archived
    assert a.ledger_path("demo").exists() and not a.git("for-each-ref", "refs/shift/archive")


def test_a_lease_past_its_expiry_is_taken_by_the_next_writer_as_a_new_epoch(run_repo: Repo, tmp_path: Path) -> None:
    config = json.loads(run_repo.read(".shift/config.json"))
    run_repo.write(".shift/config.json", json.dumps({**config, "lease": {"minutes": 0.001}}, indent=2) + "\n")
    assert run_repo.commit("leases expire at once").returncode == 0
    run_repo.ok("checkpoint", "--step", "first")
    other = tmp_path / "other"
    run_repo.git("worktree", "add", "-q", "-b", "other", str(other))
    twin = Repo(other)
    subprocess.run(["cp", str(run_repo.ledger_path("demo")), str(twin.ledger_path("demo"))], check=True)
    twin.ok("checkpoint", "--run", "demo", "--step", "second, elsewhere")
    lease = twin.ledger("demo")["lease"]
    assert lease["epoch"] == 2 and lease["holder"]["worktree"] == str(other)
    assert [e["why"] for e in lease["epochs"]] == ["first write", "lease expired"]
    late = run_repo.sg("checkpoint", "--step", "the first holder wakes up")
    assert late.returncode == 4 and "taken over" in late.stderr and str(other) in late.stderr
