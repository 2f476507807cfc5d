"""What `shiftgit log` costs along a long history, against git's own log of the same notes, and its memory.

    python bench/log_scale.py [--commits 10000] [--rounds 15] [--base CHECKOUT] [--quick]

Builds (isolated from the machine's git config) a repository whose COMMITS commits each carry a
handoff note as checkpoints write them (a human note on refs/notes/shift, a machine record on
refs/notes/shift-data) and one with 100 such commits, then every round times, interleaved:
`<this python> -c pass` (the unit), `git log --notes=shift --oneline` (the reference: git printing
the same history with its notes), `shiftgit log` (every checkpoint), and `shiftgit log -n N` for N =
1, 20, 200 at COMMITS commits and N = 20 at 100. A figure is the median over the rounds of (command
time / that round's `python -c pass`), with the spread (lowest and highest round). Then the peak
RSS of `shiftgit log` and `log --json` at COMMITS commits (the largest process: Python or a git it
started, from getrusage(RUSAGE_CHILDREN) of a helper that only runs it).

With `--base CHECKOUT` (another shiftgit checkout, e.g. main's), `log`, `log -n 1` and `log --json` of
that checkout run in the same rounds (its figures marked "base"), after a check that both checkouts
print the same bytes for `log`, `log -n 20` and `log --json`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, SG, compile_bytecode, fast_history, isolate, parse, peak_rss_mib, run, scale

from shiftgit.git.notes import write_note_refs  # noqa: E402


def timed(cwd: Path, argv: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    run(cwd, *argv, env=env)
    return time.perf_counter() - started


def history(path: Path, commits: int) -> Path:
    """COMMITS commits (fast-import), each with a checkpoint's handoff note on both notes refs; shiftgit set up."""
    fast_history(path, commits)
    run(path, *SG, "init", "--hooks", "none")
    ids = run(path, "git", "rev-list", "--reverse", "HEAD").split()
    human, data = {}, {}
    for i, commit in enumerate(ids):
        point = {"id": f"p-{commit[:12]}", "seq": i + 1, "run": "demo", "step": f"step {i}",
                 "at": f"2024-01-01T00:00:{i % 60:02d}Z", "base": commit, "next": {"action": f"after {i}"}}
        data[commit] = json.dumps({"shift_note": 1, "checkpoints": [point]}, sort_keys=True,
                                  separators=(",", ":")) + "\n"
        human[commit] = f"shiftgit: demo #{i + 1} step {i}\n  next: after {i}\n"
    write_note_refs(path, {"refs/notes/shift": human, "refs/notes/shift-data": data})
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--base", type=Path, help="another shiftgit checkout to compare with, interleaved")
    args = parse(parser, commits=30, rounds=2)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="shiftgit-bench-") as tmp:
        base = Path(tmp)
        isolate(base / "home")
        compile_bytecode()
        if args.base:
            compile_bytecode(args.base.resolve())
        short, long = history(base / "short", 100), history(base / "long", args.commits)
        lines = len(run(long, *SG, "log").splitlines())
        if lines != args.commits:
            raise SystemExit(f"shiftgit log printed {lines} lines for {args.commits} checkpointed commits")
        n = f"{args.commits:,}"
        base_env = {"PYTHONPATH": str(args.base.resolve())} if args.base else None
        if base_env is not None:
            for argv in (["log"], ["log", "-n", "20"], ["log", "--json"]):
                if run(long, *SG, *argv) != run(long, *SG, *argv, env=base_env):
                    raise SystemExit(f"shiftgit {' '.join(argv)} prints other bytes than {args.base}'s")
        cases: dict[str, tuple[Path, list[str]]] = {
            "python -c pass": (base, [sys.executable, "-c", "pass"]),
            f"  reference: git log --notes=shift --oneline, {n}": (long, ["git", "log", "--notes=shift", "--oneline"]),
            f"log, {n} commits": (long, [*SG, "log"]),
            f"log -n 1, {n} commits": (long, [*SG, "log", "-n", "1"]),
            f"log -n 20, {n} commits": (long, [*SG, "log", "-n", "20"]),
            f"log -n 200, {n} commits": (long, [*SG, "log", "-n", "200"]),
            "log -n 20, 100 commits": (short, [*SG, "log", "-n", "20"]),
            f"log --json, {n} commits": (long, [*SG, "log", "--json"]),
        }
        based = {f"{name} (base)": (cwd, argv) for name, (cwd, argv) in cases.items()
                 if base_env is not None and name.startswith(("log,", "log -n 1,", "log --json,"))}
        ratios: dict[str, list[float]] = {name: [] for name in [*cases, *based]}
        unit: list[float] = []
        for i in range(args.rounds + 1):  # round 0 warms the caches up and is not counted
            took = {name: timed(cwd, argv) for name, (cwd, argv) in cases.items()}
            took.update({name: timed(cwd, argv, base_env) for name, (cwd, argv) in based.items()})
            if i:
                unit.append(took["python -c pass"])
                for name, seconds in took.items():
                    ratios[name].append(seconds / took["python -c pass"])
        rss = {argv: peak_rss_mib(long, [*SG, *argv.split()]) for argv in ("log", "log --json")}
        if base_env is not None:
            os.environ["PYTHONPATH"] = base_env["PYTHONPATH"]
            rss.update({f"{argv} (base)": peak_rss_mib(long, [*SG, *argv.split()]) for argv in ("log", "log --json")})
            os.environ["PYTHONPATH"] = str(ROOT)
        rss["git log --notes=shift --oneline"] = peak_rss_mib(long, ["git", "log", "--notes=shift", "--oneline"])
        load_after = os.getloadavg()
    print(f"{sys.executable} -c pass: {1000 * statistics.median(unit):.1f} ms (median of {len(unit)}); {scale()}")
    print(f"medians of {args.rounds} rounds, interleaved; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after" + ("  [--quick: sizes too small to mean anything]" if args.quick else ""))
    print(f"{'command':<52} {'start-ups':>9} {'spread':>15}")
    median = {name: statistics.median(values) for name, values in ratios.items()}
    for name, values in ratios.items():
        print(f"{name:<52} {median[name]:>9.2f} {min(values):>7.2f}-{max(values):<7.2f}")
    reference = median[f"  reference: git log --notes=shift --oneline, {n}"] + 1
    print(f"log of {n} commits / (git log --notes=shift --oneline + one start-up): "
          f"{median[f'log, {n} commits'] / reference:.2f}x"
          + (f" (base: {median[f'log, {n} commits (base)'] / reference:.2f}x)" if based else ""))
    deep, shallow = median[f"log -n 20, {n} commits"], median["log -n 20, 100 commits"]
    print(f"log -n 20 at {n} / at 100 commits: {deep / shallow:.2f}x; log -n 200 / log -n 1 at {n}: "
          f"{median[f'log -n 200, {n} commits'] / median[f'log -n 1, {n} commits']:.2f}x")
    print("peak RSS (largest process): " + ", ".join(f"{name} {mib:.1f} MiB" for name, mib in rss.items()))


if __name__ == "__main__":
    main()
