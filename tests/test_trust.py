"""trust: commands recorded elsewhere run only after a person trusts them here (or CI pins them)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Repo
from verify_helpers import clone, edit_ledger, record_check, script

from shiftgit.ledger.trustdb import command_digest


@pytest.fixture(autouse=True)
def no_agent_markers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This suite may itself run inside a coding agent; trust refuses there (tested explicitly below)."""
    for name in list(os.environ):
        if name in ("CLAUDECODE", "GEMINI_CLI") or name.startswith("CODEX_"):
            monkeypatch.delenv(name)
    yield


def _marker_check(repo: Repo, marker: Path) -> list[str]:
    argv = script(f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')")
    record_check(repo, argv, name="marker")
    assert marker.read_text() == "ran"
    marker.unlink()
    return argv


def _entries(data: Path) -> list[Path]:
    return sorted((data / "shiftgit" / "trust").glob("*/*.json"))


def test_check_trusts_what_it_ran_in_this_clone_outside_the_repo(run_repo: Repo, isolated: Path,
                                                                  tmp_path: Path) -> None:
    argv = _marker_check(run_repo, tmp_path / "marker")
    clone_id = (run_repo.path / ".git" / "shift" / "clone-id").read_text().strip()
    [entry] = _entries(isolated / "data")
    assert entry.parent.name == clone_id
    assert entry.name == command_digest(argv, ".") + ".json"
    assert json.loads(entry.read_text())["argv"] == argv
    assert run_repo.git("status", "--porcelain") == ""  # nothing of trust lands in the repository
    assert run_repo.json("verify")["result"] == "reproduced"
    assert (tmp_path / "marker").read_text() == "ran"


def test_a_fresh_clone_refuses_until_a_person_trusts(run_repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    argv = _marker_check(run_repo, marker)
    other = clone(run_repo, tmp_path / "elsewhere")
    env = {"XDG_DATA_HOME": str(tmp_path / "another-user")}
    proc = other.sg("verify", "demo", "--json", env=env)
    assert proc.returncode == 3, proc.stderr
    report = json.loads(proc.stdout)
    assert report["result"] == "refused" and report["checks"] == []
    [untrusted] = report["untrusted"]
    assert untrusted["argv"] == argv and untrusted["sha256"] == command_digest(argv, ".")
    assert untrusted["provenance"]["commit"] == run_repo.head()
    assert untrusted["recorded_by"].startswith("Ada Example <ada@example.com> in " + run_repo.head()[:12])
    assert not marker.exists()
    human = other.sg("verify", env=env)
    assert human.returncode == 3 and sys.executable in human.stdout and "shiftgit trust demo" in human.stdout

    proc = other.sg("trust", "--yes", env=env)
    assert proc.returncode == 0, proc.stderr
    assert sys.executable in proc.stdout and "Ada Example" in proc.stdout
    assert not marker.exists()  # trusting runs nothing
    assert other.sg("verify", env=env).returncode == 0
    assert marker.read_text() == "ran"
    assert other.git("status", "--porcelain") == ""


def test_the_same_clone_for_another_user_refuses_too(run_repo: Repo, tmp_path: Path) -> None:
    _marker_check(run_repo, tmp_path / "marker")
    proc = run_repo.sg("verify", env={"XDG_DATA_HOME": str(tmp_path / "someone-else")})
    assert proc.returncode == 3 and not (tmp_path / "marker").exists()


def test_a_worktree_of_the_same_clone_shares_trust(run_repo: Repo, tmp_path: Path) -> None:
    _marker_check(run_repo, tmp_path / "marker")
    run_repo.git("worktree", "add", "-q", str(tmp_path / "wt"), "HEAD")
    worktree = Repo(tmp_path / "wt")
    assert worktree.sg("verify", "demo").returncode == 0


def test_trust_is_bound_to_the_exact_command(run_repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    argv = _marker_check(run_repo, marker)
    evil = script(f"import pathlib; pathlib.Path({str(marker)!r}).write_text('evil')")

    def swap(document: dict) -> None:  # what a pull could bring: same check, another command
        document["checkpoint"]["checks"][0]["argv"] = evil

    edit_ledger(run_repo, "demo", swap)
    proc = run_repo.sg("verify", "--json")
    assert proc.returncode == 3 and not marker.exists()
    assert json.loads(proc.stdout)["untrusted"][0]["argv"] == evil
    edit_ledger(run_repo, "demo", lambda d: d["checkpoint"]["checks"][0].update(argv=argv, cwd="tests"))
    assert run_repo.sg("verify").returncode == 3  # the same argv elsewhere is another command


def test_ci_pins_commands_by_digest(run_repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    argv = _marker_check(run_repo, marker)
    env = {"XDG_DATA_HOME": str(tmp_path / "ci")}
    wrong = "0" * 64
    assert run_repo.sg("verify", "--expect-sha256", wrong, env=env).returncode == 3
    proc = run_repo.sg("verify", "--expect-sha256", "nothex", env=env)
    assert proc.returncode == 2 and "64" in proc.stderr and not marker.exists()
    proc = run_repo.sg("verify", "--expect-sha256", command_digest(argv, ".").upper(), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert marker.read_text() == "ran"
    assert not (tmp_path / "ci" / "shiftgit" / "trust").exists()  # a pin is not a trust decision


def test_trust_refuses_inside_an_agent_and_without_a_terminal(run_repo: Repo, tmp_path: Path) -> None:
    _marker_check(run_repo, tmp_path / "marker")
    env = {"XDG_DATA_HOME": str(tmp_path / "fresh")}
    for marker_var in ({"CLAUDECODE": "1"}, {"CODEX_SANDBOX": "seatbelt"}, {"GEMINI_CLI": "1"}):
        proc = run_repo.sg("trust", "--yes", env={**env, **marker_var})
        assert proc.returncode == 3, (marker_var, proc.stderr)
        assert next(iter(marker_var)) in proc.stderr and "Traceback" not in proc.stderr
    proc = run_repo.sg("trust", env=env)
    assert proc.returncode == 2 and "--yes" in proc.stderr
    assert not (tmp_path / "fresh" / "shiftgit" / "trust").exists()
    proc = run_repo.sg("trust", "--yes", "--json", env=env)
    assert proc.returncode == 0 and len(json.loads(proc.stdout)["trusted"]) == 1
    proc = run_repo.sg("trust", "--yes", env=env)
    assert proc.returncode == 0 and "trusted in this clone" in proc.stdout
