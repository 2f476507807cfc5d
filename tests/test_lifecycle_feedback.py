"""Templates, review feedback, milestone confirmation, repository memory and friction insights, on real repos."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from conftest import Repo

RULE = "ask the billing team before using port 3102"


def refused(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


def template(repo: Repo, name: str, document: dict[str, Any]) -> None:
    repo.write(f".shift/templates/{name}.json", json.dumps({"schema_version": 1, **document}))


# -- templates -------------------------------------------------------------------------------------

def test_a_template_fills_defaults_adds_its_constraints_and_is_recorded(run_repo: Repo) -> None:
    template(run_repo, "svc", {"contract": {"stop_when": "the service answers", "token_budget": 5000,
                                            "scope": ["svc/**"]},
                               "constraints": ["no deploys on fridays"], "required": ["owner", "goal"]})
    ledger = run_repo.json("start", "svc-1", "--template", "svc", "--goal", "add /health", "--owner", "ada",
                           "--constraint", "keep the API")
    contract = ledger["contract"]
    assert contract["stop_when"] == "the service answers" and contract["budgets"]["tokens"] == 5000
    assert contract["scope"] == ["svc/**"] and contract["owner"] == "ada"
    assert [c["text"] for c in ledger["constraints"]] == ["no deploys on fridays", "keep the API"]
    assert ledger["template"]["name"] == "svc" and len(ledger["template"]["sha256"]) == 64
    other = run_repo.json("start", "svc-2", "--template", "svc", "--goal", "g", "--owner", "bo", "--scope", "api/**")
    assert other["contract"]["scope"] == ["api/**"], "the command line wins over the template"


def test_commands_a_template_gives_are_not_trusted_by_starting_the_run(run_repo: Repo) -> None:
    """A committed template (anyone's file) may fill acceptance checks; starting from it is no `shiftgit trust`:
    `accept` refuses them until a person trusts them. The same command typed on the command line is trusted."""
    command = "unit=sh -c 'echo ran > ran.txt'"
    template(run_repo, "bugfix", {"contract": {"stop_when": "fixed", "accept": [command]}})
    run_repo.ok("start", "fix-1", "--template", "bugfix", "--goal", "fix it")
    proc = run_repo.sg("accept", "fix-1")
    assert proc.returncode == 3 and "trust" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert not (run_repo.path / "ran.txt").exists()
    run_repo.ok("start", "fix-2", "--template", "bugfix", "--goal", "fix it", "--accept", command)
    run_repo.ok("accept", "fix-2")
    assert (run_repo.path / "ran.txt").exists()


def test_template_refusals_name_the_problem_and_start_nothing(run_repo: Repo) -> None:
    template(run_repo, "strict", {"required": ["owner", "token_budget"]})
    refused(run_repo.sg("start", "x", "--template", "strict", "--goal", "g", "--stop-when", "s"),
            "owner (--owner)", "token_budget (--token-budget)")
    refused(run_repo.sg("start", "x", "--template", "nope", "--goal", "g", "--stop-when", "s"), "'nope'", "strict")
    run_repo.write(".shift/templates/broken.json", '{"schema_version": 1, "required": ["colour"]}')
    refused(run_repo.sg("start", "x", "--template", "broken", "--goal", "g", "--stop-when", "s"), "broken.json")
    refused(run_repo.sg("start", "x", "--template", "strict", "--stop-when", "s", "--owner", "a",
                        "--token-budget", "5"), "goal")
    assert not run_repo.ledger_path("x").exists()


# -- review feedback --------------------------------------------------------------------------------

def test_review_add_resolve_and_reopen_an_archived_run(run_repo: Repo) -> None:
    added = run_repo.json("review", "add", "demo", "rename sub() (R-77)", "--file", "calc.py", "--line", "5",
                          "--by", "rita")
    assert added["reopened"] is False and added["review"]["status"] == "open"
    briefing = run_repo.json("resume", "demo", "--no-run", codes=(0, 3, 4))["briefing"]
    assert "R-77" in briefing and "calc.py:5" in briefing and "review resolve" in briefing
    review_id = added["review"]["id"]
    refused(run_repo.sg("review", "resolve", review_id, "--reason", " "), "reason")
    assert run_repo.json("review", "resolve", review_id, "--reason", "done")["review"]["status"] == "resolved"
    refused(run_repo.sg("review", "resolve", review_id, "--reason", "again"), "already resolved")
    refused(run_repo.sg("review", "resolve", "r-000000000000", "--reason", "x"), "r-000000000000")
    run_repo.ok("finish", "--status", "completed")
    assert run_repo.commit("finish demo").returncode == 0
    again = run_repo.json("review", "add", "demo", "the docs still say sub() (R-78)", "--by", "rita")
    assert again["reopened"] is True
    ledger = run_repo.ledger("demo")
    assert ledger["status"] == "active" and ledger["reopened"][-1]["from_status"] == "completed"
    assert [r["status"] for r in ledger["reviews"]] == ["resolved", "open"]
    assert "R-78" in run_repo.json("resume", "demo", "--no-run", codes=(0, 3, 4))["briefing"]
    markdown = run_repo.ok("show", "demo", "--markdown").stdout
    assert "R-78" in markdown and "resolved: done" in markdown
    refused(run_repo.sg("review", "add", "demo", "x", "--line", "3"), "--file")


# -- milestone confirmation -------------------------------------------------------------------------

def test_a_milestone_awaiting_confirmation_holds_resume_and_irreversible_effects(run_repo: Repo) -> None:
    refused(run_repo.sg("checkpoint", "--step", "s", "--confirm"), "--milestone")
    run_repo.ok("checkpoint", "--step", "API shape agreed", "--milestone", "--confirm")
    assert run_repo.commit("milestone").returncode == 0
    report = run_repo.json("resume", "--no-run", codes=(4,))
    assert any("awaits its owner's confirmation" in r for r in report["reasons"])
    proc = run_repo.sg("effect", "run", "--key", "deploy-1", "--kind", "deploy", "--irreversible", "--", "true")
    assert proc.returncode == 1 and "awaits its owner's confirmation" in proc.stderr
    note = run_repo.sg("effect", "run", "--key", "note-1", "--kind", "note", "--repeatable", "--", "true")
    assert note.returncode == 0, note.stderr
    refused(run_repo.sg("confirm"), "--by")
    record = run_repo.json("confirm", "--by", "owner", "--correct", "keep the v1 endpoint too")
    assert record["state"] == "corrected" and record["by"] == "owner"
    ledger = run_repo.ledger("demo")
    amendment = ledger["amendments"][-1]
    assert amendment["field"] == "milestone" and amendment["new"] == "keep the v1 endpoint too"
    assert "owner" in amendment["reason"]
    refused(run_repo.sg("confirm", "--by", "owner"), "nothing")


# -- memory -----------------------------------------------------------------------------------------

def test_promote_list_expire_and_the_standing_rules_of_a_new_run(run_repo: Repo) -> None:
    constraint = run_repo.ledger("demo")["constraints"][0]
    refused(run_repo.sg("constraint", "promote", constraint["id"]), "--by")
    refused(run_repo.sg("constraint", "promote", constraint["id"], "--by", "lead", "--until", "2001-01-01"), "past")
    refused(run_repo.sg("constraint", "promote", "c-nope", "--by", "lead"), "c-nope")
    assert not (run_repo.path / ".shift" / "memory.json").exists()
    entry = run_repo.json("constraint", "promote", constraint["text"], "--by", "lead", "--until", "2999-01-01")
    assert entry["origin"] == {"run": "demo", "constraint": constraint["id"]} and entry["approved_by"] == "lead"
    refused(run_repo.sg("constraint", "promote", constraint["id"], "--by", "lead"), "already")
    assert [e["id"] for e in run_repo.json("memory", "list")["entries"]] == [entry["id"]]
    run_repo.ok("start", "next", "--goal", "g", "--stop-when", "s")
    briefing = run_repo.json("resume", "next", "--no-run", codes=(0, 3, 4))["briefing"]
    assert "Standing rules" in briefing and constraint["text"] in briefing and "lead" in briefing
    run_repo.ok("memory", "expire", entry["id"], "--by", "lead")
    assert run_repo.json("memory", "list")["entries"] == []
    assert len(run_repo.json("memory", "list", "--all")["entries"]) == 1
    assert constraint["text"] not in run_repo.json("resume", "next", "--no-run", codes=(0, 3, 4))["briefing"]
    assert f"memory:{entry['id']}" in run_repo.json("gc")["drop"]
    refused(run_repo.sg("memory", "expire", entry["id"]), entry["id"])


# -- insights ---------------------------------------------------------------------------------------

def blocked_runs(repo: Repo, names: list[str]) -> None:
    for run in names:
        repo.ok("start", run, "--goal", f"export {run}", "--stop-when", "export passes", "--token-budget", "10")
        repo.ok("constraint", "add", RULE)
        repo.ok("amend", "--owner", "billing-team", "--reason", "they own the port")
        repo.ok("checkpoint", "--step", "port in use", "--tokens", "40")
        repo.ok("stop", "--reason", "blocked_external", "--detail", "port 3102 is owned by billing")
        repo.ok("finish", "--run", run, "--status", "blocked")


def test_insights_cluster_recurring_friction_and_suggest_a_template(run_repo: Repo) -> None:
    names = ["b-1", "b-2", "b-3"]
    blocked_runs(run_repo, names)
    clusters = {(c["kind"], c["key"]): c for c in run_repo.json("insights")["clusters"]}
    stop = clusters[("stop_reason", "blocked_external")]
    assert stop["count"] == 3 and stop["runs"] == names and RULE in stop["suggestion"]
    assert "port 3102 is owned by billing" in stop["suggestion"]
    assert clusters[("constraint_added", RULE)]["count"] == 3
    assert clusters[("amendment", "owner")]["template"] == {"contract": {"owner": "billing-team"}}
    assert clusters[("budget_overrun", "tokens")]["runs"] == names
    assert not any(c["kind"] == "stop_reason" for c in run_repo.json("insights", "--min", "4")["clusters"])
    assert run_repo.json("insights", "--since", "2999-01-01")["clusters"] == []
    shown = run_repo.ok("insights", "--suggest", "billing").stdout
    assert RULE in shown and "--apply" in shown
    assert not (run_repo.path / ".shift" / "templates" / "billing.json").exists()
    refused(run_repo.sg("insights", "--apply"), "--suggest")
    written = run_repo.json("insights", "--suggest", "billing", "--apply")
    assert written["written"] is True
    document = json.loads(run_repo.read(".shift/templates/billing.json"))
    assert document["constraints"] == [RULE] and document["contract"]["owner"] == "billing-team"
    assert document["contract"]["token_budget"] > 40
    assert run_repo.json("insights", "--suggest", "billing", "--apply")["diff"] == "", "applied once, then nothing"
    ledger = run_repo.json("start", "b-4", "--template", "billing", "--goal", "export 4", "--stop-when", "passes")
    assert [c["text"] for c in ledger["constraints"]] == [RULE] and ledger["contract"]["owner"] == "billing-team"
