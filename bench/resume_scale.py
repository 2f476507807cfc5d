"""What resume / verify cost over a long run, in start-ups of this Python: python bench/resume_scale.py [CHECKPOINTS]

    python bench/resume_scale.py [CHECKPOINTS] [--rounds 15] [--quick]

Builds a run with CHECKPOINTS long checkpoints (through the library, on a real repository, one
recorded check: `<this python> -c pass`), then every round times, interleaved with `<this python>
-c pass` (the unit) and the bare command `verify` reruns (the same `<this python> -c pass`, run
directly): `resume --no-run` here, `resume --no-run` in a fresh clone (no notes, no snapshot refs;
exit 4: the first clone holds the lease), `verify` (one trivial check) and `rollback --yes` of a
small edit (the edit not timed). A figure is the median over the rounds of (command time / that
round's `python -c pass`), with the spread (lowest and highest round); `verify`'s overhead is its
time less the bare command's, per round. Also the briefing's length, and the git processes
`resume --no-run` and `verify` start (GIT_TRACE2_EVENT).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import SG, compile_bytecode, isolate, parse, scale


def sh(cwd: Path, *argv: str, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} -> {proc.returncode}\n{proc.stderr}")
    return proc.stdout


def timed(cwd: Path, argv: list[str], ok: tuple[int, ...] = (0,)) -> float:
    started = time.perf_counter()
    sh(cwd, *argv, ok=ok)
    return time.perf_counter() - started


def build(root: Path, checkpoints: int) -> None:
    from shiftgit.ledger.store import Store
    from shiftgit.runs import checkpoints as cp

    sh(root, "git", "init", "-q", "-b", "main")
    (root / "app.py").write_text("x = 1\n")
    sh(root, "git", "add", "-A")
    sh(root, "git", "commit", "-q", "-m", "initial")
    sh(root, *SG, "init", "--hooks", "none")
    sh(root, *SG, "start", "bench", "--goal", "g", "--stop-when", "s", *sum(
        (["--constraint", f"rule {n} " + "r" * 100] for n in range(20)), []))
    sh(root, *SG, "check", "-q", "--", sys.executable, "-c", "pass")
    store = Store.open(root)
    for i in range(checkpoints):
        (root / "app.py").write_text(f"x = {i}\n")
        spec = cp.CheckpointInput(step=f"step {i} " + "s" * 300, note="n" * 300, done=(f"item {i}",),
                                  decisions=(f"decision {i}",))
        cp.checkpoint(store, "bench", spec)
    sh(root, "git", "add", "-A")
    sh(root, "git", "commit", "-q", "-m", "work")


def git_processes(cwd: Path, argv: list[str], trace: Path, ok: tuple[int, ...] = (0,)) -> int:
    """How many git processes a command starts (GIT_TRACE2_EVENT: one `start` event per git process)."""
    trace.unlink(missing_ok=True)
    sh(cwd, *argv, ok=ok, env={**os.environ, "GIT_TRACE2_EVENT": str(trace)})
    lines = trace.read_text().splitlines() if trace.exists() else []
    return sum(1 for line in lines if json.loads(line).get("event") == "start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", type=int, nargs="?", default=200)
    parser.add_argument("--rounds", type=int, default=15)
    args = parse(parser, checkpoints=3, rounds=2)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="shiftgit-bench-") as tmp:
        isolate(Path(tmp) / "home")
        compile_bytecode()
        root = Path(tmp) / "work"
        root.mkdir()
        build(root, args.checkpoints)
        clone = Path(tmp) / "clone"
        sh(Path(tmp), "git", "clone", "-q", "--no-local", str(root), str(clone))
        briefing = json.loads(sh(root, *SG, "resume", "--no-run", "--json"))["briefing"]
        py = [sys.executable, "-c", "pass"]
        edit = [sys.executable, "-c", "open('app.py', 'a').write('# edit\\n')"]
        cases: dict[str, tuple[Path, list[str], tuple[int, ...]]] = {
            "python -c pass": (root, py, (0,)),
            "resume --no-run": (root, [*SG, "resume", "--no-run"], (0,)),
            "resume --no-run, fresh clone": (clone, [*SG, "resume", "bench", "--no-run"], (0, 4)),
            "  bare check (python -c pass)": (root, py, (0,)),
            "verify, 1 check": (root, [*SG, "verify"], (0,)),
            "rollback --yes, 1 file": (root, [*SG, "rollback", "--yes"], (0,)),
        }
        ratios: dict[str, list[float]] = {name: [] for name in cases}
        overhead: list[float] = []
        unit: list[float] = []
        for i in range(args.rounds + 1):  # round 0 warms the caches up and is not counted
            took = {}
            for name, (cwd, argv, ok) in cases.items():
                if name.startswith("rollback"):
                    sh(root, *edit)
                took[name] = timed(cwd, argv, ok)
            if i:
                unit.append(took["python -c pass"])
                for name, seconds in took.items():
                    ratios[name].append(seconds / took["python -c pass"])
                overhead.append((took["verify, 1 check"] - took["  bare check (python -c pass)"])
                                / took["python -c pass"])
        trace = Path(tmp) / "trace.json"
        processes = {"resume --no-run": git_processes(root, [*SG, "resume", "--no-run"], trace),
                     "verify": git_processes(root, [*SG, "verify"], trace)}
        load_after = os.getloadavg()
    print(f"{args.checkpoints} checkpoints, 21 constraints; briefing {len(briefing)} characters"
          + ("  [--quick: sizes too small to mean anything]" if args.quick else ""))
    print(f"{sys.executable} -c pass: {1000 * statistics.median(unit):.1f} ms (median of {len(unit)}); {scale()}")
    print(f"medians of {args.rounds} rounds, interleaved; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after")
    print(f"{'command':<44} {'start-ups':>9} {'spread':>15}")
    for name, values in [*ratios.items(), ("verify overhead over the bare check", overhead)]:
        print(f"{name:<44} {statistics.median(values):>9.2f} {min(values):>7.2f}-{max(values):<7.2f}")
    print("git processes: " + ", ".join(f"{name} {count}" for name, count in processes.items()))


if __name__ == "__main__":
    main()
