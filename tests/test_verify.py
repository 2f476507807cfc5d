"""verify: rerun the recorded checks exactly, classify each against the record, report drift."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import CALC, Repo
from verify_helpers import BROKEN_SUB, commit_without_handoff, exit_with, record_check, record_failing, script

from shiftgit.ledger.model import Check
from shiftgit.recovery.verify import Observation, classify


def _verify(repo: Repo, *args: str) -> tuple[int, dict]:
    proc = repo.sg("verify", *args, "--json")
    assert "Traceback" not in proc.stderr and proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_a_true_record_reproduces_and_nothing_is_written(run_repo: Repo) -> None:
    record_failing(run_repo)
    before = run_repo.ledger_path("demo").read_bytes()
    code, report = _verify(run_repo)
    assert code == 0
    assert report["result"] == "reproduced"
    [check] = report["checks"]
    assert check["verdict"] == "reproduced"
    assert check["now"]["failing"] == ["tests/test_calc.py::test_sub"] == check["recorded"]["failing"]
    assert check["now"]["exit_code"] == 1
    assert report["drift"]["head_matches"] is True
    assert report["drift"]["files"] == [] and report["drift"]["commits"] == []
    assert run_repo.ledger_path("demo").read_bytes() == before
    assert run_repo.git("status", "--porcelain") == ""


def test_a_new_failure_is_a_regression_and_drift_names_the_file(run_repo: Repo) -> None:
    record_failing(run_repo)
    run_repo.write("calc.py", BROKEN_SUB.replace("return a + b\n\n\ndef sub", "return a * b\n\n\ndef sub"))
    code, report = _verify(run_repo)
    assert code == 1
    assert report["result"] == "mismatch"
    [check] = report["checks"]
    assert check["verdict"] == "regressed"
    assert "tests/test_calc.py::test_add" in check["now"]["failing"]
    assert [f["path"] for f in report["drift"]["files"]] == ["calc.py"]
    assert report["drift"]["uncovered"] == ["calc.py"]  # the check declared no --covers


def test_fixing_the_bug_is_newly_passing(run_repo: Repo) -> None:
    record_failing(run_repo)
    run_repo.write("calc.py", CALC)
    code, report = _verify(run_repo)
    assert code == 1
    assert report["checks"][0]["verdict"] == "newly_passing"
    assert report["checks"][0]["now"]["exit_code"] == 0


def test_an_unparsed_runner_compares_exit_codes_only(run_repo: Repo, tmp_path: Path) -> None:
    code_file = tmp_path / "code"
    code_file.write_text("3")
    record_check(run_repo, exit_with(code_file), code=3)
    assert _verify(run_repo)[1]["checks"][0]["verdict"] == "reproduced"
    code_file.write_text("4")
    code, report = _verify(run_repo)
    assert code == 1
    assert report["checks"][0]["verdict"] == "changed"
    assert report["checks"][0]["recorded"]["exit_code"] == 3 and report["checks"][0]["now"]["exit_code"] == 4
    code_file.write_text("0")
    assert _verify(run_repo)[1]["checks"][0]["verdict"] == "newly_passing"


def test_a_command_that_alternates_is_flaky(run_repo: Repo, tmp_path: Path) -> None:
    toggle = tmp_path / "toggle"
    alternate = script(f"import os, sys\np = {str(toggle)!r}\n"
                       "if os.path.exists(p):\n    os.remove(p); sys.exit(0)\nopen(p, 'w').close(); sys.exit(1)")
    record_check(run_repo, alternate, code=1)
    code, report = _verify(run_repo, "--repeat", "3")
    assert code == 1
    [check] = report["checks"]
    assert check["verdict"] == "flaky"
    assert [r["exit_code"] for r in check["runs"]] in ([0, 1, 0], [1, 0, 1])


def test_changed_files_no_check_covers_are_named(run_repo: Repo) -> None:
    record_check(run_repo, script("pass"), "--covers", "calc.py", "--covers", "tests/**")
    run_repo.write("calc.py", CALC + "\n# touched\n")
    run_repo.write("tests/test_more.py", "def test_x():\n    pass\n")
    run_repo.write("docs/notes.md", "new\n")
    code, report = _verify(run_repo)
    assert code == 0  # the check itself still reproduces; the drift is reported beside it
    assert sorted(f["path"] for f in report["drift"]["files"]) == ["calc.py", "docs/notes.md", "tests/test_more.py"]
    assert report["drift"]["uncovered"] == ["docs/notes.md"]


def test_commits_since_the_checkpoint_are_drift(run_repo: Repo) -> None:
    record_check(run_repo, script("pass"))
    run_repo.write("README.md", "a human change\n")
    commit_without_handoff(run_repo, "a commit without a handoff", env={"GIT_AUTHOR_NAME": "Bo Other"})
    head = run_repo.head()
    code, report = _verify(run_repo)
    drift = report["drift"]
    assert drift["head_matches"] is False
    assert [c["commit"] for c in drift["commits"]] == [head]
    assert drift["commits"][0]["author"].startswith("Bo Other")
    assert "README.md" in [f["path"] for f in drift["files"]]


def test_no_checkpoint_or_no_checks_is_no_checks(run_repo: Repo) -> None:
    code, report = _verify(run_repo)
    assert (code, report["result"]) == (0, "no_checks")
    run_repo.ok("checkpoint", "--step", "nothing checked")
    code, report = _verify(run_repo)
    assert (code, report["result"], report["checks"]) == (0, "no_checks", [])


def test_the_recorded_cwd_and_timeout_are_used(run_repo: Repo) -> None:
    run_repo.write("sub/marker.txt", "here\n")
    proc = run_repo.sg("check", "--name", "cwd", "-q", "--cwd", "sub", "--timeout", "1", "--",
                       *script("import os, sys; sys.exit(0 if os.path.exists('marker.txt') else 5)"))
    assert proc.returncode == 0, proc.stderr
    run_repo.ok("checkpoint", "--step", "cwd check")
    assert _verify(run_repo)[1]["checks"][0]["verdict"] == "reproduced"
    (run_repo.path / "sub" / "marker.txt").unlink()
    report = _verify(run_repo)[1]
    assert report["checks"][0]["now"]["exit_code"] == 5
    assert report["checks"][0]["verdict"] == "regressed"


def test_a_check_that_now_hangs_is_killed_at_its_recorded_timeout(run_repo: Repo, tmp_path: Path) -> None:
    flag = tmp_path / "hang"
    record_check(run_repo, script(f"import os, time\nif os.path.exists({str(flag)!r}): time.sleep(60)"),
                 "--timeout", "1")
    flag.write_text("")
    report = _verify(run_repo)[1]
    [check] = report["checks"]
    assert check["now"]["timed_out"] is True and check["now"]["exit_code"] is None
    assert check["verdict"] == "regressed"
    assert check["now"]["duration_s"] < 30


def test_human_output_is_short_and_names_the_verdict(run_repo: Repo) -> None:
    record_failing(run_repo)
    run_repo.write("calc.py", CALC)
    proc = run_repo.sg("verify")
    assert proc.returncode == 1
    assert "newly_passing" in proc.stdout and "now passing: tests/test_calc.py::test_sub" in proc.stdout


def _check(exit_code: int | None, failing: tuple[str, ...] = (), runner: str = "pytest") -> Check:
    outcome = {"runner": runner, "passed": 3 - len(failing), "failed": len(failing), "skipped": 0,
               "failing": list(failing)}
    return Check(id="k-1", name="t", argv=("pytest",), started_at="2024-01-01T00:00:00Z", exit_code=exit_code,
                 outcome=outcome, failing=failing)


def _obs(check: Check) -> Observation:
    return Observation(check.exit_code, False, 0.1, check.outcome)


def test_classify_compares_failing_ids_not_just_exit_codes() -> None:
    recorded = _check(1, ("a",))
    assert classify(recorded, [_obs(_check(1, ("a",)))]) == "reproduced"
    assert classify(recorded, [_obs(_check(1, ("b",)))]) == "regressed"
    assert classify(recorded, [_obs(_check(1, ("a", "b")))]) == "regressed"
    assert classify(_check(1, ("a", "b")), [_obs(_check(1, ("a",)))]) == "newly_passing"
    assert classify(recorded, [_obs(_check(0))]) == "newly_passing"
    assert classify(_check(0), [_obs(_check(1, ("a",)))]) == "regressed"
    assert classify(recorded, [_obs(_check(1, ("a",))), _obs(_check(0))]) == "flaky"
    assert classify(_check(2, runner="exit_code"), [_obs(_check(3, runner="exit_code"))]) == "changed"


def test_junit_evidence_is_reread_after_the_rerun(run_repo: Repo, tmp_path: Path) -> None:
    failing = tmp_path / "failing"
    failing.write_text("test_one")
    run_repo.write(".gitignore", run_repo.read(".gitignore") + "build/\n")
    writer = script(
        "import os, sys\n"
        f"bad = open({str(failing)!r}).read()\n"
        "cases = ''.join(f'<testcase classname=\"suite\" name=\"{n}\">' + ('<failure/>' if n == bad else '')"
        " + '</testcase>' for n in ('test_one', 'test_two', 'test_three'))\n"
        "os.makedirs('build', exist_ok=True)\n"
        "open('build/report.xml', 'w').write(f'<testsuite tests=\"3\">{cases}</testsuite>')\n"
        "sys.exit(1)")
    record_check(run_repo, writer, "--junit", "build/report.xml", code=1)
    recorded = run_repo.ledger("demo")["checkpoint"]["checks"][0]
    assert recorded["outcome"]["runner"] == "junit" and recorded["outcome"]["failed"] == 1
    assert _verify(run_repo)[1]["checks"][0]["verdict"] == "reproduced"
    failing.write_text("test_two")  # same exit code, same counts, another failing test
    code, report = _verify(run_repo)
    [check] = report["checks"]
    assert code == 1 and check["verdict"] == "regressed"
    assert any("test_two" in test for test in check["now"]["failing"])
    assert not any("test_two" in test for test in check["recorded"]["failing"])
