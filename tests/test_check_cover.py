"""A failure is cleared only by a check that covers it: a narrower rerun under the same name leaves it failing."""

from __future__ import annotations

from typing import Any

from conftest import CALC, PYTEST, Repo

from shiftgit.ledger.checkstates import clears
from shiftgit.ledger.model import Check

BROKEN = CALC.replace("return a - b", "return a + b")
NARROW = [*PYTEST[:-1], "tests/test_calc.py::test_add"]  # the same suite, one passing test of it


def _unit(repo: Repo) -> dict[str, Any]:
    [entry] = [c for c in repo.json("resume", "--no-run", codes=(0, 3, 4))["checks"] if c["name"] == "unit"]
    return entry  # type: ignore[no-any-return]


def test_a_narrower_pass_under_the_same_name_keeps_the_wider_failure(run_repo: Repo) -> None:
    run_repo.write("calc.py", BROKEN)
    assert run_repo.sg("check", "--name", "unit", "-q", "--", *PYTEST).returncode == 1
    proc = run_repo.sg("check", "--name", "unit", "-q", "--", *NARROW)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    [said] = [line for line in proc.stderr.splitlines() if "still fail" in line]
    assert "does not cover" in said and "tests/test_calc.py::test_add" in said
    run_repo.ok("checkpoint", "--step", "ran the suite, then one test")

    report = run_repo.json("resume", "--no-run", codes=(0, 3, 4))
    [failing] = report["failing_checks"]
    assert (failing["name"], failing["argv"], failing["failing"]) == ("unit", PYTEST, ["tests/test_calc.py::test_sub"])
    assert failing["state"] == "failed" and failing["not_cleared_by"][0]["argv"] == NARROW
    assert "did not clear it" in report["briefing"]
    recorded = run_repo.ledger("demo")["checkpoint"]["checks"]
    assert [(c["argv"], c["exit_code"]) for c in recorded] == [(PYTEST, 1), (NARROW, 0)]  # both kept
    verify = run_repo.json("verify", codes=(0, 1))
    assert sorted(c["argv"][-1] for c in verify["checks"]) == ["tests", "tests/test_calc.py::test_add"]

    run_repo.write("calc.py", CALC)
    assert run_repo.sg("check", "--name", "unit", "-q", "--", *PYTEST).returncode == 0  # the same command clears it
    run_repo.ok("checkpoint", "--step", "fixed sub")
    assert _unit(run_repo)["state"] == "passed" and run_repo.json("resume", "--no-run")["failing_checks"] == []
    assert [c["argv"] for c in run_repo.ledger("demo")["checkpoint"]["checks"]] == [PYTEST]


def _check(*argv: str, cwd: str = ".") -> Check:
    return Check(id="k", name="unit", argv=argv, cwd=cwd, started_at="2026-01-01T00:00:00Z")


def test_what_covers_a_command() -> None:
    wide = _check("pytest", "tests")
    assert clears(wide, wide) and clears(_check("pytest"), wide)
    assert clears(wide, _check("pytest", "tests/test_a.py")) and clears(wide, _check("pytest", "tests/a.py::test_x"))
    assert clears(_check("pytest", "tests/"), _check("pytest", "tests/test_a.py"))
    assert not clears(_check("pytest", "tests/test_a.py"), wide)
    assert not clears(_check("pytest", "-k", "x", "tests"), wide)
    assert not clears(wide, _check("pytest", "tests2/test_a.py"))
    assert not clears(_check("pytest", "tests", cwd="sub"), wide)
    assert not clears(_check("tox"), wide)
