"""An effect run after the last checkpoint reaches the machine that takes over, and never runs twice.

Machine A checkpoints, then applies a migration (an effect: it appends a line to a file outside both clones,
the "database") and dies before its next checkpoint. Machine B syncs, takes the run over and tries the same
key: the record A published when the effect was attempted and when it completed decides, not B's ledger.
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
from conftest import SG
from test_takeover import Machine, machine, remote_ledger, remote_with_a_published_run


def migration(db: Path, *, hang: bool = False) -> list[str]:
    code = f"open({str(db)!r}, 'a').write('applied\\n')" + ("; import time; time.sleep(600)" if hang else "")
    return ["effect", "run", "--key", "migrate-0042", "--kind", "db_migration", "--reversible", "--",
            sys.executable, "-c", code]


def remote_effect(origin: Path, key: str) -> dict[str, Any]:
    return next((e for e in remote_ledger(origin).get("effects", []) if e["key"] == key), {})


def wait_remote_state(origin: Path, key: str, state: str) -> None:
    deadline = time.monotonic() + 60
    while remote_effect(origin, key).get("state") != state and time.monotonic() < deadline:
        time.sleep(0.2)
    assert remote_effect(origin, key).get("state") == state, remote_ledger(origin).get("effects")


@pytest.fixture
def two_machines(tmp_path: Path) -> tuple[Machine, Machine, Path, Path]:
    origin = remote_with_a_published_run(tmp_path)
    a = machine(tmp_path, origin, "machine-a")
    a.write("calc.py", a.read("calc.py") + "# A step 1\n")
    a.ok("checkpoint", "--step", "A step 1", "--next", "apply migration 0042")
    return a, machine(tmp_path, origin, "machine-b"), origin, tmp_path / "db.txt"


def take_over(b: Machine) -> dict[str, Any]:
    b.ok("sync")
    proc = b.sg("resume", "demo", "--adopt", "--take-over", "--no-run", "--json")
    assert proc.returncode in (0, 4), proc.stderr
    return dict(json.loads(proc.stdout))


def migrated_then_taken_over(a: Machine, b: Machine, db: Path) -> dict[str, Any]:
    """A runs the migration, B takes the run over; A's record of it."""
    assert a.sg(*migration(db)).returncode == 0
    record = next(e for e in a.ledger("demo")["effects"] if e["key"] == "migrate-0042")
    take_over(b)
    return record


def test_a_completed_effect_with_no_checkpoint_after_it_is_not_run_again_on_machine_b(
        two_machines: tuple[Machine, Machine, Path, Path]) -> None:
    a, b, origin, db = two_machines
    b.ok("sync")
    assert b.sg("resume", "demo", "--adopt", "--no-run").returncode in (0, 4)  # B holds A's checkpoint #1 now
    assert b.ledger("demo")["checkpoint"]["seq"] == 1 and not b.ledger("demo")["effects"]
    assert a.sg(*migration(db)).returncode == 0
    wait_remote_state(origin, "migrate-0042", "completed")  # published without a checkpoint
    synced = b.ok("sync")  # checkpoint #1 in both records: B's ledger stays, A's effect must still count
    assert "recorded in another clone" in synced.stderr and "migrate-0042" in synced.stderr
    report = take_over(b)
    assert report["source"]["kind"] != "published" and "effects_brought" not in report  # brought by the sync
    assert report["effects"][0]["state"] == "completed" and not report["effects"][0]["safe_to_repeat"]
    proc = b.sg(*migration(db))
    assert proc.returncode == 0, proc.stderr
    assert "already completed" in proc.stdout and "not run again" in proc.stdout
    assert db.read_text() == "applied\n"  # once, on A
    effect = b.ledger("demo")["effects"][0]
    assert effect["state"] == "completed" and "recorded on host" in effect["history"][-1]["result"]
    # B's next checkpoint carries it: a third machine taking over from B sees it without A's commits
    b.write("calc.py", b.read("calc.py") + "# B step 2\n")
    b.ok("checkpoint", "--step", "B step 2")
    deadline = time.monotonic() + 60
    while remote_ledger(origin)["checkpoint"]["step"] != "B step 2" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert remote_ledger(origin)["checkpoint"]["step"] == "B step 2"
    assert remote_effect(origin, "migrate-0042")["state"] == "completed"


def test_an_effect_whose_machine_died_mid_way_is_unknown_on_machine_b_until_reconciled(
        two_machines: tuple[Machine, Machine, Path, Path]) -> None:
    a, b, origin, db = two_machines
    agent = subprocess.Popen([*SG, *migration(db, hang=True)], cwd=a.path, env={**os.environ, **a.env},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_remote_state(origin, "migrate-0042", "attempted")  # pushed before the command started
        deadline = time.monotonic() + 30
        while not db.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        agent.send_signal(signal.SIGKILL)  # machine A dies mid-migration
        agent.wait()
    report = take_over(b)
    assert report["decision"] == "escalate", report
    assert any("migrate-0042" in reason for reason in report["reasons"]), report["reasons"]
    proc = b.sg(*migration(db))
    assert proc.returncode == 1 and "outcome is unknown" in proc.stderr, proc.stderr
    assert db.read_text() == "applied\n"
    b.ok("effect", "reconcile", "migrate-0042", "--state", "completed", "--evidence", "schema shows 0042")
    proc = b.sg(*migration(db))
    assert proc.returncode == 0 and "already completed" in proc.stdout
    assert db.read_text() == "applied\n"


def publish_late(b: Machine, document: dict[str, Any]) -> None:
    """A ledger commit another clone pushes only now, on top of what B already read; B has not fetched it."""
    blob = b.run(["git", "hash-object", "-w", "--stdin"], input=json.dumps(document)).stdout.strip()
    tree = b.run(["git", "mktree"], input=f"100644 blob {blob}\tledger.json\n").stdout.strip()
    ref = "refs/shift-remote/origin/shift/ledgers/demo"
    commit = b.git("commit-tree", tree, "-p", b.git("rev-parse", ref).strip(), "-m",
                   "shiftgit ledger: demo\n\nShift-Host: machine-a").strip()
    b.git("push", "-q", "origin", f"{commit}:refs/shift/ledgers/demo")  # as A's publisher would
    b.git("update-ref", ref, b.git("rev-parse", f"{commit}^").strip())


@pytest.mark.parametrize("same_run", [True, False])
def test_effect_run_brings_in_a_record_fetched_after_the_takeover(
        two_machines: tuple[Machine, Machine, Path, Path], same_run: bool) -> None:
    a, b, origin, db = two_machines
    record = migrated_then_taken_over(a, b, db)  # B's ledger: A's completed migration
    # A's later word on it (undone); or the word of another run that clones elsewhere also named "demo"
    created = b.ledger("demo")["created_at"] if same_run else "2001-01-01T00:00:00Z"
    publish_late(b, {**b.ledger("demo"), "created_at": created,
                     "effects": [{**record, "state": "compensated", "updated_at": "2999-01-01T00:00:00Z"}]})
    proc = b.sg(*migration(db))
    assert db.read_text() == "applied\n"
    if not same_run:
        assert proc.returncode == 0 and "already completed" in proc.stdout and not proc.stderr
        assert b.ledger("demo")["effects"][0]["state"] == "completed"
        return
    assert proc.returncode == 1 and "compensated" in proc.stderr, proc.stderr
    assert "recorded in another clone" in proc.stderr and '"machine-a"' in proc.stderr
    effect = b.ledger("demo")["effects"][0]
    assert effect["state"] == "compensated" and effect["history"][0]["state"] == "completed"
    assert "another clone" not in b.sg(*migration(db)).stderr  # read once: that commit is remembered as seen


def test_nothing_published_costs_no_ledger_read_and_an_own_effect_is_not_brought_back(
        two_machines: tuple[Machine, Machine, Path, Path]) -> None:
    a, _, _, db = two_machines
    assert a.sg(*migration(db)).returncode == 0
    again = a.sg(*migration(db))
    assert again.returncode == 0 and "another clone" not in again.stderr
    assert [e["state"] for e in a.ledger("demo")["effects"]] == ["completed"]
    assert len(a.ledger("demo")["effects"][0]["history"]) == 1  # its own completion: nothing brought back
    tip = a.git("log", "-1", "--format=%s%n%(trailers:key=Shift-Epoch)", "refs/shift/ledgers/demo").splitlines()
    assert tip[:2] == ["shiftgit ledger: demo effects since checkpoint 1", "Shift-Epoch: 1"]
    seen = (a.path / ".git/shift/effects-seen").read_text().split()
    assert a.git("rev-parse", "refs/shift/ledgers/demo").strip() in seen  # its own commits: never read back


def test_a_later_attempt_that_died_beats_an_earlier_attempt_that_failed(
        two_machines: tuple[Machine, Machine, Path, Path]) -> None:
    a, b, origin, db = two_machines
    failing = [*migration(db)[:-2], "-c", "import sys; sys.exit(3)"]
    assert a.sg(*failing).returncode == 3  # attempt 1 fails: the key may run again
    agent = subprocess.Popen([*SG, *migration(db, hang=True)], cwd=a.path, env={**os.environ, **a.env},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while remote_effect(origin, "migrate-0042").get("attempts") != 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        while not db.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        agent.send_signal(signal.SIGKILL)  # attempt 2 dies mid-migration
        agent.wait()
    report = take_over(b)  # both commits unseen here: attempt 1's failure must not win
    assert report["decision"] == "escalate" and report["effects"][0]["state"] == "unknown", report["effects"]
    proc = b.sg(*migration(db))
    assert proc.returncode == 1 and "outcome is unknown" in proc.stderr, proc.stderr
    assert db.read_text() == "applied\n"


def test_a_record_the_schema_refuses_is_named_once_and_its_key_waits_for_a_human(
        two_machines: tuple[Machine, Machine, Path, Path]) -> None:
    """B cannot bring in what A's ledger says of `bad-1`, but it does say A ran it: B must not run it again."""
    a, b, origin, db = two_machines
    record = migrated_then_taken_over(a, b, db)
    bad = {**record, "key": "bad-1", "exit_code": "zero", "attempts": 2}
    failed = {**record, "key": "bad-2", "exit_code": "one", "state": "failed"}  # may run again anyway
    unusable = {**record, "key": "bad key", "exit_code": "zero"}  # no key to hold it by
    service = {**record, "key": "service:web", "kind": "service", "attempts": 9,
               "process": {"host": "x", "pid": os.getpid(), "start": None}}
    publish_late(b, {**b.ledger("demo"), "effects": [*b.ledger("demo")["effects"], bad, failed, unusable, service]})
    synced = b.sg("sync")
    assert synced.returncode == 0 and "Traceback" not in synced.stderr, synced.stderr
    assert 'effect "bad-1"' in synced.stderr and "was not brought in" in synced.stderr and "exit_code" in synced.stderr
    assert 'effect "bad-1": outcome unknown here' in synced.stderr, synced.stderr
    effects = {e["key"]: e for e in b.ledger("demo")["effects"]}
    assert set(effects) == {"migrate-0042", "bad-1"}  # neither bad-2, "bad key" nor the service
    stub = effects["bad-1"]
    assert stub["state"] == "unknown" and stub["kind"] == "db_migration" and stub["attempts"] == 2
    assert not stub.get("argv") and stub.get("exit_code") is None and "could not be brought in" in stub["result"]
    job = ("effect", "run", "--key", "k", "--kind", "job", "--repeatable", "--", "true")
    for args in (("checkpoint", "--step", "B step 2"), job):
        proc = b.sg(*args)
        assert proc.returncode == 0 and "not brought in" not in proc.stderr, proc.stderr  # said once
    again = ("effect", "run", "--key", "bad-1", "--kind", "other", "--", sys.executable, "-c",
             f"open({str(db)!r}, 'a').write('bad-1 again\\n')")
    proc = b.sg(*again)
    assert proc.returncode == 1 and "outcome is unknown" in proc.stderr and "effect reconcile bad-1" in proc.stderr
    assert "bad-1 again" not in db.read_text()
    b.ok("effect", "reconcile", "bad-1", "--state", "failed", "--evidence", "not in the schema table")
    assert b.sg(*again[:5], "db_migration", "--reversible", *again[6:]).returncode == 0
    assert db.read_text().endswith("bad-1 again\n")


def test_a_record_whose_command_gives_a_secret_is_not_brought_in_nor_pushed_again(
        two_machines: tuple[Machine, Machine, Path, Path]) -> None:
    """Another clone's ledger never went through this clone's `effect run`, which refuses such a command."""
    a, b, origin, db = two_machines
    record = migrated_then_taken_over(a, b, db)
    word = "hunter2" + "xyz"
    leaky = {**record, "key": "deploy-1", "argv": ["mysql", "-u", "root", "--password", word]}
    probed = {**record, "key": "deploy-2", "probe": f"sshpass -p {word} ssh db true"}
    publish_late(b, {**b.ledger("demo"), "effects": [*b.ledger("demo")["effects"], leaky, probed]})
    synced = b.sg("sync")
    assert synced.returncode == 0 and "Traceback" not in synced.stderr, synced.stderr
    for key, where in (("deploy-1", "effect.argv: argv[4], the word after --password"),
                       ("deploy-2", "effect.probe: argv[2], the word after sshpass's -p")):
        assert f'effect "{key}"' in synced.stderr and f"looks like a secret ({where})" in synced.stderr
    assert word not in synced.stderr and word not in b.ledger_path("demo").read_text()
    effects = {e["key"]: e for e in b.ledger("demo")["effects"]}  # A ran them: B holds their keys, nothing more
    assert set(effects) == {"migrate-0042", "deploy-1", "deploy-2"}
    assert all(effects[k]["state"] == "unknown" and not effects[k].get("argv") and not effects[k].get("probe")
               for k in ("deploy-1", "deploy-2")), effects
    b.write("calc.py", b.read("calc.py") + "# B step 2\n")
    b.ok("checkpoint", "--step", "B step 2")
    b.ok("sync")
    assert remote_ledger(origin)["checkpoint"]["step"] == "B step 2"
    assert word not in json.dumps(remote_ledger(origin))  # what B published on top carries none of it
    proc = b.sg("resume", "demo", "--adopt", "--no-run")  # nothing newer to adopt: B's record is the newest
    assert "Traceback" not in proc.stderr and word not in b.ledger_path("demo").read_text()


def test_resume_adopt_refuses_a_published_ledger_whose_command_gives_a_secret(
        two_machines: tuple[Machine, Machine, Path, Path]) -> None:
    a, b, origin, _ = two_machines
    b.ok("sync")
    published = remote_ledger(origin)
    a.ok("check", "--name", "unit", "--", sys.executable, "-c", "pass")
    check = {**a.ledger("demo")["pending_checks"][0], "argv": ["sshpass", "-p", "hunter2" + "xyz", "ssh", "h", "true"]}
    publish_late(b, {**published, "pending_checks": [check]})
    b.ok("sync")
    before = b.ledger_path("demo").read_bytes()
    proc = b.sg("resume", "demo", "--adopt", "--no-run")
    assert proc.returncode == 2 and "looks like a secret in a recorded command" in proc.stderr, proc.stderr
    assert "pending_checks[0]: argv[2], the word after sshpass's -p" in proc.stderr and "nothing was adopted" in \
        proc.stderr and "Traceback" not in proc.stderr
    assert b.ledger_path("demo").read_bytes() == before and "hunter2" not in b.read("calc.py")
