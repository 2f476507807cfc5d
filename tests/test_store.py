"""The .shift/ store: atomic writes under SIGKILL, corrupt and newer ledgers refused, untouched."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from conftest import SG, Repo

WRITER = """
import sys
from pathlib import Path
from shiftgit.ledger.store import write_atomic
path = Path(sys.argv[1])
i = 0
while True:
    i += 1
    write_atomic(path, (('{"n": %d, "pad": "' % i) + 'x' * 200000 + '"}\\n').encode())
"""


def test_sigkill_during_atomic_writes_never_tears_the_file(tmp_path) -> None:
    target = tmp_path / "ledger.json"
    target.write_text('{"n": 0}\n')
    rng = random.Random(7)
    for _ in range(40):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)])
        time.sleep(rng.uniform(0.01, 0.15))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        json.loads(target.read_text())  # old or new, never torn
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "ledger.json"]
    assert all(name.endswith(".tmp") for name in leftovers)


def test_kill_storm_on_checkpoint_leaves_a_valid_ledger_and_no_stale_temp(run_repo: Repo) -> None:
    rng = random.Random(11)
    path = run_repo.ledger_path("demo")
    for i in range(15):
        run_repo.write("calc.py", f"# {i}\n" + run_repo.read("calc.py"))
        proc = subprocess.Popen([*SG, "checkpoint", "--step", f"s{i}", "--note", "n" * 3000],
                                cwd=run_repo.path, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 0.5))
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        assert run_repo.ok("validate").returncode == 0
    run_repo.ok("checkpoint", "--step", "after")
    assert run_repo.ledger("demo")["checkpoint"]["step"] == "after"
    assert not list(path.parent.glob(".*.tmp"))


@pytest.mark.parametrize("command", [("status",), ("show", "demo"), ("checkpoint", "--step", "x"),
                                     ("constraint", "add", "x"), ("stop", "--reason", "user_paused")])
def test_corrupt_ledger_is_named_and_left_untouched(run_repo: Repo, command: tuple[str, ...]) -> None:
    path = run_repo.ledger_path("demo")
    path.write_text('{"schema_version": 1, "run": ')
    proc = run_repo.sg(*command)
    assert proc.returncode == 2
    assert ".shift/runs/demo/ledger.json" in proc.stderr and "corrupt JSON" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert path.read_text() == '{"schema_version": 1, "run": '


def test_newer_schema_version_asks_for_an_upgrade_and_writes_nothing(run_repo: Repo) -> None:
    path = run_repo.ledger_path("demo")
    document = run_repo.ledger("demo")
    document["schema_version"] = 3
    document["something_new"] = {"a": 1}
    path.write_text(json.dumps(document))
    before = path.read_bytes()
    for command in (("checkpoint", "--step", "x"), ("status",), ("constraint", "add", "y")):
        proc = run_repo.sg(*command)
        assert proc.returncode == 2 and "upgrade shiftgit" in proc.stderr
    assert path.read_bytes() == before


def test_validate_lists_every_error_with_its_json_path(run_repo: Repo) -> None:
    path = run_repo.ledger_path("demo")
    document = run_repo.ledger("demo")
    document["constraints"][0]["status"] = "maybe"
    document["contract"]["goal"] = 7
    path.write_text(json.dumps(document))
    proc = run_repo.sg("validate")
    assert proc.returncode == 1
    assert "$.constraints[0].status" in proc.stdout and "$.contract.goal" in proc.stdout


def test_active_run_is_per_worktree(run_repo: Repo, tmp_path) -> None:
    other = tmp_path / "other"
    run_repo.git("worktree", "add", "-q", "-b", "other", str(other))
    second = Repo(other)
    second.ok("start", "second", "--goal", "g", "--stop-when", "s")
    assert second.json("status")["active"] == "second"
    assert run_repo.json("status")["active"] == "demo"
    env_pick = run_repo.sg("status", "--json", env={"SHIFT_RUN": "demo"})
    assert json.loads(env_pick.stdout)["active"] == "demo"


def test_the_cycle_collector_is_held_off_only_inside_and_as_it_was_after() -> None:
    import gc

    from shiftgit.ledger.reading import GcPaused

    assert gc.isenabled()
    try:
        with GcPaused():
            assert not gc.isenabled()
            with GcPaused():  # nested (status reads, Store.update reads under it)
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()
        with GcPaused():
            pass
        assert not gc.isenabled()  # off before: left off
    finally:
        gc.enable()


def test_an_interim_write_is_durable_but_not_listed_as_validated(run_repo: Repo) -> None:
    import dataclasses

    from shiftgit.ledger import validated
    from shiftgit.ledger.store import Store

    store = Store.open(run_repo.path)
    store.update("demo", lambda ledger: dataclasses.replace(ledger, status="stopped"), interim=True)
    data = run_repo.ledger_path("demo").read_bytes()
    assert json.loads(data)["status"] == "stopped"  # on disk, as any write
    assert not validated.is_known(store.repo.git_dir, data)  # `effect run`'s `planned`: `attempted` follows at once
    assert store.read("demo").status == "stopped"  # this process goes on from what it wrote
    assert Store.open(run_repo.path).read("demo").status == "stopped"  # another reader checks the bytes whole
    assert validated.is_known(store.repo.git_dir, data)
    store.update("demo", lambda ledger: dataclasses.replace(ledger, status="active"))
    assert validated.is_written(store.repo.git_dir, run_repo.ledger_path("demo").read_bytes())
