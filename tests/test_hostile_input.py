"""Bad input and hostile state: one clear line, the documented exit code, no traceback, nothing written (issue 11)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CALC, SG, Repo, make_repo
from verify_helpers import edit_ledger

LINE_CAP = 1000  # what "one line" may hold at most (the CLI cuts its messages at 800 characters)


def refused(proc: subprocess.CompletedProcess[str], code: int = 2) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) <= LINE_CAP, proc.stderr


def files(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


# -- .shift cannot lead outside the work tree -----------------------------------------------------

@pytest.mark.parametrize("link", [".shift", ".shift/runs", ".shift/runs/demo", ".shift/runs/demo/ledger.json"])
def test_a_symlink_anywhere_on_shiftgits_paths_is_refused(run_repo: Repo, tmp_path: Path, link: str) -> None:
    outside = tmp_path / "outside"
    shutil.move(str(run_repo.path / link), str(outside))
    os.symlink(outside, run_repo.path / link)
    before = files(outside) if outside.is_dir() else {"": outside.read_bytes()}
    run_repo.write("calc.py", CALC + "\n# work\n")
    for args in (("checkpoint", "--step", "work"), ("constraint", "add", "no prod"), ("show",),
                 ("amend", "--goal", "g", "--reason", "r")):
        proc = run_repo.sg(*args)
        refused(proc)
        assert "symbolic link" in proc.stderr, (args, proc.stderr)
    proc = run_repo.sg("status")  # status names the refusal: for the store (exit 2) or beside the run (exit 1)
    assert proc.returncode in (1, 2) and "symbolic link" in proc.stdout + proc.stderr
    assert (files(outside) if outside.is_dir() else {"": outside.read_bytes()}) == before


def test_init_refuses_a_committed_shift_symlink_and_writes_nothing_there(repo: Repo, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink("../elsewhere", repo.path / ".shift")
    refused(repo.sg("init", "--hooks", "git"))
    refused(repo.sg("start", "r", "--goal", "g", "--stop-when", "s"))
    assert files(elsewhere) == {}


# -- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize("run_id", ["a.lock", "a..b", "aux.", "aux", "con.txt", "lpt1", "nul", "end.", "Upper",
                                    "-dash", "a/b", "a b", "x" * 65, "y" * 10_000, "tab\there", "esc\x1b[2J"])
def test_run_ids_git_or_windows_cannot_hold_are_refused_before_anything_is_written(run_repo: Repo,
                                                                                   run_id: str) -> None:
    before = files(run_repo.path / ".shift")
    proc = run_repo.sg("start", run_id, "--goal", "g", "--stop-when", "s")
    refused(proc)
    assert "\x1b" not in proc.stderr and ("bad run id" in proc.stderr or "No such option" in proc.stderr)
    assert files(run_repo.path / ".shift") == before


def test_a_run_dir_git_cannot_name_a_ref_after_is_skipped_and_named_not_fatal_for_every_run(run_repo: Repo) -> None:
    run_repo.ok("checkpoint", "--step", "one")
    assert run_repo.commit("checkpoint one").returncode == 0
    for bad in ("a..b", "x.lock", "end."):  # arrived in a commit or a copy: `start` refuses these names
        folder = run_repo.path / ".shift" / "runs" / bad
        folder.mkdir()
        (folder / "ledger.json").write_text(run_repo.ledger_path("demo").read_text().replace('"demo"', f'"{bad}"'))
    status = run_repo.sg("status", "--json")
    assert status.returncode == 1 and "Traceback" not in status.stderr, status.stderr
    assert [r["id"] for r in json.loads(status.stdout)["runs"]] == ["demo"]
    for proc in (status, run_repo.sg("resume", "--no-run"), run_repo.sg("log")):
        named = [line for line in proc.stderr.splitlines() if line.startswith("shiftgit: skipped")]
        assert len(named) == 3 and all("rename the directory" in line for line in named), proc.stderr
        assert '".shift/runs/a..b"' in named[0] and "Traceback" not in proc.stderr
    assert run_repo.sg("resume", "--no-run").returncode == 0 and run_repo.json("resume", "--no-run")["run"] == "demo"
    assert "demo #1" in run_repo.ok("log").stdout


@pytest.mark.parametrize("args", [
    ("checkpoint", "--step", "s", "--cost", "nan"), ("checkpoint", "--step", "s", "--cost", "inf"),
    ("checkpoint", "--step", "s", "--cost", "1e999"), ("amend", "--cost-budget", "inf", "--reason", "r"),
    ("amend", "--time-budget", "nan", "--reason", "r"), ("start", "n", "--goal", "g", "--stop-when", "s",
                                                          "--cost-budget", "-inf"),
    ("check", "--timeout", "nan", "--", "true"), ("amend", "--goal", "", "--reason", "r"),
    ("amend", "--stop-when", "   ", "--reason", "r"),
    ("effect", "run", "--key", "k-1", "--kind", "job", "--repeatable", "--bogus", "--", "true"),
    ("check", "--bogus", "--", "true"), ("service", "start", "--name", "web", "--bogus", "--", "true"),
    ("start", "n", "--goal", "g"), ("checkpoint", "--bogus"), ("bogus-command",), ("effect", "run", "--key", "k"),
    ("log", "-n", "9" * 30), ("log", "-n", "9" * 30, "--json"), ("checkpoint", "--step", "s", "--tokens", "9" * 30),
    ("checkpoint", "--step", "s", "--turn", "9" * 30), ("rollback", "--to", "9" * 30, "--yes"),
    ("runs", "--since", "0001-01-01T00:00:00+05:00"), ("insights", "--since", "0001-01-01T00:00:00+05:00"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(run_repo: Repo, args: tuple[str, ...]) -> None:
    run_repo.write("calc.py", CALC + "\n# work\n")
    before = files(run_repo.path / ".shift")
    refused(run_repo.sg(*args))
    assert files(run_repo.path / ".shift") == before


def test_numbers_too_large_for_a_date_are_one_line_exit_2_and_write_nothing(run_repo: Repo) -> None:
    run_repo.ok("approval", "request", "deploy", "--reason", "r")
    for minutes in ("1e308", "1e18"):
        before = files(run_repo.path / ".shift")
        proc = run_repo.sg("approval", "grant", "deploy", "--by", "lead", "--expires-in", minutes)
        refused(proc)
        assert "--expires-in" in proc.stderr and "year 9999" in proc.stderr
        assert files(run_repo.path / ".shift") == before
    config = json.loads((run_repo.path / ".shift" / "config.json").read_text())
    (run_repo.path / ".shift" / "config.json").write_text(json.dumps({**config, "lease": {"minutes": 1e308}}))
    before = files(run_repo.path / ".shift")
    proc = run_repo.sg("checkpoint", "--step", "s")
    refused(proc)
    assert ".shift/config.json" in proc.stderr and '"minutes"' in proc.stderr and "at most" in proc.stderr
    assert files(run_repo.path / ".shift") == before


def test_a_ledger_from_a_clone_holding_nan_is_corrupt_not_a_disabled_budget(run_repo: Repo) -> None:
    path = run_repo.ledger_path("demo")
    text = json.dumps({**run_repo.ledger("demo"), "spend": {"tokens": 0, "cost": "NAN", "minutes": 0}})
    path.write_text(text.replace('"NAN"', "NaN"))
    before = path.read_bytes()
    refused(run_repo.sg("constraint", "add", "x"))
    assert path.read_bytes() == before


def test_an_invalid_ledger_is_one_short_line(run_repo: Repo) -> None:
    def spoil(d: dict[str, object]) -> None:
        d.update(status="\n" + "z" * 5000, created_at=12, updated_at=[], spend="x")
    edit_ledger(run_repo, "demo", spoil)
    proc = run_repo.sg("show")
    refused(proc)
    assert "(+" in proc.stderr and "shiftgit validate" in proc.stderr


def test_a_hook_run_by_hand_outside_a_work_tree_says_one_line(tmp_path: Path) -> None:
    plain, bare = tmp_path / "plain", tmp_path / "bare.git"
    plain.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    for where in (plain, bare):
        for hook in ("pre-commit", "commit-msg", "post-commit", "post-rewrite"):
            proc = subprocess.run([*SG, "hook", hook], cwd=where, env=env, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL)
            assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
            assert len(proc.stderr.strip().splitlines()) == 1 and "not inside a git work tree" in proc.stderr


@pytest.mark.parametrize("pointer", ["bytes", "directory", "garbage"])
def test_an_unreadable_active_run_pointer_is_one_line_for_the_gate_and_the_cli(run_repo: Repo, pointer: str) -> None:
    path = Path(run_repo.git("rev-parse", "--absolute-git-dir").strip()) / "shift" / "active"
    path.unlink()
    if pointer == "directory":
        path.mkdir()
        (path / "x").write_text("x")
    else:
        path.write_bytes(b"\xff\xfe\x00bad" if pointer == "bytes" else b"../../etc/passwd\n")
    run_repo.write("calc.py", CALC + "\n# work\n")
    proc = run_repo.commit("work")
    assert proc.returncode == 1 and "active-run pointer" in proc.stderr and "Traceback" not in proc.stderr
    refused(run_repo.sg("checkpoint", "--step", "s"))
    proc = run_repo.sg("status", "--json")
    assert proc.returncode == 1 and "active-run pointer" in json.loads(proc.stdout)["active_error"]
    run_repo.ok("checkpoint", "--run", "demo", "--step", "named explicitly")  # a named run still works


def test_a_file_name_that_is_not_utf8_is_recorded_escaped_and_committed(run_repo: Repo) -> None:
    try:
        Path(os.fsdecode(os.fsencode(run_repo.path) + b"/caf\xe9.txt")).write_bytes(b"menu\n")
    except OSError as exc:
        pytest.skip(f"this file system refuses non-UTF-8 file names: {exc}")
    run_repo.ok("checkpoint", "--step", "beside a latin-1 name")
    assert {"path": "caf\\xe9.txt", "id": run_repo.git("hash-object", "--", os.fsdecode(b"caf\xe9.txt")).strip(),
            "status": "A"} in run_repo.ledger("demo")["checkpoint"]["files"]
    assert run_repo.commit("latin-1").returncode == 0  # the gate matches the escaped name
    run_repo.ok("log")
    run_repo.json("resume", "--no-run")


def test_status_lists_healthy_runs_beside_broken_ones(run_repo: Repo) -> None:
    run_repo.ok("start", "healthy", "--goal", "g", "--stop-when", "s")
    run_repo.ok("start", "second", "--goal", "g", "--stop-when", "s")
    run_repo.ledger_path("demo").write_text('{"schema_version": 1, "run": "de')
    run_repo.ledger_path("second").write_text(json.dumps({"schema_version": 99}))
    proc = run_repo.sg("status", "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    runs = {r["id"]: r for r in json.loads(proc.stdout)["runs"]}
    assert "corrupt JSON" in runs["demo"]["error"] and "upgrade shiftgit" in runs["second"]["error"]
    assert runs["healthy"]["status"] == "active" and "error" not in runs["healthy"]
    proc = run_repo.sg("status")
    assert proc.returncode == 1 and "healthy" in proc.stdout and "UNREADABLE" in proc.stdout


def test_a_service_recorded_on_another_host_is_unknown_here(run_repo: Repo) -> None:
    identity = {"host": "build-box-7", "boot": "x", "pid": os.getpid(), "start": 1}
    edit_ledger(run_repo, "demo", lambda d: d.update(effects=[{
        "key": "service:web", "kind": "service", "reversibility": "reversible", "state": "completed", "argv": ["x"],
        "created_at": "2026-01-01T00:00:00Z", "name": "web", "pid": os.getpid(), "port": None,
        "process": identity}]))
    assert socket.gethostname() != "build-box-7"
    service = run_repo.json("resume", "--no-run", codes=(0, 3, 4))["services"][0]
    assert (service["alive"], service["liveness"], service["host"]) == (None, "unknown", "build-box-7")
    rows = run_repo.json("service", "list")
    assert rows[0]["alive"] is None and rows[0]["host"] == "build-box-7"
    assert 'unknown (recorded on host "build-box-7"' in run_repo.sg("service", "list").stdout
    briefing = run_repo.json("resume", "--no-run", codes=(0, 3, 4))["briefing"]
    assert 'unknown (recorded on host "build-box-7", not this one)' in briefing


def test_a_sha256_repository_checkpoints_commits_syncs_and_rolls_back(tmp_path: Path) -> None:
    made = subprocess.run(["git", "init", "-q", "--object-format=sha256", str(tmp_path / "probe")],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"this git cannot make sha256 repositories: {made.stderr.strip()}")
    path = tmp_path / "work"
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", "--object-format=sha256", str(path)], check=True)
    repo = make_repo(path)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "--object-format=sha256", str(remote)], check=True)
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("init", "--hooks", "git")
    assert repo.commit("set up").returncode == 0
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    repo.write("calc.py", CALC + "\n# sha256 step\n")
    repo.ok("check", "--name", "unit", "-q", "--", sys.executable, "-c", "pass")
    repo.ok("checkpoint", "--step", "a sha256 step")
    assert repo.commit("sha256 step").returncode == 0
    assert len(repo.head()) == 64 and "a sha256 step" in repo.git("notes", "--ref=shift", "show", "HEAD")
    repo.git("push", "-q", "origin", "main")
    assert repo.json("sync", "origin")["refused"] == {}
    assert repo.json("verify")["result"] == "reproduced"
    repo.write("calc.py", "half\n")
    repo.ok("rollback", "--yes")
    assert "# sha256 step" in repo.read("calc.py")
    pushed = subprocess.run(["git", f"--git-dir={remote}", "for-each-ref", "refs/shift/"], capture_output=True,
                            text=True, check=True).stdout
    assert "refs/shift/snapshots/demo" in pushed


def test_a_record_without_a_field_the_schema_leaves_optional_is_named_in_the_ledgers_words(run_repo: Repo) -> None:
    """A hand-edited effect without `created_at` passes the schema but no record can hold it: one line naming the
    record and the field (not Python's `__init__()` wording), exit 2, the ledger left as it is."""
    run_repo.ok("effect", "run", "--key", "k1", "--kind", "job", "--repeatable", "--", "true")
    ledger = run_repo.ledger("demo")
    del ledger["effects"][0]["created_at"]
    run_repo.ledger_path("demo").write_text(json.dumps(ledger, indent=2, sort_keys=True) + "\n")
    before = run_repo.ledger_path("demo").read_bytes()
    for args in (("show",), ("checkpoint", "--step", "s")):
        proc = run_repo.sg(*args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert "invalid ledger: effect record without 'created_at'" in proc.stderr and "__init__" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert run_repo.ledger_path("demo").read_bytes() == before
