"""Archive: finish moves a run out of the tree into refs/shift/archive; the gate, reads, listing and sync follow."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import Repo, make_repo

ARCHIVE = "refs/shift/archive"


def archived(repo: Repo, rev: str = ARCHIVE) -> list[str]:
    return repo.git("ls-tree", "-r", "--name-only", rev).split()


def one_line_refusal(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_finish_archives_ledger_and_receipt_and_the_removal_commits(run_repo: Repo) -> None:
    before = run_repo.git("rev-parse", "HEAD")
    run_repo.ok("finish", "--status", "completed", "--reviewer-action", "merge it (ACT-17)")
    assert sorted(archived(run_repo)) == ["demo/ledger.json", "demo/receipt.md"]
    ledger = json.loads(run_repo.git("show", f"{ARCHIVE}:demo/ledger.json"))
    assert ledger["status"] == "completed" and ledger["receipt"]["reviewer_action"] == "merge it (ACT-17)"
    assert "ACT-17" in run_repo.git("show", f"{ARCHIVE}:demo/receipt.md")
    assert not (run_repo.path / ".shift" / "runs" / "demo").exists()
    assert (run_repo.path / ".shift" / "runs").is_dir()
    assert run_repo.git("rev-parse", "HEAD") == before, "archiving never commits on the branch"
    assert run_repo.commit("finish demo").returncode == 0
    assert run_repo.git("ls-tree", "-r", "--name-only", "HEAD", "--", ".shift/runs/demo").strip() == ""
    assert run_repo.json("show", "demo")["receipt"]["reviewer_action"] == "merge it (ACT-17)"
    row = next(r for r in run_repo.json("status")["runs"] if r["id"] == "demo")
    assert row["archived"] is True and row["status"] == "completed"


def test_the_gate_accepts_an_archived_removal_beside_an_active_run_but_not_a_plain_deletion(run_repo: Repo) -> None:
    run_repo.ok("start", "other", "--goal", "g", "--stop-when", "s")
    run_repo.ok("checkpoint", "--run", "other", "--step", "began")
    assert run_repo.commit("start other").returncode == 0
    run_repo.ok("stop", "--run", "demo", "--reason", "user_paused")
    run_repo.ok("archive", "demo")
    run_repo.write("calc.py", run_repo.read("calc.py") + "\n# more\n")
    run_repo.ok("checkpoint", "--run", "other", "--step", "edited calc")
    proc = run_repo.commit("archive demo, edit calc")
    assert proc.returncode == 0, proc.stderr
    judged = run_repo.sg("ci", "check", "--no-fetch", "HEAD~1..HEAD")  # CI judges the removal the same way
    assert judged.returncode == 0, judged.stdout + judged.stderr
    # a deletion the archive does not hold is still refused (gate rule 5)
    run_repo.ok("start", "third", "--goal", "g", "--stop-when", "s")
    assert run_repo.commit("start third", env={"SHIFT_SKIP": "setup"}).returncode == 0
    run_repo.git("rm", "-q", "-r", ".shift/runs/third")
    run_repo.write("calc.py", run_repo.read("calc.py") + "# again\n")
    run_repo.ok("checkpoint", "--run", "other", "--step", "edited calc again")
    proc = run_repo.commit("drop third", env={"SHIFT_RUN": "other"})
    assert proc.returncode == 1 and "rule 5" in proc.stderr and "the ledger of run third is deleted" in proc.stderr


def test_archive_refuses_an_active_run_and_an_archived_one_and_writes_nothing(run_repo: Repo) -> None:
    before = run_repo.ledger_path("demo").read_bytes()
    proc = run_repo.sg("archive", "demo")
    one_line_refusal(proc)
    assert "active" in proc.stderr and "shiftgit finish" in proc.stderr
    assert run_repo.ledger_path("demo").read_bytes() == before
    assert run_repo.git("rev-parse", "-q", "--verify", ARCHIVE, check=False) == ""
    one_line_refusal(run_repo.sg("archive", "no-such-run"))
    run_repo.ok("stop", "--reason", "blocked_external", "--detail", "API owner away")
    assert run_repo.json("archive", "demo")["status"] == "stopped"
    one_line_refusal(run_repo.sg("archive", "demo"))


def test_an_archived_run_is_read_only_until_reopened(run_repo: Repo) -> None:
    run_repo.ok("finish", "--status", "abandoned")
    proc = run_repo.sg("constraint", "add", "--run", "demo", "a late rule")
    one_line_refusal(proc)
    assert "archived" in proc.stderr and "review add" in proc.stderr
    assert not run_repo.ledger_path("demo").exists()


def test_each_archiving_is_a_commit_on_the_previous_one_and_runs_filters(run_repo: Repo) -> None:
    run_repo.ok("finish", "--status", "completed")
    first = run_repo.git("rev-parse", ARCHIVE).strip()
    run_repo.ok("start", "second", "--goal", "add div()", "--stop-when", "div passes")
    run_repo.ok("stop", "--reason", "budget_exhausted")
    run_repo.ok("finish", "--run", "second", "--status", "blocked")
    tip = run_repo.git("rev-parse", ARCHIVE).strip()
    assert run_repo.git("rev-parse", f"{tip}^").strip() == first
    assert sorted(archived(run_repo, tip)) == ["demo/ledger.json", "demo/receipt.md", "second/ledger.json",
                                               "second/receipt.md"]
    run_repo.ok("start", "third", "--goal", "g", "--stop-when", "s")
    assert [r["id"] for r in run_repo.json("runs")["runs"]] == ["third"]
    everything = {r["id"]: r for r in run_repo.json("runs", "--archived")["runs"]}
    assert set(everything) == {"demo", "second", "third"}
    assert everything["second"]["stop_reason"] == "budget_exhausted" and everything["second"]["archived"]
    blocked = run_repo.json("runs", "--archived", "--status", "blocked")["runs"]
    assert [r["id"] for r in blocked] == ["second"]
    assert run_repo.json("runs", "--archived", "--since", "2999-01-01")["runs"] == []
    one_line_refusal(run_repo.sg("runs", "--since", "last tuesday"))


def _clone(origin: Path, path: Path) -> Repo:
    subprocess.run(["git", "clone", "-q", str(origin), str(path)], check=True)
    clone = Repo(path)
    clone.ok("init", "--hooks", "git")
    return clone


def test_sync_carries_the_archive_and_merges_two_machines_archivings(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    a = make_repo(tmp_path / "a")
    a.git("remote", "add", "origin", str(remote))
    a.ok("init", "--hooks", "git")
    assert a.commit("set up").returncode == 0
    a.git("push", "-q", "-u", "origin", "main")
    b = _clone(remote, tmp_path / "b")
    for repo, run in ((a, "run-a"), (b, "run-b")):
        repo.ok("start", run, "--goal", f"goal {run}", "--stop-when", "done")
        repo.ok("finish", "--run", run, "--status", "completed")
    a.ok("sync")
    b.ok("sync")
    a.ok("sync")
    for repo in (a, b):
        assert {"run-a/ledger.json", "run-b/ledger.json"} <= set(archived(repo)), repo.path
        assert json.loads(repo.git("show", f"{ARCHIVE}:run-b/ledger.json"))["run"] == "run-b"
    assert a.git("rev-parse", ARCHIVE) == b.git("rev-parse", ARCHIVE)
