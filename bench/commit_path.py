"""What shiftgit's hooks add to a checkpointed `git commit`, in start-ups of this Python.

    python bench/commit_path.py [--rounds 21] [--notes 10000] [--runs 100] [--base CHECKOUT]

Builds throw-away repositories (isolated from the machine's git config) in pairs with the same
content: one with `shiftgit init --hooks git`, one with no hooks. Every round makes an edit, a
`shiftgit checkpoint` and `git add -A` in each (not timed), then times `git commit` in each, and
`<this python> -c pass`; all interleaved in the same run. Figures are medians over the rounds:

    added = median(commit with hooks) - median(bare commit), expressed in python start-ups

for 10 notes / 1 run, 10,000 notes (fast-import commits, one write_notes call), 100 runs, for the
pre-commit framework route (`repo: local` hooks from `shiftgit init --hooks pre-commit`), for the
framework alone with a `language: system` hook of `true` at each of those hook types (the reference the
route is judged against), and for an idle commit (hooks installed, no run started: no checkpoint, no
note).
It also counts the processes one commit runs (git trace2) and checks each hooked commit got its note.
`--base CHECKOUT` adds, to each scenario with git hooks, a third repository whose hooks run CHECKOUT's shiftgit,
timed in the same rounds (its row: "  base: ..."), so a change is judged against its base under the same load.
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

from _common import ROOT, SG, base_env, compile_bytecode, fast_history, isolate, parse, run, unit_warnings

from shiftgit.git.notes import note_blobs, read_note, write_notes  # noqa: E402

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
FRAMEWORK_ONLY = "repos:\n  - repo: local\n    hooks:\n" + "".join(
    f"      - id: true-{stage}\n        name: nothing\n        entry: 'true'\n        language: system\n"
    f"        always_run: true\n{'' if stage == 'commit-msg' else '        pass_filenames: false' + chr(10)}"
    f"        stages: [{stage}]\n" for stage in ("pre-commit", "commit-msg", "post-commit", "post-rewrite"))


def timed(cwd: Path, *argv: str, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(list(argv), cwd=cwd, capture_output=True, env=env)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed in {cwd}:\n{proc.stdout!r}\n{proc.stderr!r}")
    return took


class Repo:
    """One repository of a scenario: `notes` old commits with notes, `runs` runs, hooks or none."""

    def __init__(self, path: Path, hooks: str, notes: int, runs: int, env: dict[str, str] | None = None) -> None:
        self.path, self.hooks, self.env = path, hooks, env  # env: another checkout's shiftgit (--base)
        fast_history(path, notes)
        old = run(path, "git", "rev-list", "main").split()
        (path / "calc.py").write_text(CALC)
        self.git_commit("initial")
        if hooks == "framework":  # the reference: the pre-commit framework running `true` at each hook type
            (path / ".pre-commit-config.yaml").write_text(FRAMEWORK_ONLY)
        else:
            run(path, *SG, "init", "--hooks", hooks, env=env)
        if hooks in ("pre-commit", "framework"):
            run(path, "pre-commit", "install", "--hook-type", "pre-commit", "--hook-type", "commit-msg",
                "--hook-type", "post-commit", "--hook-type", "post-rewrite")
        self.git_commit("set up shiftgit")
        self.idle = runs == 0
        if self.idle:  # hooks installed, no run: the commits of someone not using shiftgit right now
            return
        run(path, *SG, "start", "demo", "--goal", "bench", "--stop-when", "never", "--constraint", "stay fast", env=env)
        ledger = json.loads((path / ".shift/runs/demo/ledger.json").read_text())
        for i in range(1, runs):
            target = path / f".shift/runs/r{i:03d}/ledger.json"
            target.parent.mkdir(parents=True)
            target.write_text(json.dumps({**ledger, "run": f"r{i:03d}"}, indent=2, sort_keys=True) + "\n")
        self.git_commit("start demo")
        run(path, *SG, "check", "--name", "unit", "-q", "--", sys.executable, "-c", "pass", env=env)
        write_notes(path, {c: f"shiftgit: no handoff (old commit {i})\n" for i, c in enumerate(old)})

    def git_commit(self, message: str) -> None:
        run(self.path, "git", "add", "-A")
        run(self.path, "git", "commit", "-q", "-m", message, env=self.env)

    def prepare(self, i: int) -> None:
        (self.path / "calc.py").write_text(CALC + f"# round {i}\n")
        if not self.idle:
            run(self.path, *SG, "checkpoint", "--step", f"round {i}", "--next", "another round", env=self.env)
        run(self.path, "git", "add", "-A")

    def commit(self, i: int) -> float:
        return timed(self.path, "git", "commit", "-q", "-m", f"round {i}", env=self.env)

    def check_note(self, i: int) -> None:
        if self.idle:
            return
        head = run(self.path, "git", "rev-parse", "HEAD").strip()
        note = read_note(self.path, head) or ""
        assert f"round {i}" in note.split("\n", 1)[0], f"{self.path}: no handoff note on HEAD: {note[:200]!r}"


def processes(repo: Repo, i: int, trace: Path) -> list[str]:
    """The git commands one commit runs (trace2 events), after `prepare`."""
    trace.unlink(missing_ok=True)
    subprocess.run(["git", "commit", "-q", "-m", f"traced {i}"], cwd=repo.path, capture_output=True,
                   env={**os.environ, "GIT_TRACE2_EVENT": str(trace)}, check=True)
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    gits = [" ".join(e["argv"][1:2]) for e in events if e.get("event") == "start"]
    hooks = [e["argv"][0].rsplit("/", 1)[-1] for e in events
             if e.get("event") == "child_start" and e.get("child_class") == "hook"]
    return [f"{len(gits)} git ({', '.join(gits)})", f"{len(hooks)} hook(s) ({', '.join(hooks)})"]


FRAMEWORK = "pre-commit framework alone, `true` hooks"


def median_ms(values: list[float]) -> float:
    return 1000 * statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--base", type=Path, help="another checkout whose shiftgit's hooks are timed beside these")
    args = parse(parser, rounds=1, warmup=0, notes=20, runs=2)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="shiftgit-bench-") as tmp:
        base = Path(tmp)
        isolate(base / "home")
        compile_bytecode()
        bin_dir = base / "home" / "bin"  # `shiftgit` on PATH for the pre-commit framework's `language: system` hooks
        bin_dir.mkdir()
        (bin_dir / "shiftgit").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m shiftgit "$@"\n')
        (bin_dir / "shiftgit").chmod(0o755)
        os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
        scenarios = {"10 notes, 1 run": (10, 1, "git"), f"{args.notes} notes, 1 run": (args.notes, 1, "git"),
                     f"10 notes, {args.runs} runs": (10, args.runs, "git"),
                     "pre-commit framework, 10 notes, 1 run": (10, 1, "pre-commit"),
                     FRAMEWORK: (10, 0, "framework"),
                     "idle: hooks, no active run": (10, 0, "git")}
        started = time.perf_counter()
        env = base_env(args.base.resolve(), base / "base-pycache") if args.base is not None else None
        pairs = {}
        for k, (name, (notes, runs, hooks)) in enumerate(scenarios.items()):
            pairs[name] = (Repo(base / f"h{k}", hooks, notes, runs), Repo(base / f"b{k}", "none", notes, runs))
            if env is not None and hooks == "git":  # the base checkout's hooks, with a bare twin of their own
                pairs[f"  base: {name}"] = (Repo(base / f"x{k}", hooks, notes, runs, env),
                                            Repo(base / f"y{k}", "none", notes, runs))
        print(f"set up {2 * len(pairs)} repositories in {time.perf_counter() - started:.0f} s", flush=True)
        for name, (hooked, _) in pairs.items():
            commits = run(hooked.path, "git", "rev-list", "--count", "HEAD").strip()
            runs = len(list((hooked.path / ".shift/runs").glob("*")))
            print(f"  {name}: {commits} commits, {len(note_blobs(hooked.path))} notes, {runs} run(s)")
        times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in pairs}
        python: list[float] = []
        for i in range(args.warmup + args.rounds):
            for hooked, bare in pairs.values():
                hooked.prepare(i)
                bare.prepare(i)
            counted = i >= args.warmup
            for name, (hooked, bare) in pairs.items():
                took = (hooked.commit(i), bare.commit(i), timed(ROOT, sys.executable, "-c", "pass"))
                if counted:
                    times[name][0].append(took[0])
                    times[name][1].append(took[1])
                    python.append(took[2])
                hooked.check_note(i)
        load_after = os.getloadavg()
        first = next(iter(pairs.values()))
        for repo in first:
            repo.prepare(10_000)
        traced = {repo.hooks: processes(repo, 10_000, base / "trace.json") for repo in first}
    report(times, python, args.rounds, traced, load_before, load_after)


def report(times: dict[str, tuple[list[float], list[float]]], python: list[float], rounds: int,
           traced: dict[str, list[str]], load_before: tuple[float, ...], load_after: tuple[float, ...]) -> None:
    unit = median_ms(python)
    print(f"\n{sys.executable} -c pass: {unit:.1f} ms (median of {len(python)}); git {git_version()}")
    for warning in unit_warnings():
        print(warning)
    print(f"medians of {rounds} rounds; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"{'scenario':<40} {'bare ms':>8} {'hooked ms':>10} {'added ms':>9} {'start-ups':>10}")
    added = {}
    for name, (hooked, bare) in times.items():
        extra = median_ms(hooked) - median_ms(bare)
        added[name] = extra / unit
        print(f"{name:<40} {median_ms(bare):>8.1f} {median_ms(hooked):>10.1f} {extra:>9.1f} {added[name]:>10.2f}")
    names = [name for name in added if not name.startswith("  base: ")]
    for name in names[1:3]:
        print(f"{name} vs {names[0]}: {100 * (added[name] / added[names[0]] - 1):+.0f}%")
    print(f"{names[3]}: {added[names[3]] / added[FRAMEWORK]:.2f}x the framework's own overhead ({FRAMEWORK})")
    for hooks, lines in traced.items():
        print(f"one commit, hooks {hooks}: " + "; ".join(lines))


def git_version() -> str:
    return subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[-1]


if __name__ == "__main__":
    main()
