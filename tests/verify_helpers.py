"""Arrangements shared by the verify / resume / rollback / trust tests (real repos, the real CLI)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from conftest import CALC, PYTEST, Repo

BROKEN_SUB = CALC.replace("return a - b", "return a + b")


def script(code: str) -> list[str]:
    """A check command that needs no test runner: `python -c CODE`."""
    return [sys.executable, "-c", code]


def exit_with(path: Path) -> list[str]:
    """A check whose exit code is whatever integer the file holds (an unparsed runner)."""
    return script(f"import sys; sys.exit(int(open({str(path)!r}).read()))")


def record_failing(repo: Repo, step: str = "found the sub bug") -> None:
    """sub() broken; a pytest check records 1 passed / 1 failed; checkpoint; commit with the ledger."""
    repo.write("calc.py", BROKEN_SUB)
    proc = repo.sg("check", "--name", "unit", "-q", "--", *PYTEST)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    repo.ok("checkpoint", "--step", step, "--next", "fix sub()", "--done-when", "test_sub passes")
    assert repo.commit(step).returncode == 0


def record_check(repo: Repo, argv: list[str], *extra: str, code: int = 0, name: str = "probe") -> None:
    proc = repo.sg("check", "--name", name, "-q", *extra, "--", *argv)
    assert proc.returncode == code, proc.stdout + proc.stderr
    repo.ok("checkpoint", "--step", f"recorded {name}")
    assert repo.commit(f"checkpoint {name}").returncode == 0


def edit_ledger(repo: Repo, run: str, change: Any) -> None:
    """Arrange a ledger state no command on this branch writes (effects, approvals): edit the JSON."""
    document = repo.ledger(run)
    change(document)
    repo.ledger_path(run).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def clone(repo: Repo, target: Path) -> Repo:
    repo.run(["git", "clone", "-q", "--no-local", str(repo.path), str(target)])  # objects as a remote sends them
    assert (target / ".git").is_dir()
    return Repo(target)


def commit_without_handoff(repo: Repo, message: str, env: dict[str, str] | None = None) -> None:
    """What a person does behind the run's back: commit, skipping the commit gate."""
    repo.git("add", "-A")
    proc = repo.run(["git", "commit", "-q", "--no-verify", "-m", message], env=env)
    assert proc.returncode == 0, proc.stderr
