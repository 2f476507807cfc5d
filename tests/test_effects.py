"""The side-effect ledger on real repos and real processes: at most once per key, policy, reconcile, record."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo


def with_demo_run(repo: Repo) -> Repo:
    """shiftgit initialised without hooks and run `demo` started (nothing committed: effects need no commit)."""
    repo.ok("init", "--hooks", "none")
    repo.ok("start", "demo", "--goal", "make calc correct", "--stop-when", "tests pass")
    return repo


@pytest.fixture
def effects_repo(repo: Repo) -> Repo:
    return with_demo_run(repo)


def appender(log: Path, text: str = "applied", code: int = 0) -> list[str]:
    """A command whose side effect is a line appended to `log` (so applications can be counted)."""
    return [sys.executable, "-c", f"import sys; open({str(log)!r}, 'a').write({text + chr(10)!r}); sys.exit({code})"]


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def effect_of(repo: Repo, key: str, run: str = "demo") -> dict[str, Any]:
    """The record as stored in the ledger file (read directly, not through shiftgit)."""
    return next(e for e in repo.ledger(run)["effects"] if e["key"] == key)


def run_effect(repo: Repo, key: str, *args: str, kind: str = "job") -> Any:
    return repo.sg("effect", "run", "--key", key, "--kind", kind, *args)


def test_a_completed_key_runs_once_and_returns_its_recorded_result(effects_repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "warm.log"
    first = run_effect(effects_repo, "warm-1", "--repeatable", "--", *appender(log))
    assert first.returncode == 0, first.stderr
    for _ in range(2):
        again = effects_repo.sg("effect", "run", "--key", "warm-1", "--kind", "job", "--json", "--", *appender(log))
        assert again.returncode == 0
        report = json.loads(again.stdout)
        assert report["ran"] is False and report["state"] == "completed" and report["exit_code"] == 0
    assert lines(log) == ["applied"]
    stored = effect_of(effects_repo, "warm-1")
    assert stored["state"] == "completed" and stored["attempts"] == 1 and stored["reversibility"] == "repeatable"
    assert [(h["state"], h["attempt"], h["exit_code"]) for h in stored["history"]] == [("completed", 1, 0)]
    assert stored["runner"]["pid"] > 0 and stored["argv"] == appender(log)
    effects_repo.ok("validate")


def test_the_recorded_output_is_redacted(effects_repo: Repo, tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    cmd = [sys.executable, "-c", "import os; print('token', os.environ['TOK'])"]
    proc = effects_repo.sg("effect", "run", "--key", "print-1", "--kind", "job", "--repeatable", "--", *cmd,
                       env={"TOK": token})
    assert proc.returncode == 0
    assert token not in effects_repo.ledger_path("demo").read_text()
    assert "REDACTED" in effect_of(effects_repo, "print-1")["output_tail"]


def test_a_forbidden_or_unlisted_kind_is_refused_before_anything_is_recorded(repo: Repo, tmp_path: Path) -> None:
    repo.ok("init", "--hooks", "none")
    repo.ok("start", "r", "--goal", "g", "--stop-when", "s", "--forbid", "deploy", "--allow", "db_migration")
    before = repo.ledger_path("r").read_bytes()
    log = tmp_path / "x.log"
    for kind in ("deploy", "message"):
        proc = repo.sg("effect", "run", "--key", "k", "--kind", kind, "--repeatable", "--", *appender(log))
        assert proc.returncode == 2 and kind in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert lines(log) == [] and repo.ledger_path("r").read_bytes() == before


def test_an_irreversible_effect_needs_a_live_grant_for_its_own_key(effects_repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "mail.log"
    args = ("--kind", "message", "--")  # no reversibility flag: irreversible by default
    proc = effects_repo.sg("effect", "run", "--key", "mail", *args, *appender(log))
    assert proc.returncode == 1 and "approval request mail" in proc.stderr
    assert "effects" not in effects_repo.ledger("demo") or not effects_repo.ledger("demo")["effects"]
    effects_repo.ok("approval", "request", "other", "--reason", "unrelated")
    effects_repo.ok("approval", "grant", "other", "--by", "lead")
    effects_repo.ok("approval", "request", "mail", "--reason", "tell users")
    assert effects_repo.sg("effect", "run", "--key", "mail", *args, *appender(log)).returncode == 1
    effects_repo.ok("approval", "deny", "mail", "--by", "lead", "--reason", "not today")
    assert effects_repo.sg("effect", "run", "--key", "mail", *args, *appender(log)).returncode == 1
    assert effects_repo.sg("approval", "grant", "mail", "--by", "lead").returncode == 2  # denied: ask again first
    effects_repo.ok("approval", "request", "mail", "--reason", "tomorrow then")
    effects_repo.ok("approval", "grant", "mail", "--by", "lead", "--expires-in", "30")
    _expire(effects_repo, "mail")
    assert effects_repo.json("approval", "list")[1]["state"] == "expired"
    assert effects_repo.sg("effect", "run", "--key", "mail", *args, *appender(log)).returncode == 1
    assert lines(log) == []
    effects_repo.ok("approval", "request", "mail", "--reason", "once more")
    effects_repo.ok("approval", "grant", "mail", "--by", "lead")
    effects_repo.ok("effect", "run", "--key", "mail", *args, *appender(log))
    assert lines(log) == ["applied"]
    stored = next(a for a in effects_repo.ledger("demo")["approvals"] if a["key"] == "mail")
    assert [h["state"] for h in stored["history"]] == ["requested", "denied", "requested", "granted", "requested"]


def _expire(repo: Repo, key: str) -> None:
    """Let time pass: move the grant's expiry into the past (as if 30 minutes went by)."""
    path = repo.ledger_path("demo")
    document = json.loads(path.read_text())
    for approval in document["approvals"]:
        if approval["key"] == key:
            approval["expires_at"] = "2000-01-01T00:00:00Z"
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def test_grant_needs_a_request_and_refuses_inside_an_agent_session(effects_repo: Repo) -> None:
    proc = effects_repo.sg("approval", "grant", "never-asked", "--by", "lead")
    assert proc.returncode == 2 and "approval request never-asked" in proc.stderr
    effects_repo.ok("approval", "request", "k", "--reason", "r")
    proc = effects_repo.sg("approval", "grant", "k", "--by", "agent", env={"CLAUDECODE": "1"})
    assert proc.returncode == 2 and "agent session" in proc.stderr
    assert effects_repo.json("approval", "list")[0]["state"] == "requested"


def test_a_failed_key_may_run_again_and_exit_codes_pass_through(effects_repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    proc = run_effect(effects_repo, "job-1", "--reversible", "--", *appender(log, "try", code=3))
    assert proc.returncode == 3
    assert effect_of(effects_repo, "job-1")["state"] == "failed"
    effects_repo.ok("effect", "run", "--key", "job-1", "--kind", "job", "--", *appender(log, "ok"))
    stored = effect_of(effects_repo, "job-1")
    assert stored["state"] == "completed" and stored["attempts"] == 2 and stored["reversibility"] == "reversible"
    assert lines(log) == ["try", "ok"]


def test_a_key_names_one_effect(effects_repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    effects_repo.ok("effect", "run", "--key", "k", "--kind", "job", "--repeatable", "--", *appender(log))
    for args in (("--kind", "other", "--repeatable"), ("--kind", "job", "--irreversible")):
        proc = effects_repo.sg("effect", "run", "--key", "k", *args, "--", *appender(log))
        assert proc.returncode == 2 and "a key names one effect" in proc.stderr
    assert lines(log) == ["applied"]


def test_bad_input_is_one_line_and_writes_nothing(effects_repo: Repo, tmp_path: Path) -> None:
    before = effects_repo.ledger_path("demo").read_bytes()
    cases = [
        ("effect", "run", "--key", "bad key", "--kind", "job", "--", "true"),
        ("effect", "run", "--key", "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5", "--kind", "job", "--", "true"),
        ("effect", "run", "--key", "k", "--kind", "", "--", "true"),
        ("effect", "run", "--key", "k", "--kind", "job", "--repeatable"),
        ("effect", "run", "--key", "k", "--kind", "job", "--probe", "'unclosed", "--", "true"),
        ("effect", "run", "--key", "k", "--kind", "job", "--", "curl", "-H",
         "Authorization: Bearer ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
        ("effect", "reconcile", "nope", "--state", "failed"),
        ("effect", "reconcile", "nope"),
        ("approval", "request", "k", "--reason", " "),
        ("service", "start", "--name", "../x", "--", "true"),
    ]
    for args in cases:
        proc = effects_repo.sg(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert effects_repo.ledger_path("demo").read_bytes() == before


def test_a_timed_out_effect_is_unknown_and_waits_for_a_human(effects_repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    slow = [sys.executable, "-c", f"import time; open({str(log)!r}, 'a').write('x\\n'); time.sleep(30)"]
    proc = run_effect(effects_repo, "slow", "--reversible", "--timeout", "1", "--", *slow)
    assert proc.returncode == 124
    assert effect_of(effects_repo, "slow")["state"] == "unknown"
    again = run_effect(effects_repo, "slow", "--", *appender(log))
    assert again.returncode == 1 and "effect reconcile slow" in again.stderr
    assert lines(log) == ["x"]


def test_reconcile_by_hand_and_by_probe(effects_repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    marker = tmp_path / "deployed"
    probe = f"{sys.executable} -c \"import os, sys; sys.exit(0 if os.path.exists({str(marker)!r}) else 1)\""
    slow = [sys.executable, "-c", "import time; time.sleep(30)"]
    proc = run_effect(effects_repo, "d", "--reversible", "--probe", probe, "--timeout", "0.5", "--", *slow)
    assert proc.returncode == 124
    proc = effects_repo.sg("effect", "reconcile", "d", "--probe")  # no terminal, no --yes: refused
    assert proc.returncode == 2 and "--yes" in proc.stderr
    effects_repo.ok("effect", "reconcile", "d", "--probe", "--yes")
    assert effect_of(effects_repo, "d")["state"] == "failed"  # the probe said: it did not happen
    marker.write_text("7")
    effects_repo.ok("effect", "reconcile", "d", "--probe", "--yes", "--by", "ops")
    stored = effect_of(effects_repo, "d")
    assert stored["state"] == "completed" and stored["history"][-1]["probe_exit_code"] == 0
    assert stored["history"][-1]["by"] == "ops"
    effects_repo.ok("effect", "run", "--key", "d", "--kind", "job", "--", *appender(log))  # completed: replayed
    assert lines(log) == []
    proc = effects_repo.sg("effect", "reconcile", "d", "--state", "failed")  # completed is final
    assert proc.returncode == 1 and "new key" in proc.stderr
    effects_repo.ok("effect", "reconcile", "d", "--state", "compensated", "--evidence", "rolled back by hand")
    for args in (("--state", "completed"), ("--probe", "--yes")):  # compensated is final too
        assert effects_repo.sg("effect", "reconcile", "d", *args).returncode == 1
    proc = run_effect(effects_repo, "d", "--", *appender(log))
    assert proc.returncode == 1 and "compensated" in proc.stderr and lines(log) == []
    proc = effects_repo.sg("effect", "reconcile", "d", "--state", "failed", "--probe")
    assert proc.returncode == 2


def test_record_logs_an_outside_effect_even_when_the_contract_forbids_it(repo: Repo) -> None:
    repo.ok("init", "--hooks", "none")
    repo.ok("start", "r", "--goal", "g", "--stop-when", "s", "--forbid", "deploy")
    proc = repo.sg("effect", "record", "--key", "hotfix", "--kind", "deploy", "--evidence", "done by ops at 10:02")
    assert proc.returncode == 0 and "forbid" not in proc.stdout and "breaks the contract" in proc.stderr
    stored = repo.ledger("r")["effects"][0]
    assert stored["state"] == "completed" and stored["reversibility"] == "irreversible"
    assert stored["evidence"] == "done by ops at 10:02"
    proc = repo.sg("effect", "record", "hotfix", "--kind", "deploy")
    assert proc.returncode == 2 and "effect reconcile hotfix" in proc.stderr
    repo.ok("effect", "record", "pr-1", "--kind", "pull_request", "--reversible", "--state", "failed")
    assert [e["state"] for e in repo.ledger("r")["effects"]] == ["completed", "failed"]


def test_effects_outlive_checkpoints_and_stay_valid(effects_repo: Repo, tmp_path: Path) -> None:
    effects_repo.ok("effect", "run", "--key", "a", "--kind", "job", "--repeatable", "--", *appender(tmp_path / "a"))
    effects_repo.ok("approval", "request", "b", "--reason", "r")
    effects_repo.write("calc.py", effects_repo.read("calc.py") + "\n# more\n")
    effects_repo.ok("checkpoint", "--step", "s1")
    effects_repo.ok("checkpoint", "--step", "s2")
    ledger = effects_repo.ledger("demo")
    assert [e["key"] for e in ledger["effects"]] == ["a"] and [a["key"] for a in ledger["approvals"]] == ["b"]
    effects_repo.ok("validate")
