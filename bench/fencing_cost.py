"""What the lease and the chain add to `checkpoint` and to a checkpointed `git commit`, in start-ups of this Python.

    python bench/fencing_cost.py --base /path/to/a/checkout/without/fencing [--rounds 15]

Two throw-away repositories (isolated from the machine's git config), one run by the base checkout's
shiftgit, one by this checkout's (PYTHONPATH), both with `shiftgit init --hooks git` and a started run.
Every round, in alternating order, each gets an edit, a timed `shiftgit checkpoint`, `git add -A` and
a timed `git commit` (through the hooks); `<this python> -c pass` is timed in the same rounds.
Figures are medians; "added" is this checkout's median minus the base's, and the median over rounds of
(this - base) / that round's python start-up. A plain repository without shiftgit gets the same edit and a
timed bare `git commit` each round: the budget lines (issue 17: a checkpointed commit adds <= 3 start-ups
over bare git, a checkpoint costs <= 8) are this checkout's figures against it. No publish remote is set:
with one, `checkpoint` also fetches the run's ledger ref (bounded, 3 s), a network cost of its own.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, isolate

CALC = "def add(a, b):\n    return a + b\n"


def run(cwd: Path, argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    took = (time.perf_counter() - started) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed in {cwd}:\n{proc.stdout}\n{proc.stderr}")
    return took


def setup(path: Path, env: dict[str, str]) -> None:
    path.mkdir(parents=True)
    sg = [sys.executable, "-m", "shiftgit"]
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"]):
        (path / "calc.py").write_text(CALC)
        run(path, argv, env)
    run(path, ["git", "commit", "-q", "-m", "initial"], env)
    run(path, [*sg, "init", "--hooks", "git"], env)
    run(path, ["git", "add", "-A"], env)
    run(path, ["git", "commit", "-q", "-m", "set up"], env)
    run(path, [*sg, "start", "demo", "--goal", "g", "--stop-when", "s"], env)
    run(path, ["git", "add", "-A"], env)
    run(path, ["git", "commit", "-q", "-m", "start"], env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="a checkout of shiftgit without this change")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true",
                        help="one round, this checkout against itself when no --base: checks the bench still works")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.base = 1, args.base or ROOT
    if args.base is None:
        parser.error("--base CHECKOUT is required (or --quick)")
    with tempfile.TemporaryDirectory(prefix="fencing-bench-") as tmp:
        env = isolate(Path(tmp) / "home")
        trees = {"base": args.base.resolve(), "this": ROOT}
        envs = {name: {**env, "PYTHONPATH": str(tree)} for name, tree in trees.items()}
        for name in trees:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(trees[name] / "shiftgit")], check=True)
            setup(Path(tmp) / name, envs[name])
        times: dict[str, dict[str, list[float]]] = {n: {"checkpoint": [], "commit": []} for n in trees}
        python: list[float] = []
        bare_commit: list[float] = []
        bare = Path(tmp) / "bare"
        bare.mkdir()
        for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "i"]):
            (bare / "calc.py").write_text(CALC)
            run(bare, argv, env)
        sg = [sys.executable, "-m", "shiftgit"]
        for i in range(args.rounds + 2):
            order = list(trees) if i % 2 == 0 else list(reversed(trees))
            for name in order:
                repo, renv = Path(tmp) / name, envs[name]
                with open(repo / "calc.py", "a") as handle:
                    handle.write(f"# round {i}\n")
                took_cp = run(repo, [*sg, "checkpoint", "--step", f"round {i}"], renv)
                run(repo, ["git", "add", "-A"], renv)
                took_commit = run(repo, ["git", "commit", "-q", "-m", f"round {i}"], renv)
                if i >= 2:  # two warm-up rounds
                    times[name]["checkpoint"].append(took_cp)
                    times[name]["commit"].append(took_commit)
            with open(bare / "calc.py", "a") as handle:
                handle.write(f"# round {i}\n")
            run(bare, ["git", "add", "-A"], env)
            took_bare = run(bare, ["git", "commit", "-q", "-m", f"round {i}"], env)
            if i >= 2:
                bare_commit.append(took_bare)
            python.append(run(Path(tmp), [sys.executable, "-c", "pass"], env))
    start = statistics.median(python)
    print(f"python start-up {start:.1f} ms (median of {len(python)}); load average {os.getloadavg()[0]:.2f}")
    for what in ("checkpoint", "commit"):
        base, this = (statistics.median(times[n][what]) for n in ("base", "this"))
        pairs = zip(times["base"][what], times["this"][what], python[2:], strict=True)
        ratio = statistics.median((t - b) / p for b, t, p in pairs)  # per round: a drifting load skews it less
        print(f"{what:>10}: base {base:.1f} ms, this {this:.1f} ms, added {this - base:+.1f} ms; "
              f"median of the rounds' differences {ratio:+.2f} start-ups")
    rounds = list(zip(times["this"]["commit"], bare_commit, times["this"]["checkpoint"], python[2:], strict=True))
    over = statistics.median((c - b) / p for c, b, _, p in rounds)
    point = statistics.median(k / p for _, _, k, p in rounds)
    print(f"    budget: checkpointed commit over bare git (median {statistics.median(bare_commit):.1f} ms) "
          f"{over:+.2f} start-ups (<= 3); checkpoint {point:.2f} start-ups (<= 8)")

if __name__ == "__main__":
    main()
