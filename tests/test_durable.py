"""A write is durable or nothing changes: file size limits, full disks, read-only file systems (issue 11).

The size limit is `ulimit -f` (RLIMIT_FSIZE) set for the shiftgit process alone. The full disk and
the read-only file system are real mounts (a small tmpfs, a read-only bind) made in a private user
and mount namespace (`unshare -rm`), so nothing outside the test sees them; where the machine
cannot make one, those tests are skipped with the reason.
"""

from __future__ import annotations

import os
import resource
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CALC, SG, Repo

LONG = "do not touch the billing tables before the audit is over " * 60


def _one_line_exit_2(code: int, stderr: str) -> None:
    assert code == 2, (code, stderr)
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr


def _limited(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.parametrize("slack", [0, 100, 1000])
def test_the_file_size_limit_never_replaces_a_ledger_with_a_short_one(run_repo: Repo, slack: int) -> None:
    path = run_repo.ledger_path("demo")
    before = path.read_bytes()
    proc = subprocess.run([*SG, "constraint", "add", LONG], cwd=run_repo.path, capture_output=True, text=True,
                          preexec_fn=lambda: _limited(len(before) + slack))
    assert path.read_bytes() == before, "the ledger was replaced"
    _one_line_exit_2(proc.returncode, proc.stderr)
    assert "file size limit" in proc.stderr and "the old file is intact" in proc.stderr
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")], "a temp file was left behind"
    run_repo.ok("constraint", "add", LONG)  # with room again, the same write goes through
    assert LONG in path.read_text()


def _namespaces() -> str | None:
    """Why this machine cannot make private mounts, or None when it can."""
    if not shutil.which("unshare"):
        return "no `unshare` here"
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d"],
                          capture_output=True, text=True)
    return None if proc.returncode == 0 else f"cannot make a private mount: {proc.stderr.strip()}"


NO_NAMESPACES = _namespaces()
needs_mounts = pytest.mark.skipif(NO_NAMESPACES is not None, reason=str(NO_NAMESPACES))


def _in_namespace(setup: str, repo: Path, commands: list[list[str]], out: Path) -> list[tuple[int, str]]:
    """Run `setup` (sh, may mount), then each command in `repo`; (exit code, stderr) of each."""
    out.mkdir()
    lines = [setup, f"cd {shlex.quote(str(repo))}"]
    for n, argv in enumerate(commands):
        lines.append(f"{shlex.join(argv)} >/dev/null 2>{out}/{n}.err </dev/null; echo $? >{out}/{n}.rc")
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", " && ".join(lines[:2]) + "\n" + "\n".join(lines[2:])],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return [(int((out / f"{n}.rc").read_text()), (out / f"{n}.err").read_text()) for n in range(len(commands))]


@needs_mounts
def test_a_full_disk_leaves_every_ledger_as_it_was(run_repo: Repo, tmp_path: Path) -> None:
    mount = tmp_path / "small"
    mount.mkdir()
    run_repo.write("calc.py", CALC + "\n# work\n")
    setup = (f"mount -t tmpfs -o size=4m tmpfs {mount} && cp -a {run_repo.path} {mount}/work && "
             f"(dd if=/dev/zero of={mount}/filler bs=4096 2>/dev/null; true) && "
             f"cp {mount}/work/.shift/runs/demo/ledger.json {tmp_path}/before.json")
    after = f"cp {mount}/work/.shift/runs/demo/ledger.json {tmp_path}/after.json"
    commands = [[*SG, "constraint", "add", LONG], [*SG, "checkpoint", "--step", "on a full disk"],
                [*SG, "amend", "--goal", "g2", "--reason", "r"], ["sh", "-c", after]]
    results = _in_namespace(setup, mount / "work", commands, tmp_path / "out")
    for code, stderr in results[:-1]:
        _one_line_exit_2(code, stderr)
        assert "nothing" in stderr or "refused" in stderr, stderr
    assert (tmp_path / "after.json").read_bytes() == (tmp_path / "before.json").read_bytes()


@needs_mounts
def test_a_read_only_file_system_is_one_line_for_every_writer(run_repo: Repo, tmp_path: Path) -> None:
    run_repo.write("calc.py", CALC + "\n# work\n")
    before = run_repo.ledger_path("demo").read_bytes()
    root = shlex.quote(str(run_repo.path))
    setup = f"mount --bind {root} {root} && mount -o remount,ro,bind {root}"
    commands = [[*SG, "constraint", "add", "x"], [*SG, "checkpoint", "--step", "s"],
                [*SG, "check", "--", sys.executable, "-c", "pass"], [*SG, "start", "other", "--goal", "g",
                                                                     "--stop-when", "s"],
                [*SG, "effect", "run", "--key", "k-1", "--kind", "job", "--repeatable", "--", "true"],
                [*SG, "resume"], [*SG, "rollback", "--yes"], [*SG, "init", "--hooks", "git"],
                [*SG, "stop", "--reason", "user_paused"]]
    for argv, (code, stderr) in zip(commands, _in_namespace(setup, run_repo.path, commands, tmp_path / "out"),
                                    strict=True):
        assert "Traceback" not in stderr, (argv, stderr)
        _one_line_exit_2(code, stderr)
    assert run_repo.ledger_path("demo").read_bytes() == before
    assert os.access(run_repo.ledger_path("demo"), os.W_OK)  # the mount was private to the namespace
