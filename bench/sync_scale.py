"""How `shiftgit sync` and the ledger merge driver cost: big notes refs, many machines at once.

    python bench/sync_scale.py [--notes 10000] [--sync-rounds 15] [--machines 4] [--rounds 3] [--quick]

1. Two clones of a bare remote each hold --notes notes on distinct commits (a human note on
   refs/notes/shift and a machine record on refs/notes/shift-data, as checkpoints write them) plus
   100 commits noted differently on both sides, and a run with its refs/shift/* refs; A has synced.
   Every round (--sync-rounds, interleaved, order alternating) copies that state twice and times, on
   B, `shiftgit sync` (fetch, merge both notes refs, push) against the raw git doing the same to the
   same refs: `git fetch` of refs/notes/* and refs/shift/*, `git notes merge -s cat_sort_uniq` of
   each notes ref, `git push` of both notes refs and refs/shift/*; then `<python> -c pass`. Figures:
   medians with the spread, in seconds and in start-ups; and the peak RSS of sync's largest process
   (Python or a git it started: getrusage(RUSAGE_CHILDREN) of a helper that only runs it).
2. --machines clones with 5 notes each sync at the same moment (real processes), --rounds times:
   wall time and the attempts each needed (a rejected push starts again from the fetch).
3. The merge driver on two ledgers with 200 constraints, 200 effects and 100 history lines each.
Runs isolated from the machine's git config.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import SG, isolate, parse, peak_rss_mib, run, scale

from shiftgit.git.notes import write_note_refs, write_notes  # noqa: E402


def network(tmp: Path, names: list[str]) -> list[Path]:
    seed = tmp / "seed"
    seed.mkdir()
    run(seed, "git", "init", "-q", "-b", "main")
    run(seed, "git", "commit", "-q", "--allow-empty", "-m", "seed")
    run(tmp, "git", "clone", "-q", "--bare", str(seed), str(tmp / "origin.git"))
    paths = []
    for name in names:
        run(tmp, "git", "clone", "-q", str(tmp / "origin.git"), str(tmp / name))
        run(tmp / name, *SG, "init", "--hooks", "none")
        paths.append(tmp / name)
    return paths


def timed_sync(path: Path) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    out = run(path, *SG, "sync", "--json")
    return time.perf_counter() - started, json.loads(out)


def raw_sync(path: Path) -> None:
    """What sync does, in git alone: fetch the notes and refs/shift/*, merge each notes ref, push them all."""
    run(path, "git", "fetch", "--quiet", "--no-tags", "origin", "+refs/notes/*:refs/notes/theirs/*",
        "+refs/shift/*:refs/shift-theirs/*")
    for ref in ("shift", "shift-data"):
        run(path, "git", "notes", f"--ref={ref}", "merge", "--quiet", "-s", "cat_sort_uniq",
            f"refs/notes/theirs/{ref}")
    run(path, "git", "push", "--quiet", "--no-verify", "origin", "refs/notes/shift:refs/notes/shift",
        "refs/notes/shift-data:refs/notes/shift-data", "refs/shift/*:refs/shift/*")


def side(path: Path, name: str, count: int, shared: list[str]) -> None:
    """COUNT noted commits of this side's own plus the SHARED ones, both notes refs, and a checkpointed run."""
    def record(commit: str, i: int) -> str:
        return json.dumps({"shift_note": 1, "checkpoints": [{"id": f"p-{name}-{commit[:8]}", "seq": i + 1,
                                                             "run": f"run-{name}", "step": f"step {i}"}]},
                          sort_keys=True, separators=(",", ":")) + "\n"
    commits = {secrets.token_hex(20): i for i in range(count)} | {c: i for i, c in enumerate(shared)}
    write_note_refs(path, {"refs/notes/shift": {c: f"shiftgit: run-{name} #{i + 1} step {i}\n"
                                                 for c, i in commits.items()},
                           "refs/notes/shift-data": {c: record(c, i) for c, i in commits.items()}})
    run(path, *SG, "start", f"run-{name}", "--goal", "g", "--stop-when", "s")
    (path / f"{name}.txt").write_text(name)
    run(path, *SG, "checkpoint", "--step", "bench", "--next", "more")


def copy(template: Path, target: Path) -> Path:
    """A copy of the remote and of B (its remote pointed at the copy), as the template left them."""
    shutil.copytree(template, target, symlinks=True)
    run(target / "b", "git", "remote", "set-url", "origin", str(target / "origin.git"))
    return target / "b"


def big_notes(tmp: Path, count: int, rounds: int) -> None:
    template = tmp / "template"
    template.mkdir()
    a, b = network(template, ["a", "b"])
    shared = [secrets.token_hex(20) for _ in range(100)]
    side(a, "a", count, shared)
    side(b, "b", count, shared)
    seconds, report = timed_sync(a)
    print(f"1. two machines with {count} notes each on both notes refs, 100 commits noted on both, a run each")
    print(f"   A first push {seconds:6.2f} s  {report['notes']}")
    load_before = os.getloadavg()
    samples: dict[str, list[float]] = {"shiftgit sync": [], "raw git fetch + notes merge + push": [],
                                       "python -c pass": []}
    last: dict[str, object] = {}
    for i in range(rounds + 1):  # round 0 warms the caches up and is not counted
        ours, raw = copy(template, tmp / f"s{i}"), copy(template, tmp / f"r{i}")
        took = {}
        for name in (list(samples) if i % 2 else reversed(list(samples))):
            started = time.perf_counter()
            if name == "shiftgit sync":
                last = json.loads(run(ours, *SG, "sync", "--json"))
            elif name.startswith("raw"):
                raw_sync(raw)
            else:
                run(tmp, sys.executable, "-c", "pass")
            took[name] = time.perf_counter() - started
        if i:
            for name, value in took.items():
                samples[name].append(value)
        for done in (tmp / f"s{i}", tmp / f"r{i}"):
            shutil.rmtree(done)
    load_after = os.getloadavg()
    unit = statistics.median(samples["python -c pass"])
    ratios = [s / r for s, r in zip(samples["shiftgit sync"], samples["raw git fetch + notes merge + push"],
                                     strict=True)]
    print(f"   B merges A's notes: medians of {rounds} rounds, interleaved; load average {load_before[0]:.2f} "
          f"before, {load_after[0]:.2f} after; python -c pass {unit * 1000:.1f} ms")
    for name, values in samples.items():
        if name != "python -c pass":
            print(f"   {name:<36} {statistics.median(values):6.3f} s ({min(values):.3f}-{max(values):.3f})"
                  f"  {statistics.median(values) / unit:6.1f} start-ups")
    print(f"   sync / raw, per round: median {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
          f"  {last.get('notes')}")
    ours = copy(template, tmp / "rss")
    print(f"   peak RSS of sync (largest process): {peak_rss_mib(ours, [*SG, 'sync', '--json']):.1f} MiB")
    seconds, report = timed_sync(b)
    print(f"   B merge        {seconds:6.2f} s  {report['notes']}")
    seconds, report = timed_sync(a)
    print(f"   A fast-forward {seconds:6.2f} s  {report['notes']}")
    seconds, report = timed_sync(a)
    print(f"   A up to date   {seconds:6.2f} s  {report['notes']}")


def contention(tmp: Path, machines: int, rounds: int) -> None:
    names = [f"m{i}" for i in range(machines)]
    paths = network(tmp, names)
    walls, attempts = [], []
    for r in range(rounds):
        for path in paths:
            notes = {secrets.token_hex(20): f"shift: {path.name} round {r} #{i}\n" for i in range(5)}
            write_notes(path, notes)
        started = time.perf_counter()
        procs = [subprocess.Popen([*SG, "sync", "--json"], cwd=p, stdout=subprocess.PIPE, text=True) for p in paths]
        reports = [json.loads(proc.communicate()[0]) for proc in procs]
        walls.append(time.perf_counter() - started)
        attempts += [int(report["attempts"]) for report in reports]
    total = len(run(tmp / "origin.git", "git", "notes", "--ref=shift", "list").splitlines())
    print(f"2. {machines} machines syncing at once, {rounds} rounds: wall median {statistics.median(walls):.2f} s, "
          f"attempts per sync median {statistics.median(attempts)} max {max(attempts)}; "
          f"remote holds {total} of {machines * 5 * rounds} notes")


def driver(tmp: Path) -> None:
    from shiftgit.ledger.model import Contract, Ledger, canonical_bytes

    def ledger(side: str) -> bytes:
        at = "2024-05-01T00:00:00Z"
        doc = Ledger(run="demo", created_at=at, updated_at=at, contract=Contract(goal="g", stop_when="s")).to_dict()
        doc["constraints"] = [{"id": f"c-{side}{i}", "text": f"rule {i}", "status": "active", "added_at": at}
                              for i in range(200)]
        doc["effects"] = [{"key": f"k-{side}{i}", "kind": "deploy", "reversibility": "reversible",
                           "state": "completed", "created_at": at} for i in range(200)]
        doc["history"] = [{"id": f"p-{side}{i}", "seq": i + 1, "at": at} for i in range(100)]
        return canonical_bytes(doc)

    files = {name: tmp / f"{name}.json" for name in ("base", "ours", "theirs")}
    files["base"].write_bytes(ledger("b"))
    times = []
    for _ in range(5):
        files["ours"].write_bytes(ledger("o"))
        files["theirs"].write_bytes(ledger("t"))
        started = time.perf_counter()
        run(tmp, *SG, "merge-driver", *(str(files[n]) for n in ("base", "ours", "theirs")), "ledger.json")
        times.append(time.perf_counter() - started)
    print(f"3. merge driver, 200 constraints + 200 effects + 100 history lines a side: "
          f"median {statistics.median(times) * 1000:.0f} ms per merge (process start included)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--sync-rounds", type=int, default=15)
    parser.add_argument("--machines", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parse(parser, notes=20, sync_rounds=2, machines=2, rounds=1)
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        (tmp / "home").mkdir()
        isolate(tmp / "home")
        for part, call in (("big", lambda d: big_notes(d, args.notes, args.sync_rounds)),
                           ("many", lambda d: contention(d, args.machines, args.rounds)), ("driver", driver)):
            (tmp / part).mkdir()
            call(tmp / part)
        print(scale())


if __name__ == "__main__":
    main()
