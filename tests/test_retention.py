"""Retention (`shiftgit gc`): the policy's set kept exactly, nothing reachable from a branch or note dropped,
compare-and-swap against checkpoints racing it (real processes)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from conftest import SG, Repo

DAY = 86400


def policy(repo: Repo, **rules: int) -> None:
    config = json.loads(repo.read(".shift/config.json"))
    config["retention"] = rules
    repo.write(".shift/config.json", json.dumps(config, indent=2) + "\n")
    assert repo.commit("retention", env={"SHIFT_SKIP": "config"}).returncode == 0


def snapshots(repo: Repo, run: str, stamps: list[int]) -> list[str]:
    """A chain of snapshots on refs/shift/snapshots/<run> as checkpoints make them (parents HEAD and the previous
    snapshot; message `shiftgit snapshot: RUN checkpoint N`), one per committer time, built by fast-import."""
    head = repo.head()
    ref = f"refs/shift/snapshots/{run}"
    lines = []
    for n, stamp in enumerate(stamps, 1):
        data = f"snapshot-{n}\n"
        message = f"shiftgit snapshot: {run} checkpoint {n}"
        lines += [f"commit {ref}", f"mark :{n}", f"author Ada <ada@example.com> {stamp} +0000",
                  f"committer Ada <ada@example.com> {stamp} +0000", f"data {len(message)}", message,
                  f"from {head}" if n == 1 else f"from :{n - 1}", *([f"merge {head}"] if n > 1 else []),
                  "deleteall", "M 100644 inline marker.txt", f"data {len(data)}", data.rstrip("\n"), ""]
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.path, input="\n".join(lines) + "\n", text=True,
                   check=True)
    return repo.git("rev-list", "--reverse", ref, "--not", head).split()


def kept(repo: Repo, run: str) -> dict[int, str]:
    """marker number -> tree, for the snapshots the ref still reaches (not through a branch)."""
    out = repo.git("log", "--format=%H %T", f"refs/shift/snapshots/{run}", "--not", "--branches")
    found = {}
    for line in out.splitlines():
        commit, tree = line.split()
        marker = repo.git("show", f"{commit}:marker.txt").split("\n", 1)[0]
        found[int(marker.rsplit("-", 1)[1])] = tree
    return found


def fsck_ok(repo: Repo) -> None:
    proc = repo.run(["git", "fsck", "--connectivity-only", "--no-dangling"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_500_checkpoints_gc_keeps_exactly_the_last_20_and_what_a_branch_holds(run_repo: Repo) -> None:
    now = int(time.time())
    chain = snapshots(run_repo, "demo", [now - 1000 + n for n in range(500)])
    trees = {n + 1: run_repo.git("rev-parse", f"{c}^{{tree}}").strip() for n, c in enumerate(chain)}
    run_repo.git("branch", "keep-100", chain[99])
    history = run_repo.git("rev-list", "--branches")
    dry = run_repo.json("gc", "--dry-run")
    assert len(dry["drop"]) == 480 - 100 and run_repo.git("rev-parse", "refs/shift/snapshots/demo").strip() == chain[-1]
    report = run_repo.json("gc")
    assert sorted(report["drop"]) == sorted(dry["drop"])
    assert isinstance(report["bytes_before"], int) and isinstance(report["bytes_after"], int)  # packed: git gc frees
    assert kept(run_repo, "demo") == {n: trees[n] for n in range(481, 501)}
    assert run_repo.git("show", "keep-100:marker.txt") == "snapshot-100\n"
    assert run_repo.git("rev-list", "--branches") == history, "no branch lost a commit"
    fsck_ok(run_repo)
    tip = run_repo.git("rev-parse", "refs/shift/snapshots/demo").strip()
    again = run_repo.json("gc")
    assert not [d for d in again["drop"] if d.startswith("refs/shift/snapshots/")]
    assert run_repo.git("rev-parse", "refs/shift/snapshots/demo").strip() == tip, "a second gc changes nothing"


def test_finished_failed_rescue_and_memory_each_follow_their_days(run_repo: Repo) -> None:
    policy(run_repo, finished_days=14, failed_days=90, rescue_days=30)
    now = int(time.time())
    for run, status in (("done", "completed"), ("stuck", "blocked")):
        run_repo.ok("start", run, "--goal", f"goal {run}", "--stop-when", "s")
        run_repo.ok("finish", "--run", run, "--status", status)
    snapshots(run_repo, "done", [now - 40 * DAY, now - 30 * DAY, now - 20 * DAY, now - 5 * DAY, now - 3 * DAY])
    snapshots(run_repo, "stuck", [now - 100 * DAY, now - 60 * DAY, now - 50 * DAY])
    old = snapshots(run_repo, "rescue-old", [now - 40 * DAY])[0]
    new = snapshots(run_repo, "rescue-new", [now - 2 * DAY])[0]
    for name, commit in (("old", old), ("new", new)):
        run_repo.git("update-ref", f"refs/shift/rescue/demo/{name}", commit)
        run_repo.git("update-ref", "-d", f"refs/shift/snapshots/rescue-{name}")
    memory = {"schema_version": 1, "entries": [
        {"id": "m-old", "text": "gone rule", "origin": {"run": "demo"}, "created_at": "2020-01-01T00:00:00Z",
         "approved_by": "lead", "expires_at": "2021-01-01T00:00:00Z"},
        {"id": "m-live", "text": "live rule", "origin": {"run": "demo"}, "created_at": "2020-01-01T00:00:00Z",
         "approved_by": "lead", "expires_at": None}]}
    run_repo.write(".shift/memory.json", json.dumps(memory))
    refs = run_repo.git("for-each-ref")
    dry = run_repo.json("gc", "--dry-run")
    assert run_repo.git("for-each-ref") == refs and "m-old" in run_repo.read(".shift/memory.json")
    report = run_repo.json("gc")
    assert sorted(report["drop"]) == sorted(dry["drop"])
    assert set(kept(run_repo, "done")) == {4, 5}, "finished: the final snapshot always, the others 14 days"
    assert set(kept(run_repo, "stuck")) == {2, 3}, "blocked: 90 days, and the final one always"
    assert "refs/shift/rescue/demo/old" in report["drop"] and "refs/shift/rescue/demo/new" in report["keep"]
    assert run_repo.git("rev-parse", "-q", "--verify", "refs/shift/rescue/demo/old", check=False) == ""
    assert "memory:m-old" in report["drop"]
    assert [e["id"] for e in json.loads(run_repo.read(".shift/memory.json"))["entries"]] == ["m-live"]
    fsck_ok(run_repo)


def test_gc_frees_the_loose_objects_of_dropped_real_checkpoints(run_repo: Repo) -> None:
    policy(run_repo, keep_last=2)
    for n in range(1, 6):
        run_repo.write("marker.txt", f"snapshot-{n}\n" + "payload line\n" * 50 * n)
        run_repo.ok("checkpoint", "--step", f"step {n}")
    report = run_repo.json("gc")
    assert report["objects_removed"] > 0 and report["bytes_after"] < report["bytes_before"]
    assert set(kept(run_repo, "demo")) == {4, 5}
    fsck_ok(run_repo)
    run_repo.ok("rollback", "--yes")  # the kept checkpoint still restores
    assert run_repo.read("marker.txt").startswith("snapshot-5\n")


def test_a_snapshot_a_note_names_is_kept(run_repo: Repo) -> None:
    policy(run_repo, keep_last=1)
    chain = snapshots(run_repo, "demo", [int(time.time()) - 100 + n for n in range(4)])
    run_repo.git("notes", "--ref=shift-data", "add", "-f", "-m", json.dumps({"snapshot": chain[1]}), "HEAD")
    run_repo.json("gc")
    assert set(kept(run_repo, "demo")) == {2, 4}


CHECKPOINTER = """
import subprocess, sys
sg, count = sys.argv[1:-1], int(sys.argv[-1])
for n in range(1, count + 1):
    open("marker.txt", "w").write(f"snapshot-race-{n}\\n")
    proc = subprocess.run([*sg, "checkpoint", "--step", f"race {n}"], capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"checkpoint {n} failed: {proc.stderr}")
"""


def test_checkpoints_racing_gc_lose_nothing(run_repo: Repo, tmp_path: Path) -> None:
    policy(run_repo, keep_last=3)
    script = tmp_path / "checkpointer.py"
    script.write_text(CHECKPOINTER)
    count = 12
    writer = subprocess.Popen([sys.executable, str(script), *SG, str(count)], cwd=run_repo.path, text=True,
                              stderr=subprocess.PIPE)
    runs = 0
    while writer.poll() is None or runs == 0:
        proc = run_repo.sg("gc", "--json")
        assert proc.returncode == 0, proc.stderr
        runs += 1
    assert writer.wait() == 0, writer.stderr.read() if writer.stderr else ""
    ledger = run_repo.ledger("demo")
    assert ledger["checkpoint"]["seq"] == count and ledger["checkpoint"]["step"] == f"race {count}"
    tip = run_repo.git("rev-parse", "refs/shift/snapshots/demo^{tree}").strip()
    assert tip == ledger["checkpoint"]["tree"], "the last checkpoint's snapshot is the chain's tip"
    run_repo.ok("gc")
    markers = [run_repo.git("show", f"{c}:marker.txt").strip() for c in
               run_repo.git("rev-list", "refs/shift/snapshots/demo", "--not", "--branches").split()]
    assert markers == [f"snapshot-race-{n}" for n in (count, count - 1, count - 2)]
    fsck_ok(run_repo)
