"""How `shiftgit sync` and the ledger merge driver cost: big notes refs, many machines at once.

    python bench/sync_scale.py [--notes 10000] [--machines 4] [--rounds 3]

1. Two clones of a bare remote each hold --notes notes on distinct commits plus 100 commits noted
   differently on both sides; times `sync` on A (first push), B (merge), A (fast-forward), A (nothing).
2. --machines clones with 5 notes each sync at the same moment (real processes), --rounds times:
   wall time and the attempts each needed (a rejected push starts again from the fetch).
3. The merge driver on two ledgers with 200 constraints, 200 effects and 100 history lines each.
Runs isolated from the machine's git config.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _common import SG, isolate, parse

from shiftgit.git.notes import write_notes  # noqa: E402


def run(cwd: Path, *argv: str) -> str:
    return subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, check=True).stdout


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


def big_notes(tmp: Path, count: int) -> None:
    a, b = network(tmp, ["a", "b"])
    shared = [secrets.token_hex(20) for _ in range(100)]
    for path, name in ((a, "a"), (b, "b")):
        texts = {secrets.token_hex(20): f"shift: {name} {i}\n" for i in range(count)}
        texts.update({c: f"shift: {name}\n" + json.dumps({"checkpoints": [{"id": f"p-{name}-{c[:6]}", "seq": 1}]})
                      for c in shared})
        write_notes(path, texts)
    print(f"1. two machines with {count} notes each and 100 commits noted on both")
    for label, path in (("A first push", a), ("B merge", b), ("A fast-forward", a), ("A up to date", a)):
        seconds, report = timed_sync(path)
        print(f"   {label:16s} {seconds:6.2f} s  {report['notes']}")


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
    parser.add_argument("--machines", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parse(parser, notes=20, machines=2, rounds=1)
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        (tmp / "home").mkdir()
        isolate(tmp / "home")
        for part, call in (("big", lambda d: big_notes(d, args.notes)),
                           ("many", lambda d: contention(d, args.machines, args.rounds)), ("driver", driver)):
            (tmp / part).mkdir()
            call(tmp / part)


if __name__ == "__main__":
    main()
