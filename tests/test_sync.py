"""`shiftgit sync` between real clones of a real bare remote: notes and snapshots, any order, in parallel."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SG, Repo, make_repo

from shiftgit.git.notemerge import split_note


def network(tmp_path: Path, names: list[str]) -> tuple[Repo, list[Repo]]:
    """A bare `origin` seeded with an initialised repo, and one clone per name on its own branch."""
    seed = make_repo(tmp_path / "seed")
    seed.ok("init", "--hooks", "none")
    assert seed.commit("set up shiftgit").returncode == 0
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.path), str(origin)], check=True)
    clones = []
    for name in names:
        subprocess.run(["git", "clone", "-q", str(origin), str(tmp_path / name)], check=True)
        clone = Repo(tmp_path / name)
        clone.ok("init", "--hooks", "none")
        clone.git("checkout", "-q", "-b", f"work-{name}")
        clones.append(clone)
    return Repo(origin), clones


def add_notes(repo: Repo, name: str, count: int) -> list[str]:
    commits = []
    for i in range(count):
        repo.git("commit", "-q", "--allow-empty", "-m", f"{name} {i}")
        commits.append(repo.head())
        repo.git("notes", "--ref=shift", "add", "-m", f"shift: {name} #{i}", "HEAD")
    return commits


def json_note(name: str, point: str) -> str:
    return f"shift: {name}\n" + json.dumps({"run": "demo", "checkpoints": [{"id": point, "seq": 1}]})


def notes(repo: Repo) -> dict[str, str]:
    listing = repo.git("notes", "--ref=shift", "list").split()
    return {commit: repo.git("notes", "--ref=shift", "show", commit) for commit in listing[1::2]}


@pytest.mark.parametrize("order", ["aba", "bab", "abba"])
def test_two_machines_converge_in_any_order(tmp_path: Path, order: str) -> None:
    origin, (a, b) = network(tmp_path, ["a", "b"])
    shared = a.git("rev-parse", "main").strip()
    a_commits, b_commits = add_notes(a, "a", 3), add_notes(b, "b", 2)
    a.git("notes", "--ref=shift", "add", "-m", json_note("a", "p-a"), shared)
    b.git("notes", "--ref=shift", "add", "-m", json_note("b", "p-b"), shared)
    for who in order:
        (a if who == "a" else b).ok("sync")
    found = notes(a)
    assert found == notes(b) == notes(origin)
    assert set(found) == {shared, *a_commits, *b_commits}
    assert found[a_commits[0]] == "shift: a #0\n"
    human, body = split_note(found[shared]) or ([], {})
    assert human == ["shift: a", "shift: b"] and [p["id"] for p in body["checkpoints"]] == ["p-a", "p-b"]
    assert a.git("rev-parse", "refs/notes/shift") == origin.git("rev-parse", "refs/notes/shift")


def test_the_notes_commit_keeps_both_histories(tmp_path: Path) -> None:
    origin, (a, b) = network(tmp_path, ["a", "b"])
    add_notes(a, "a", 1)
    add_notes(b, "b", 1)
    a.ok("sync")
    report = b.json("sync")
    assert report["notes"] == {"result": "merged", "added": 1, "merged": 0, "total": 2}
    assert report["pushed"] == ["refs/notes/shift"] and report["remote"] == "origin"
    parents = b.git("rev-list", "--parents", "-n", "1", "refs/notes/shift").split()[1:]
    assert sorted(parents) == sorted([b.git("rev-parse", "refs/notes/shift^1").strip(),
                                      a.git("rev-parse", "refs/notes/shift").strip()])
    assert a.json("sync")["notes"]["result"] == "fast-forward"
    assert a.json("sync")["notes"]["result"] == "up-to-date"


def test_parallel_syncs_lose_no_note(tmp_path: Path) -> None:
    names = ["a", "b", "c", "d"]
    origin, clones = network(tmp_path, names)
    expected = {c for clone, name in zip(clones, names, strict=True) for c in add_notes(clone, name, 5)}
    procs = [subprocess.Popen([*SG, "sync", "--json"], cwd=clone.path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for clone in clones]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 4, outputs
    assert set(notes(origin)) == expected  # every sync that said 0 had its notes on the remote
    for clone in clones:
        clone.ok("sync")
    assert all(notes(clone) == notes(origin) for clone in clones)


def test_plain_fetch_never_fails_nor_wipes_local_notes(tmp_path: Path) -> None:
    origin, (a, b) = network(tmp_path, ["a", "b"])
    a.git("fetch", "-q", "origin")  # the remote has no notes yet: the glob refspec does not fail
    mine = add_notes(a, "a", 1)
    add_notes(b, "b", 1)
    b.ok("sync")
    before = a.git("rev-parse", "refs/notes/shift")
    a.git("fetch", "-q", "origin")
    assert a.git("rev-parse", "refs/notes/shift") == before
    assert a.git("rev-parse", "refs/shift-remote/origin/notes/shift") == origin.git("rev-parse", "refs/notes/shift")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from shiftgit.git.sync import notes_refs
    from shiftgit.repo import Repo as CoreRepo

    assert notes_refs(CoreRepo.open(a.path)) == ["refs/notes/shift-data", "refs/notes/shift",
                                                 "refs/shift-remote/origin/notes/shift"]
    a.ok("sync")
    assert mine[0] in notes(origin)


def test_snapshots_are_pushed_and_diverged_histories_are_both_kept(tmp_path: Path) -> None:
    origin, (a, b) = network(tmp_path, ["a", "b"])
    ref = "refs/shift/snapshots/demo"
    snaps = []
    for clone in (a, b):  # the same run id started on two machines: two snapshot histories of one ref
        clone.ok("start", "demo", "--goal", "g", "--stop-when", "s")
        clone.write("calc.py", f"# {clone.path.name}\n")
        snaps.append(clone.json("checkpoint", "--step", "edit")["snapshot"])
    ledgers = "refs/shift/ledgers/demo"  # each checkpoint's ledger travels beside its snapshot
    assert a.json("sync")["pushed"] == [ledgers, ref]
    assert origin.git("rev-parse", ref).strip() == snaps[0]
    report = b.json("sync")
    assert report["snapshots"] == {ledgers: "merged", ref: "merged"}
    tip = origin.git("rev-parse", ref).strip()
    assert tip == b.git("rev-parse", ref).strip()
    assert sorted(origin.git("rev-list", "--parents", "-n", "1", tip).split()[1:]) == sorted(snaps)
    assert b.git("rev-parse", f"{tip}^{{tree}}") == b.git("rev-parse", f"{snaps[1]}^{{tree}}")
    assert a.json("sync")["snapshots"] == {ledgers: "fast-forward", ref: "fast-forward"}
    assert a.git("rev-parse", ref).strip() == tip


def test_sync_defaults_to_the_upstream_remote_and_names_a_missing_one(tmp_path: Path) -> None:
    _, (a,) = network(tmp_path, ["a"])
    a.git("remote", "rename", "origin", "hub")
    a.git("checkout", "-q", "main")
    add_notes(a, "a", 1)
    assert a.json("sync")["remote"] == "hub"
    proc = a.sg("sync", "nowhere")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "git remote add nowhere" in proc.stderr


def test_log_reads_the_notes_a_plain_fetch_brought(tmp_path: Path) -> None:
    origin, (a, b) = network(tmp_path, ["a", "b"])
    a.git("push", "-q", "origin", "work-a")
    a.ok("init", "--hooks", "git")
    a.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    assert a.commit("start demo").returncode == 0
    a.write("calc.py", "# a\n")
    a.ok("checkpoint", "--step", "edited on a")
    assert a.commit("edit").returncode == 0
    a.git("push", "-q", "origin", "HEAD:work-a")
    a.ok("sync")
    b.git("fetch", "-q", "origin")  # the refspec `init` added brings the notes, privately
    b.git("checkout", "-q", "-B", "work-a", "origin/work-a")
    assert b.git("notes", "--ref=shift", "list") == ""
    steps = [e["step"] for e in b.json("log") if e.get("commit")]
    assert steps == ["edited on a"]


def test_sync_carries_the_records_and_renders_merged_notes_from_them(tmp_path: Path) -> None:
    """Both clones record a checkpoint on one shared commit: after syncing both ways each side holds one
    record with both checkpoints, and the human note is rendered from it (no JSON, no keep-both marker)."""
    from shiftgit.git import handoff

    origin, (a, b) = network(tmp_path, ["a", "b"])
    shared = a.head()
    for clone, name in ((a, "a"), (b, "b")):
        point = {"id": f"p1-{name}", "seq": 1, "run": name, "step": f"step of {name}", "at": "2030-01-01T00:00:00Z"}
        human, data = handoff.pair({"shift_note": 1, "checkpoints": [point], "runs": [name]})
        clone.git("notes", "--ref=shift", "add", "-f", "-m", human.rstrip("\n"), shared)
        clone.git("notes", "--ref=shift-data", "add", "-f", "-m", data.rstrip("\n"), shared)
    a.ok("sync")
    b.ok("sync")
    a.ok("sync")
    for clone in (a, b):
        record = json.loads(clone.git("notes", "--ref=shift-data", "show", shared))
        assert sorted(p["id"] for p in record["checkpoints"]) == ["p1-a", "p1-b"]
        note = clone.git("notes", "--ref=shift", "show", shared)
        assert "step of a" in note and "step of b" in note and "{" not in note and "merged note" not in note
    assert origin.git("notes", "--ref=shift-data", "show", shared) == a.git("notes", "--ref=shift-data", "show", shared)


def test_big_notes_trees_merge_into_one_pack_and_converge(tmp_path: Path) -> None:
    """Hundreds of notes a side (written as `write_notes` does, in fanout trees): the merged tree is built from
    one listing of each side and written as a pack; both clones and the remote end with the same notes."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from shiftgit.git.notes import write_notes

    origin, (a, b) = network(tmp_path, ["a", "b"])
    shared = a.git("rev-parse", "main").strip()
    for clone, name in ((a, "a"), (b, "b")):
        fake = {hashlib.sha1(f"{name} {i}".encode()).hexdigest(): f"shift: {name} #{i}\n" for i in range(300)}
        write_notes(clone.path, {**fake, shared: json_note(name, f"p-{name}")})
    packs = len(list((b.path / ".git/objects/pack").glob("*.pack")))
    a.ok("sync")
    report = json.loads(b.ok("sync", "--json").stdout)
    assert report["notes"] == {"result": "merged", "added": 300, "merged": 1, "total": 601}
    assert len(list((b.path / ".git/objects/pack").glob("*.pack"))) == packs + 2  # fetched, and the merged trees
    a.ok("sync")
    found = notes(b)
    assert found == notes(a) == notes(origin) and len(found) == 601
    human, body = split_note(found[shared]) or ([], {})
    assert human == ["shift: a", "shift: b"] and [p["id"] for p in body["checkpoints"]] == ["p-a", "p-b"]
    assert b.run(["git", "fsck", "--no-progress", "--no-dangling"]).returncode == 0


def test_sync_survives_other_fetches_of_the_same_refs(tmp_path: Path) -> None:
    """A checkpoint's background publisher fetches the same tracking refs as a `sync` the user starts meanwhile:
    git refuses one of two fetches that update one ref from the same old value ("cannot lock ref"). Real
    processes race here: B keeps moving a ledger ref on the remote while two fetch loops run in A; every
    `sync` of A still succeeds (it fetches again) and A's notes reach the remote."""
    origin, (a, b) = network(tmp_path, ["a", "b"])
    mover = ("for i in $(seq 400); do git commit -q --allow-empty -m m$i && "
             "git push -q -f origin HEAD:refs/shift/ledgers/demo HEAD:refs/shift/ledgers/other || true; done")
    fetch = ("for i in $(seq 400); do git fetch -q --no-tags --no-write-fetch-head origin "
             "'+refs/shift/*:refs/shift-remote/origin/shift/*' 2>/dev/null; done")
    racers = [subprocess.Popen(["bash", "-c", mover], cwd=b.path),
              *(subprocess.Popen(["bash", "-c", fetch], cwd=a.path) for _ in range(2))]
    try:
        commits = add_notes(a, "a", 8)
        for _ in range(8):
            proc = a.sg("sync")
            assert proc.returncode == 0, proc.stderr
    finally:
        for racer in racers:
            racer.kill()
            racer.wait()
    pushed = origin.git("notes", "--ref=shift", "list").split()[1::2]
    assert set(commits) <= set(pushed)
