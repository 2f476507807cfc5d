"""`status` on raw JSON and one listing of HEAD: the same report the model gave, a fixed number of git processes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from conftest import Repo

from shiftgit.effects import approvals
from shiftgit.effects import runner as effects
from shiftgit.git import sources
from shiftgit.ledger import budgets
from shiftgit.ledger.store import Store
from shiftgit.runs import overview, render


def model_row(store: Store, run: str) -> dict[str, Any]:
    """What `status` built from the model before it read raw JSON (the reference)."""
    ledger = store.read(run)
    point = ledger.checkpoint
    return {"id": ledger.run, "status": ledger.status, "goal": ledger.contract.goal,
            "stop": ledger.stop.to_dict() if ledger.stop else None,
            "checkpoint": point.seq if point else None, "step": point.step if point else None,
            "next": point.next.action if point else None, "updated_at": ledger.updated_at,
            "pending_checks": len(ledger.pending_checks), "spend": ledger.spend.to_dict(),
            "budgets": budgets.report(ledger)["budgets"], "budget_exhausted": budgets.exhausted(ledger),
            "unknown_effects": effects.unknown(ledger), "pending_approvals": approvals.pending(ledger)}


def test_the_row_from_json_is_the_row_the_model_gave(run_repo: Repo) -> None:
    run_repo.ok("start", "other", "--goal", "g2", "--stop-when", "s2", "--token-budget", "10", "--time-budget", "1")
    run_repo.ok("checkpoint", "--run", "other", "--step", "a", "--next", "b", "--tokens", "50")
    run_repo.ok("check", "--run", "other", "--", "true")
    run_repo.ok("approval", "request", "ship", "--run", "other", "--reason", "r")
    run_repo.ok("stop", "--run", "other", "--reason", "user_paused", "--detail", "lunch")
    path = run_repo.ledger_path("other")  # an effect a dead process attempted: its outcome is unknown
    document = json.loads(path.read_text())
    effect = {"kind": "job", "reversibility": "reversible", "created_at": "2026-01-01T00:00:00Z"}
    document["effects"] = [{**effect, "key": "gone", "state": "attempted",
                            "runner": {"pid": 2 ** 22 + 7, "host": "elsewhere", "boot": "x"}},
                           {**effect, "key": "fine", "state": "completed"},
                           {**effect, "key": "lost", "state": "unknown"}]
    path.write_text(json.dumps(document))
    store = Store.open(run_repo.path)
    for run in ("demo", "other"):
        row = overview.row(store.document(run, migrate=True))
        assert row == model_row(store, run)
        # show reads the JSON as the model reads it: the same text from the raw file and with every default filled in
        assert render.summary(store.document(run)) == render.summary(store.read(run).to_dict())
    shown = render.summary(store.document("other"))
    path.write_text(json.dumps(sparse(json.loads(path.read_text()))))  # what a record may leave out, left out
    assert render.summary(store.document("other")) == render.summary(store.read("other").to_dict()) == shown
    assert "  effect gone (job, reversible): unknown" in shown and "  approval ship: requested" in shown
    assert "  stopped: user_paused lunch" in shown and "BUDGET EXHAUSTED: tokens: spent 50 of 10" in shown
    other = overview.row(store.document("other"))
    assert other["budget_exhausted"] == ["tokens: spent 50 of 10"] and other["unknown_effects"] == ["gone", "lost"]
    assert other["pending_approvals"] == ["ship"] and other["stop"]["detail"] == "lunch"


def sparse(value: Any) -> Any:
    """VALUE without the optional keys whose value is null or empty (a ledger that relies on the model's defaults)."""
    if isinstance(value, dict):
        return {k: sparse(v) for k, v in value.items()
                if v not in (None, [], {}) or k in ("stop", "receipt", "exit_code", "argv", "lease", "budgets")}
    return [sparse(v) for v in value] if isinstance(value, list) else value


def copies(repo: Repo, count: int) -> None:
    """COUNT more runs, r00, r01, ...: the demo ledger under other ids."""
    template = repo.ledger("demo")
    for i in range(count):
        target = repo.ledger_path(f"r{i:02d}")
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps({**template, "run": f"r{i:02d}"}, indent=2, sort_keys=True) + "\n")


def test_committed_or_not_is_told_apart_with_one_listing_of_head(run_repo: Repo) -> None:
    copies(run_repo, sources._LISTED + 4)  # past the per-path listing: the runs directory is listed once
    (run_repo.ledger_path("r01").parent / "notes.txt").write_text("another file in the run's directory\n")
    assert run_repo.commit("runs").returncode == 0
    run_repo.ok("checkpoint", "--run", "r02", "--step", "changed after the commit")
    run_repo.ledger_path("r03").unlink()  # committed, gone from the work tree
    store = Store.open(run_repo.path)
    found = sources.collect(store, store.run_ids())
    kinds = {run: [s.kind for s in records] for run, records in found.items()}
    assert kinds["r00"] == ["committed"] and kinds["r01"] == ["committed"]
    assert kinds["r02"] == ["working", "published"] and found["r02"][0].committed_seq == 0
    assert "r03" not in kinds
    for run in ("r00", "r01", "r02"):  # as git itself says: the committed bytes are HEAD's
        committed = run_repo.git("show", f"HEAD:.shift/runs/{run}/ledger.json").encode()
        assert (found[run][0].data == committed) == (run != "r02")


def test_status_starts_the_same_git_processes_at_any_run_count(run_repo: Repo, tmp_path: Path) -> None:
    def processes() -> list[str]:
        trace = tmp_path / "trace.json"
        trace.unlink(missing_ok=True)
        run_repo.ok("status", env={"GIT_TRACE2_EVENT": str(trace)})
        events = [json.loads(line) for line in trace.read_text().splitlines()]
        return [" ".join(e["argv"][1:3]) for e in events if e["event"] == "start"]

    few = processes()
    copies(run_repo, 60)
    assert run_repo.commit("runs").returncode == 0
    many = processes()
    assert len(many) == len(few) and "cat-file --batch" not in many, many
    assert os.path.exists(run_repo.ledger_path("r59"))
