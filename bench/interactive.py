"""What the interactive commands cost at small size and at scale, in start-ups of this Python.

    python bench/interactive.py [--rounds 15] [--runs 1000] [--effects 1000] [--commits 10000] [--files 1000]
                                [--base CHECKOUT] [--only TEXT ...] [--quick]

Builds throw-away repositories (isolated from the machine's git config), then every round times,
interleaved, each command below and `<this python> -c pass`; a figure is the median over the rounds
of (command time / that round's `python -c pass`), with the spread (lowest and highest round):

- `shiftgit --version`;
- `status` with 1 run and with RUNS runs, beside its reference: reading the RUNS ledgers' JSON alone
  (a Python process that globs, reads and parses them);
- `show`, and `checkpoint` after one edit and after editing FILES files (edits not timed), beside what
  git alone takes to hash those FILES files into a copy of the index and write the tree;
- `effect run -- true` with 10 recorded effects and with EFFECTS (every round adds one effect), and
  `check -- true` (what shiftgit adds to the command it runs: `true` itself costs next to nothing);
- `log -n 20` with 100 and with COMMITS old commits (each with a note) under 25 checkpointed ones, and
  `log -n 1` there.

`--base CHECKOUT` times every shiftgit command a second time, interleaved, with the package of another
checkout (e.g. `/work/main`: its `shiftgit/` first on PYTHONPATH, its bytecode kept out of that tree),
on the same repositories: "before" and "after" at the same load.

`--only TEXT` (repeatable) times only the rows whose name holds TEXT (with their references, and `python -c
pass`) and builds only the repositories those need: e.g. `--only checkpoint` while working on checkpoint.
The default is every row.

`--quick` (what CI runs, no timing judged): tiny sizes, two rounds, checks every command still works.
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
from collections.abc import Callable
from pathlib import Path

from _common import SG, base_env, compile_bytecode, fast_history, isolate, parse, run, scale

from shiftgit.git.notes import write_notes  # noqa: E402

# What any snapshot of the changed files costs git alone: hash them into a copy of the index, write the tree.
GIT_SNAPSHOT = ("cp .git/index .git/bench.idx && GIT_INDEX_FILE=.git/bench.idx git add -A && "
                "GIT_INDEX_FILE=.git/bench.idx git write-tree >/dev/null; rm -f .git/bench.idx")
READ_JSON = ("import glob, json\nfor p in glob.glob('.shift/runs/*/ledger.json'):\n"
             "    with open(p, 'rb') as f:\n        json.loads(f.read())\n")


def timed(cwd: Path, argv: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, env=env)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed in {cwd}:\n{proc.stdout!r}\n{proc.stderr!r}")
    return took


def repo(path: Path, commits: int = 1) -> Path:
    """A repository with COMMITS commits (fast-import), shiftgit set up and run `demo` started."""
    fast_history(path, commits)
    run(path, *SG, "init", "--hooks", "git")
    run(path, *SG, "start", "demo", "--goal", "bench", "--stop-when", "never")
    run(path, "git", "add", "-A")
    run(path, "git", "commit", "-qm", "start demo")
    return path


def with_runs(path: Path, runs: int) -> Path:
    """RUNS runs: `demo` and copies of its ledger under other ids (bytes shiftgit never wrote)."""
    repo(path)
    ledger = json.loads((path / ".shift/runs/demo/ledger.json").read_text())
    for i in range(1, runs):
        target = path / f".shift/runs/r{i:04d}/ledger.json"
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps({**ledger, "run": f"r{i:04d}"}, indent=2, sort_keys=True) + "\n")
    if runs > 1:
        run(path, "git", "add", "-A")
        run(path, "git", "commit", "-qm", "runs")
    run(path, *SG, "status")  # the first read checks each ledger once; the rounds measure the steady state
    return path


def with_effects(path: Path, effects: int) -> Path:
    repo(path)
    for i in range(min(effects, 2)):
        run(path, *SG, "effect", "run", "--key", f"fill-{i}", "--kind", "job", "--repeatable", "-q", "--", "true")
    if effects > 2:  # the rest as copies of a real record (a thousand real ones take minutes)
        ledger_path = path / ".shift/runs/demo/ledger.json"
        ledger = json.loads(ledger_path.read_text())
        template = ledger["effects"][-1]
        ledger["effects"] += [{**template, "key": f"fill-{i}"} for i in range(2, effects)]
        ledger_path.write_text(json.dumps(ledger, indent=2, sort_keys=True) + "\n")
        run(path, *SG, "validate")
    return path


def with_files(path: Path, files: int) -> Path:
    """FILES tracked files in 20 directories (the checkpoint bench edits every one of them each round)."""
    repo(path)
    touch(path, files, "start")
    run(path, *SG, "checkpoint", "--step", "files", "--next", "edit them")
    run(path, "git", "add", "-A")
    run(path, "git", "commit", "-qm", "files")
    return path


def touch(path: Path, files: int, text: str) -> None:
    for n in range(files):
        (path / f"src/d{n % 20}").mkdir(parents=True, exist_ok=True)
        (path / f"src/d{n % 20}/f{n}.py").write_text(f"X = {n}  # {text}\n")


def with_notes(path: Path, commits: int, recent: int) -> Path:
    """COMMITS old commits, each with a note (no handoff), then RECENT checkpointed commits (the hooks' notes)."""
    repo(path, commits)
    head = run(path, "git", "rev-list", "HEAD").split()
    write_notes(path, {c: f"shiftgit: no handoff (old commit {i})\n" for i, c in enumerate(head)})
    for i in range(recent):
        (path / "work.txt").write_text(f"{i}\n")
        run(path, *SG, "checkpoint", "--step", f"step {i}", "--next", "more")
        run(path, "git", "add", "-A")
        run(path, "git", "commit", "-qm", f"step {i}")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--effects", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--base", type=Path, help="another checkout whose shiftgit/ is timed beside this one's")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="time only the rows whose name holds TEXT (repeatable); default: all")
    args = parse(parser, rounds=2, runs=5, effects=5, commits=30, files=5)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="shiftgit-bench-") as tmp:
        base = Path(tmp)
        isolate(base / "home")
        compile_bytecode()
        built: dict[str, Path] = {}

        def at(name: str, build: Callable[[Path], Path]) -> Callable[[], Path]:
            """The repository NAME, built on first use (rows left out by --only build nothing)."""
            def get() -> Path:
                if name not in built:
                    built[name] = build(base / name)
                return built[name]
            return get

        small = at("small", lambda p: with_runs(p, 1))
        runs = at("runs", lambda p: with_runs(p, args.runs))
        few, many = at("few", lambda p: with_effects(p, 10)), at("many", lambda p: with_effects(p, args.effects))
        files = at("files", lambda p: with_files(p, args.files))
        recent = 3 if args.quick else 25
        short = at("short", lambda p: with_notes(p, 100, recent))
        long = at("long", lambda p: with_notes(p, args.commits, recent))
        py = sys.executable
        rows: dict[str, tuple[Callable[[], Path], list[str]]] = {
            "python -c pass": (lambda: base, [py, "-c", "pass"]),
            "--version": (lambda: base, [*SG, "--version"]),
            "status, 1 run": (small, [*SG, "status"]),
            "show, 1 run": (small, [*SG, "show"]),
            "checkpoint, 1 changed file": (small, [*SG, "checkpoint", "--step", "s{i}", "--next", "n"]),
            f"checkpoint, {args.files} changed files": (files, [*SG, "checkpoint", "--step", "s{i}", "--next", "n"]),
            f"  reference: git add -A + write-tree, {args.files} changed files": (files, ["sh", "-c", GIT_SNAPSHOT]),
            f"status, {args.runs} runs": (runs, [*SG, "status"]),
            f"  reference: read {args.runs} ledgers JSON": (runs, [py, "-c", READ_JSON]),
            "effect run, 10 effects": (few, [*SG, "effect", "run", "--key", "k{i}", "--kind", "job",
                                              "--repeatable", "-q", "--", "true"]),
            "check -- true, 1 run": (small, [*SG, "check", "--name", "bench", "-q", "--", "true"]),
            f"effect run, {args.effects} effects": (many, [*SG, "effect", "run", "--key", "k{i}", "--kind", "job",
                                                           "--repeatable", "-q", "--", "true"]),
            "log -n 20, 100 commits": (short, [*SG, "log", "-n", "20"]),
            f"log -n 20, {args.commits} commits": (long, [*SG, "log", "-n", "20"]),
            f"log -n 1, {args.commits} commits": (long, [*SG, "log", "-n", "1"]),
        }
        cases: dict[str, tuple[Path, list[str]]] = {}
        for name, (where, argv) in rows.items():  # a reference row goes with the row above it
            if not name.startswith("  reference:"):
                wanted = name == "python -c pass" or not args.only or any(text in name for text in args.only)
            if wanted:
                cases[name] = (where(), argv)
        envs: dict[str, dict[str, str] | None] = {name: None for name in cases}
        if args.base is not None:  # each command's base row right after it
            env = base_env(args.base.resolve(), base / "base-pycache")
            paired: dict[str, tuple[Path, list[str]]] = {}
            for name, (cwd, argv) in cases.items():
                paired[name] = (cwd, argv)
                if argv[:len(SG)] == SG:
                    paired[f"  base: {name}"], envs[f"  base: {name}"] = (cwd, argv), env
            cases = paired
        ratios: dict[str, list[float]] = {name: [] for name in cases}
        unit: list[float] = []
        for i in range(args.rounds + 1):  # round 0 warms the caches up and is not counted
            took = {}
            for name, (cwd, argv) in cases.items():
                if name.endswith("1 changed file"):  # what the checkpoints record (not timed)
                    (small() / "work.txt").write_text(f"{name} {i}\n")
                elif name.endswith("changed files"):
                    touch(files(), args.files, f"{name} round {i}")
                tag = f"b{i}" if name.startswith("  base:") else str(i)  # its own effect keys, checkpoint steps
                took[name] = timed(cwd, [a.replace("{i}", tag) for a in argv], envs[name])
            if i:
                unit.append(took["python -c pass"])
                for name, seconds in took.items():
                    ratios[name].append(seconds / took["python -c pass"])
        load_after = os.getloadavg()
    report(ratios, unit, args, load_before, load_after)


def report(ratios: dict[str, list[float]], unit: list[float], args: argparse.Namespace,
           load_before: tuple[float, ...], load_after: tuple[float, ...]) -> None:
    print(f"{sys.executable} -c pass: {1000 * statistics.median(unit):.1f} ms (median of {len(unit)}); {scale()}")
    print(f"medians of {args.rounds} rounds, interleaved; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after" + ("  [--quick: sizes too small to mean anything]" if args.quick else ""))
    print(f"{'command':<44} {'start-ups':>9} {'spread':>15}")
    median = {name: statistics.median(values) for name, values in ratios.items()}
    for name, values in ratios.items():
        print(f"{name:<44} {median[name]:>9.2f} {min(values):>7.2f}-{max(values):<7.2f}")
    def ratio(what: str, a: str, b: str) -> None:
        if a in median and b in median:  # both rows timed (--only may leave either out)
            print(f"{what}: {median[a] / median[b]:.2f}x")

    ratio(f"status at {args.runs} runs / reading their JSON", f"status, {args.runs} runs",
          f"  reference: read {args.runs} ledgers JSON")
    ratio(f"checkpoint at {args.files} changed files / git alone", f"checkpoint, {args.files} changed files",
          f"  reference: git add -A + write-tree, {args.files} changed files")
    ratio(f"effect run at {args.effects} / at 10 effects", f"effect run, {args.effects} effects",
          "effect run, 10 effects")
    ratio(f"log -n 20 at {args.commits} / at 100 commits", f"log -n 20, {args.commits} commits",
          "log -n 20, 100 commits")

if __name__ == "__main__":
    main()
