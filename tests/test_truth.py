"""The record tells the whole truth (issue 9): check states carried forward, acceptance checks, the receipt
from the record, resume's decisions, budgets, verify first, recovery plans, where the work lives.

Real repositories, real `python -m shiftgit` processes; assertions read git and the committed ledger.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import CALC, PYTEST, SG, Repo

BROKEN = CALC.replace("return a - b", "return a + b")
PASS = [sys.executable, "-c", "pass"]
AGENT = {"CLAUDECODE": "1"}


def failing_unit(repo: Repo) -> None:
    repo.write("calc.py", BROKEN)
    assert repo.sg("check", "--name", "unit", "--", *PYTEST).returncode == 1
    repo.ok("checkpoint", "--step", "found the sub bug")


def by_name(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in entries}


def resume(repo: Repo, *args: str, codes: tuple[int, ...] = (0, 3, 4)) -> dict[str, Any]:
    return repo.json("resume", *args, codes=codes)  # type: ignore[no-any-return]


# -- check states ------------------------------------------------------------------------------------

def test_a_failure_is_carried_through_later_checkpoints_into_the_committed_ledger(run_repo: Repo) -> None:
    failing_unit(run_repo)
    for step in ("smoke", "lint"):
        run_repo.ok("check", "--name", step, "--", *PASS)
        run_repo.ok("checkpoint", "--step", f"ran {step}")
    assert run_repo.commit("three checkpoints").returncode == 0
    committed = json.loads(run_repo.git("show", "HEAD:.shift/runs/demo/ledger.json"))
    checks = by_name(committed["checkpoint"]["checks"])
    assert set(checks) == {"unit", "smoke", "lint"}
    assert checks["unit"]["exit_code"] == 1 and checks["unit"]["checkpoint"] == 1
    assert "tests/test_calc.py::test_sub" in checks["unit"]["failing"]
    assert checks["lint"]["checkpoint"] == 3 and committed["checkpoint"]["seq"] == 3


def test_retire_takes_a_check_out_and_a_rerun_brings_it_back(run_repo: Repo) -> None:
    failing_unit(run_repo)
    run_repo.ok("check", "--retire", "unit", "--reason", "replaced by unit-fast")
    run_repo.ok("checkpoint", "--step", "retired")
    assert "unit" not in by_name(resume(run_repo, "--no-run")["checks"])
    assert run_repo.ledger("demo")["retired"][0]["checkpoint"] == 2
    run_repo.write("calc.py", CALC)
    run_repo.ok("check", "--name", "unit", "--", *PYTEST)
    run_repo.ok("checkpoint", "--step", "unit is back")
    run_repo.ok("checkpoint", "--step", "and stays")
    assert by_name(resume(run_repo, "--no-run")["checks"])["unit"]["state"] == "passed"


def test_retire_needs_a_reason_and_runs_no_command(run_repo: Repo) -> None:
    failing_unit(run_repo)
    before = run_repo.ledger_path("demo").read_bytes()
    for args in (("--retire", "unit"), ("--retire", "unit", "--reason", "r", "--", "true")):
        proc = run_repo.sg("check", *args)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert run_repo.ledger_path("demo").read_bytes() == before


# -- schema 2 -------------------------------------------------------------------------------------------

def test_a_schema_1_ledger_with_free_text_acceptance_still_reads(run_repo: Repo) -> None:
    document = run_repo.ledger("demo")
    document["schema_version"] = 1
    document["contract"]["accept"] = ["the login page loads"]
    run_repo.ledger_path("demo").write_text(json.dumps(document))
    entry = by_name(resume(run_repo, "--no-run")["checks"])["accept-1"]
    assert entry["state"] == "never_attempted" and entry["argv"] == []
    proc = run_repo.sg("finish", "--status", "completed")
    assert proc.returncode == 1 and "amend --accept accept-1=CMD" in proc.stderr
    proc = run_repo.sg("accept")
    assert proc.returncode == 2 and "no command" in proc.stderr


# -- acceptance checks and trust --------------------------------------------------------------------------

def test_an_acceptance_check_an_agent_recorded_waits_for_a_person_to_trust_it(run_repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    command = f"{sys.executable} -c \"open('{marker}', 'w')\""
    run_repo.ok("amend", "--accept", f"marker={command}", "--reason", "acceptance", env=AGENT)
    proc = run_repo.sg("accept", env=AGENT)
    assert proc.returncode == 3 and "shiftgit trust" in proc.stderr, proc.stderr
    assert not marker.exists()
    listed = run_repo.json("trust", "demo", "--yes")
    assert "acceptance check marker" in json.dumps(listed["trusted"]), "trust lists acceptance checks"
    run_repo.ok("accept", env=AGENT)
    assert marker.exists()


def test_the_receipt_lists_expected_artifacts_produced_or_missing(run_repo: Repo) -> None:
    run_repo.ok("amend", "--artifact", "calc.py", "--artifact", "docs/changelog.md", "--reason", "deliverables")
    run_repo.ok("finish", "--status", "blocked", "--reviewer-action", "write the changelog")
    artifacts = {a["name"]: a for a in run_repo.json("show", "demo")["receipt"]["artifacts"]}
    assert artifacts["calc.py"]["state"] == "produced" and "blob" in artifacts["calc.py"]["evidence"]
    assert artifacts["docs/changelog.md"]["state"] == "missing"


def test_finish_refuses_a_stale_acceptance_result(run_repo: Repo) -> None:
    run_repo.ok("amend", "--accept", f"suite={' '.join(PYTEST)}", "--reason", "acceptance")
    run_repo.ok("accept")
    run_repo.write("calc.py", CALC + "\n# edited after the acceptance run\n")
    proc = run_repo.sg("finish", "--status", "completed")
    assert proc.returncode == 1 and "suite" in proc.stderr
    assert run_repo.ledger("demo")["status"] == "active"


# -- decisions ----------------------------------------------------------------------------------------------

def test_stop_reasons_decide(run_repo: Repo) -> None:
    expected = {"waiting_for_approval": "escalate", "budget_exhausted": "escalate", "blocked_external": "escalate",
                "context_limit": "resume"}
    for reason, decision in expected.items():
        run_repo.ok("stop", "--reason", reason, "--detail", "d")
        report = resume(run_repo, "--no-run")
        assert (report["decision"], report["stop_reason"]) == (decision, reason), report["reasons"]
    proc = run_repo.sg("stop", "--reason", "cancelled")
    assert proc.returncode == 2 and "user_paused" in proc.stderr


def test_edits_left_without_a_stop_record_are_reported_as_crashed(run_repo: Repo) -> None:
    failing_unit(run_repo)
    run_repo.write("README.md", "half-written\n")
    report = resume(run_repo, "--no-run")
    assert report["stop_reason"] == "crashed"
    assert report["decision"] == "rollback" and "README.md" in json.dumps(report["reasons"])


def test_a_finished_run_stays_finished_and_resume_writes_nothing(run_repo: Repo) -> None:
    run_repo.ok("finish", "--status", "abandoned", "--reviewer-action", "nothing to review")
    assert not run_repo.ledger_path("demo").exists(), "finish moved the ledger into the archive"
    archive = run_repo.git("rev-parse", "refs/shift/archive")
    report = resume(run_repo, "demo", codes=(0,))
    assert report["decision"] == "finished" and report["receipt"]["status"] == "abandoned"
    assert not run_repo.ledger_path("demo").exists()
    assert run_repo.json("status")["active"] is None
    proc = run_repo.sg("stop", "--run", "demo", "--reason", "user_paused")
    assert proc.returncode == 2 and "finished" in proc.stderr
    assert not run_repo.ledger_path("demo").exists() and run_repo.git("rev-parse", "refs/shift/archive") == archive


def test_escalate_when_and_inspect_run_when_trusted(run_repo: Repo) -> None:
    say = f"{sys.executable} -c \"print('INSPECTED-4411')\""
    run_repo.ok("amend", "--inspect", say, "--escalate-when", f"{sys.executable} -c \"raise SystemExit(1)\"",
                "--rollback-plan", "revert the merge", "--reason", "recovery plan")
    report = resume(run_repo)
    assert report["decision"] == "resume", report["reasons"]
    assert "INSPECTED-4411" in report["plan"]["inspect"][0]["output"]
    assert "revert the merge" in report["briefing"]
    run_repo.ok("amend", "--escalate-when", f"{sys.executable} -c \"print('db differs')\"", "--reason", "db check")
    report = resume(run_repo)
    assert report["decision"] == "escalate" and "db differs" in json.dumps(report["reasons"])
    report = resume(run_repo, "--no-run")
    assert report["plan"]["escalate_when"][0]["status"] == "not_run"


def test_an_escalate_when_command_nobody_trusted_escalates_inside_an_agent(run_repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    run_repo.ok("amend", "--escalate-when", f"{sys.executable} -c \"open('{marker}', 'w')\"", "--reason", "x",
                env=AGENT)
    proc = run_repo.sg("resume", "--json", env=AGENT)
    report = json.loads(proc.stdout)
    assert proc.returncode == 4 and "not trusted" in json.dumps(report["reasons"])
    assert not marker.exists()


# -- where the work lives ----------------------------------------------------------------------------------

def test_the_contract_records_the_repository_without_credentials_and_resume_escalates_elsewhere(repo: Repo) -> None:
    repo.git("remote", "add", "origin", "https://ada:tok3n@git.example/team/calc.git")
    repo.ok("init", "--hooks", "git")
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    contract = repo.ledger("demo")["contract"]
    assert contract["repository"] == "https://git.example/team/calc.git"
    assert contract["branch"] == "main" and contract["worktree"] == str(repo.path)
    assert "tok3n" not in repo.ledger_path("demo").read_text()
    repo.git("remote", "set-url", "origin", "https://git.example/other/thing.git")
    report = resume(repo, "--no-run")
    assert report["decision"] == "escalate" and "another repository" in json.dumps(report["reasons"])


# -- verify first ------------------------------------------------------------------------------------------

def _session_start(repo: Repo) -> None:
    body = json.dumps({"session_id": "s-1", "transcript_path": str(repo.path / "none.jsonl"), "cwd": str(repo.path),
                       "hook_event_name": "SessionStart", "source": "startup"})
    proc = subprocess.run([*SG, "hook", "claude", "session-start"], cwd=repo.path, input=body, text=True,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_a_session_that_checkpoints_before_verifying_is_warned_about_next_time(run_repo: Repo) -> None:
    failing_unit(run_repo)
    assert "First instruction: run `shiftgit verify demo`" in resume(run_repo, "--no-run")["briefing"]
    _session_start(run_repo)
    run_repo.ok("checkpoint", "--step", "built on it unverified")
    [entry] = run_repo.ledger("demo")["sessions"]
    assert entry["verified_first"] is False
    assert "unverified handoff" in resume(run_repo, "--no-run")["briefing"]


def test_a_verify_before_the_first_checkpoint_is_recorded(run_repo: Repo) -> None:
    failing_unit(run_repo)
    _session_start(run_repo)
    assert run_repo.sg("verify").returncode in (0, 1)
    run_repo.ok("checkpoint", "--step", "verified first")
    [entry] = run_repo.ledger("demo")["sessions"]
    assert entry["verified_first"] is True
    assert "Evidence rerun: yes" in resume(run_repo)["briefing"]


# -- no summary drift (gate rule 5) ---------------------------------------------------------------------

def test_an_open_question_leaves_only_through_resolve(run_repo: Repo) -> None:
    run_repo.write("calc.py", CALC + "\n# one\n")
    run_repo.ok("checkpoint", "--step", "one", "--question", "floats too?", "--blocked", "needs review")
    assert run_repo.commit("one").returncode == 0
    run_repo.write("calc.py", CALC + "\n# two\n")
    run_repo.ok("checkpoint", "--step", "two")
    document = run_repo.ledger("demo")
    document["checkpoint"]["questions"] = []  # hand-deleted
    run_repo.ledger_path("demo").write_text(json.dumps(document, indent=2))
    proc = run_repo.commit("drop the question")
    assert proc.returncode != 0 and "floats too?" in proc.stderr and "--resolve" in proc.stderr
    run_repo.git("reset", "-q")
    run_repo.ok("checkpoint", "--step", "two again", "--question", "floats too?")
    proc = run_repo.sg("checkpoint", "--step", "two", "--resolve", "no such item", "--reason", "r")
    assert proc.returncode == 2 and "floats too?" in proc.stderr
    run_repo.ok("checkpoint", "--step", "two", "--resolve", "floats too?", "--reason", "ints only")
    assert run_repo.commit("resolved").returncode == 0
    committed = json.loads(run_repo.git("show", "HEAD:.shift/runs/demo/ledger.json"))
    assert committed["resolved"][0]["reason"] == "ints only"
    assert [b["text"] for b in committed["checkpoint"]["blocked"]] == ["needs review"]


def test_upgrading_a_schema_1_ledger_in_head_is_not_a_contract_rewrite(run_repo: Repo) -> None:
    document = run_repo.ledger("demo")
    document["schema_version"] = 1
    document["contract"]["accept"] = ["the page loads"]
    run_repo.ledger_path("demo").write_text(json.dumps(document, indent=2))
    assert run_repo.commit("a schema 1 ledger", env={"SHIFT_SKIP": "fixture"}).returncode == 0
    run_repo.write("calc.py", CALC + "\n# x\n")
    run_repo.ok("checkpoint", "--step", "upgraded on write")
    assert run_repo.ledger("demo")["schema_version"] == 2
    proc = run_repo.commit("upgraded")
    assert proc.returncode == 0, proc.stderr


# -- stable ids for external objects ------------------------------------------------------------------------

def test_capture_id_keeps_the_external_id_and_status_refreshes_it_through_the_probe(run_repo: Repo) -> None:
    make_pr = [sys.executable, "-c", "print('created https://git.example/team/calc/pull/118 ok')"]
    probe = f"{sys.executable} -c \"import os; print('merged', os.environ['SHIFT_EXTERNAL_ID'])\""
    run_repo.ok("effect", "run", "--key", "pr", "--kind", "pull_request", "--repeatable", "--probe", probe,
                "--capture-id", r"https://\S+/pull/\d+", "--", *make_pr)
    [effect] = run_repo.ledger("demo")["effects"]
    assert effect["external_id"] == "https://git.example/team/calc/pull/118"
    run_repo.ok("effect", "status", "pr")
    [effect] = run_repo.ledger("demo")["effects"]
    assert effect["external_status"]["said"] == "merged https://git.example/team/calc/pull/118"
    report = resume(run_repo, "--no-run")
    assert report["effects"][0]["external_id"] == "https://git.example/team/calc/pull/118"
    assert "pull/118" in report["briefing"] and "merged" in report["briefing"]


def test_external_ids_by_hand_and_bad_input(run_repo: Repo) -> None:
    run_repo.ok("effect", "record", "--key", "deploy-9", "--kind", "deploy", "--external-id", "dep-77f")
    assert run_repo.ledger("demo")["effects"][0]["external_id"] == "dep-77f"
    before = run_repo.ledger_path("demo").read_bytes()
    proc = run_repo.sg("effect", "run", "--key", "x", "--kind", "k", "--repeatable", "--capture-id", "(", "--", "true")
    assert proc.returncode == 2 and "--capture-id" in proc.stderr
    proc = run_repo.sg("effect", "status", "deploy-9", env=AGENT)
    assert proc.returncode == 2 and "no recorded probe" in proc.stderr
    assert run_repo.ledger_path("demo").read_bytes() == before


# -- budgets --------------------------------------------------------------------------------------------------

def test_a_spent_cost_budget_stops_new_effects_but_not_checks(run_repo: Repo, tmp_path: Path) -> None:
    run_repo.ok("amend", "--cost-budget", "2", "--reason", "a small budget")
    run_repo.write("calc.py", CALC + "\n# work\n")
    run_repo.ok("checkpoint", "--step", "costly", "--cost", "2.5")
    marker = tmp_path / "applied"
    effect = ("effect", "run", "--key", "k1", "--kind", "notify", "--repeatable", "--", sys.executable, "-c",
              f"open({str(marker)!r}, 'w')")
    proc = run_repo.sg(*effect)
    assert proc.returncode == 4 and "cost: spent 2.5 of 2" in proc.stderr and "--cost-budget" in proc.stderr
    assert not marker.exists() and run_repo.ledger("demo")["effects"] == []
    proc = run_repo.sg("check", "--name", "probe", "--", *PASS)
    assert proc.returncode == 0 and "spent 2.5 of 2" in proc.stderr
    run_repo.ok("amend", "--cost-budget", "10", "--reason", "more work")
    run_repo.ok(*effect)
    assert marker.exists()


# -- the merge driver ---------------------------------------------------------------------------------------

def test_two_branches_resolutions_and_retirements_merge_by_id() -> None:
    from shiftgit.ledger.merge import merge_ledgers
    from shiftgit.ledger.model import Contract, Ledger

    base = Ledger(run="demo", created_at="t0", updated_at="t0", contract=Contract(goal="g", stop_when="s")).to_dict()
    ours, theirs = json.loads(json.dumps(base)), json.loads(json.dumps(base))
    ours["resolved"] = [{"id": "r-1", "kind": "questions", "text": "a?", "reason": "no", "at": "t1", "checkpoint": 1}]
    theirs["resolved"] = [{"id": "r-2", "kind": "blocked", "text": "b", "reason": "done", "at": "t2", "checkpoint": 1}]
    ours["retired"] = [{"id": "t-1", "name": "e2e", "reason": "slow", "at": "t1", "checkpoint": None}]
    merged = merge_ledgers(base, ours, theirs)
    assert not merged.conflicts
    assert [r["id"] for r in merged.document["resolved"]] == ["r-1", "r-2"]
    assert merged.document["retired"][0]["name"] == "e2e"
