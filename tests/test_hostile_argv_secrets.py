"""A secret given as a word of its own in a command a ledger records, when shiftgit did not record it: a hand-edited
ledger, or one another clone published. The commit gate (with a run active and without), `sync`'s push and the
absorbing of another clone's effect records refuse it as they refuse any other secret (ledger/commandsecrets.py).

Arranged with git and by editing files, acted on with the real CLI and real `git commit`, asserted with git.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CALC, Repo

WORD = "hunter2" + "xyz"  # built at run time: this file holds no secret in a form a scanner would flag
FORMS = [
    ["mysql", "-u", "root", "--password", WORD],
    ["sshpass", "-p", WORD, "ssh", "db.example.invalid", "true"],
    [f"PGPASSWORD={WORD}", "psql", "-c", "select 1"],
    ["mysql", f"-p{WORD}", "-e", "select 1"],
    ["sh", "-c", f"sshpass -p {WORD} ssh host true"],
]


def checkpointed_with_a_check(repo: Repo) -> None:
    repo.ok("check", "--name", "unit", "--", sys.executable, "-c", "pass")
    repo.write("calc.py", CALC + "\n# step\n")
    repo.ok("checkpoint", "--step", "step")


def add_pending_check(repo: Repo, argv: list[str], tail: str = "") -> None:
    """By hand, as a person (or another tool) would: a check record copied from the checkpoint, another command."""
    document = repo.ledger("demo")
    check = {**document["checkpoint"]["checks"][0], "id": f"c-by-hand-{len(document.get('pending_checks', []))}",
             "name": "by-hand", "argv": argv}
    check["output_tail"] = tail or check["output_tail"]
    document["pending_checks"] = [*document.get("pending_checks", []), check]
    repo.ledger_path("demo").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def validated_file(repo: Repo) -> str:
    gitdir = Path(repo.git("rev-parse", "--absolute-git-dir").strip())
    return (gitdir / "shift" / "validated").read_text()


def refused(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "looks like a secret" in proc.stderr and "in a recorded command, pending_checks[" in proc.stderr
    assert WORD not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("argv", FORMS, ids=["--password", "sshpass", "env", "-pS", "sh -c"])
def test_the_gate_refuses_a_hand_edited_ledger_whose_command_gives_a_secret(run_repo: Repo, argv: list[str]) -> None:
    checkpointed_with_a_check(run_repo)
    add_pending_check(run_repo, argv)
    refused(run_repo.commit("step"))
    assert run_repo.git("log", "-1", "--format=%s").strip() == "start demo"


def test_a_hand_edited_secret_shiftgit_wrote_again_is_still_refused(run_repo: Repo) -> None:
    """A ledger shiftgit writes is marked scanned clean, so the gate skips scanning it: a write of a ledger holding a
    person's command with a secret in it must not earn that mark."""
    checkpointed_with_a_check(run_repo)
    add_pending_check(run_repo, FORMS[0])
    run_repo.write("calc.py", CALC + "\n# step 2\n")
    run_repo.ok("checkpoint", "--step", "step 2")  # read, changed and written by shiftgit
    assert WORD in run_repo.ledger_path("demo").read_text()
    proc = run_repo.commit("step 2")
    assert proc.returncode == 1 and "in a recorded command" in proc.stderr, proc.stderr


def test_past_the_clean_scan_size_a_write_vouches_only_for_commands_it_judged(run_repo: Repo) -> None:
    """A ledger over validated.CLEAN_SCAN_MAX is text-scanned by the gate, whose command check then rests on the
    `written` mark: a write earns it only when no recorded command gives a secret."""
    from shiftgit.ledger.validated import CLEAN_SCAN_MAX, WRITTEN, blob_id

    checkpointed_with_a_check(run_repo)
    add_pending_check(run_repo, [sys.executable, "-c", "pass"], tail="ok\n" * (CLEAN_SCAN_MAX // 3))
    run_repo.write("calc.py", CALC + "\n# step 2\n")
    run_repo.ok("checkpoint", "--step", "step 2")  # written whole (hand-edited bytes), every command judged
    data = run_repo.ledger_path("demo").read_bytes()
    assert len(data) > CLEAN_SCAN_MAX and WRITTEN + blob_id(data) in validated_file(run_repo).split()
    add_pending_check(run_repo, FORMS[0])
    run_repo.write("calc.py", CALC + "\n# step 3\n")
    run_repo.ok("checkpoint", "--step", "step 3")
    data = run_repo.ledger_path("demo").read_bytes()
    assert WORD.encode() in data and WRITTEN + blob_id(data) not in validated_file(run_repo).split()
    proc = run_repo.commit("step 3")  # (the checkpoint took the pending checks in)
    assert proc.returncode == 1 and "in a recorded command, checkpoint.checks[" in proc.stderr, proc.stderr


def test_a_ledger_shiftgit_wrote_is_still_marked_clean_and_commits(run_repo: Repo) -> None:
    checkpointed_with_a_check(run_repo)
    from shiftgit.ledger.validated import clean_token

    assert clean_token(run_repo.ledger_path("demo").read_bytes()) in validated_file(run_repo).split()
    assert run_repo.commit("step").returncode == 0


def test_with_no_active_run_a_staged_ledger_s_commands_are_still_judged(run_repo: Repo) -> None:
    checkpointed_with_a_check(run_repo)
    assert run_repo.commit("step").returncode == 0
    run_repo.ok("stop", "--reason", "user_paused")
    assert run_repo.commit("paused").returncode == 0
    gitdir = Path(run_repo.git("rev-parse", "--absolute-git-dir").strip())
    (gitdir / "shift" / "active").unlink()
    add_pending_check(run_repo, FORMS[1])
    proc = run_repo.commit("a ledger whose command holds a password, no run active here")
    assert proc.returncode == 1 and "holds what looks like a secret" in proc.stderr, proc.stderr
    assert "in a recorded command" in proc.stderr and WORD not in proc.stderr and "Traceback" not in proc.stderr
    run_repo.git("checkout", "HEAD", "--", ".shift")
    run_repo.write("README.md", "# calc\n")  # an idle commit passes
    assert run_repo.commit("idle").returncode == 0


def test_sync_does_not_push_a_ledger_ref_whose_command_gives_a_secret(run_repo: Repo, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    run_repo.git("remote", "add", "origin", str(remote))
    run_repo.git("push", "-q", "origin", "main")
    checkpointed_with_a_check(run_repo)
    add_pending_check(run_repo, FORMS[3])
    run_repo.write("calc.py", CALC + "\n# step 2\n")
    run_repo.ok("checkpoint", "--step", "step 2")  # commits the ledger to refs/shift/ledgers/demo
    proc = run_repo.sg("sync", "origin", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    (found,) = report["refused"]["refs/shift/ledgers/demo"]
    assert found["path"] == "ledger.json" and "a secret in a recorded command" in found["rule"], found
    assert "refs/shift/snapshots/demo" in report["pushed"]
    every = subprocess.run(["git", f"--git-dir={remote}", "cat-file", "--batch-all-objects", "--batch"],
                           capture_output=True, check=True).stdout
    assert WORD.encode() not in every


def test_a_commit_made_past_the_gate_is_refused_by_the_ci_check(run_repo: Repo) -> None:
    """`--no-verify` skips pre-commit: the pre-push gate and CI judge the committed ledger by the same rule."""
    base = run_repo.head()
    checkpointed_with_a_check(run_repo)
    add_pending_check(run_repo, FORMS[4])
    run_repo.git("add", "-A")
    run_repo.git("commit", "-q", "--no-verify", "-m", "past the gate")
    proc = run_repo.sg("ci", "check", f"{base}..HEAD", "--no-fetch")
    assert proc.returncode == 1 and "in a recorded command, pending_checks[" in proc.stdout + proc.stderr, \
        proc.stdout + proc.stderr
    assert WORD not in proc.stdout + proc.stderr
