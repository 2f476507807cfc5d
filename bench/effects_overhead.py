"""What the effect ledger costs: `effect run` against running the command bare, a replay, kill-to-death.

    python bench/effects_overhead.py [--repeat 21] [--effects 0,50,200]

In a throw-away repository (isolated from the machine's git config) it prints medians of:
- the bare command (`true`) through evidence.run, and through effects.run_effect (planned, attempted
  and the result: three locked, validated, fsynced ledger writes, plus the group watchdog), with a
  ledger already holding 0 / 50 / 200 effects;
- returning a completed key's recorded result (a read and a locked no-op write);
- the CLI end to end (`shiftgit effect run ... -- true`) beside `shiftgit --version`;
- from SIGKILL of a running `shiftgit effect run` to the death of its command's child (watchdog).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import SG, isolate, parse

from shiftgit import procs  # noqa: E402
from shiftgit.effects import runner as effects  # noqa: E402
from shiftgit.evidence import runner as evidence  # noqa: E402
from shiftgit.ledger.store import Store  # noqa: E402
from shiftgit.runs import contract  # noqa: E402


def median_ms(fn: Callable[[int], object], repeat: int) -> float:
    times = []
    for i in range(repeat):
        started = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def make_repo(where: Path) -> Store:
    subprocess.run(["git", "init", "-q", "-b", "main", str(where)], check=True)
    (where / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "-A"], cwd=where, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=where, check=True)
    store = Store.open(where, require=False)
    store.init()
    contract.start(store, "bench", contract.ContractInput(goal="g", stop_when="s"))
    return store


def spec(key: str) -> effects.EffectInput:
    return effects.EffectInput(key=key, kind="job", reversibility="repeatable", argv=("true",))


def in_process(store: Store, repeat: int, sizes: list[int]) -> None:
    bare = median_ms(lambda i: evidence.run(["true"], cwd=str(store.repo.root), timeout=None), repeat)
    print(f"evidence.run(true)                          {bare:8.1f} ms")
    made = 0
    for size in sizes:
        while made < size:
            effects.run_effect(store, "bench", spec(f"fill-{made}"))
            made += 1
        ms = median_ms(lambda i, n=size: effects.run_effect(store, "bench", spec(f"new-{n}-{i}")), repeat)
        made += repeat
        print(f"effects.run_effect(true), ~{size:>4} effects     {ms:8.1f} ms")
    replay = median_ms(lambda i: effects.run_effect(store, "bench", spec("fill-0")), repeat)
    print(f"replay of a completed key                   {replay:8.1f} ms")


def cli(store: Store, repeat: int) -> None:
    where = store.repo.root
    version = median_ms(lambda i: subprocess.run([*SG, "--version"], cwd=where, capture_output=True), repeat)
    run = median_ms(lambda i: subprocess.run([*SG, "effect", "run", "--key", f"cli-{i}", "--kind", "job",
                                              "--repeatable", "-q", "--", "true"], cwd=where, capture_output=True),
                    repeat)
    print(f"CLI: shiftgit --version                     {version:8.1f} ms")
    print(f"CLI: shiftgit effect run -- true            {run:8.1f} ms")


CHILD = "import subprocess, sys, time; c = subprocess.Popen(['sleep', '60']); print(c.pid, flush=True); time.sleep(60)"


def kill_to_death(store: Store, repeat: int) -> None:
    def once(i: int) -> float:
        out = store.repo.root / f"pid-{i}"
        proc = subprocess.Popen([*SG, "effect", "run", "--key", f"kill-{i}", "--kind", "job", "--repeatable", "--",
                                 "sh", "-c", f"{sys.executable} -c \"{CHILD}\" > {out}"],
                                cwd=store.repo.root, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not out.exists() or not out.read_text().strip():
            time.sleep(0.01)
        pid = int(out.read_text().split()[0])
        started = time.perf_counter()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        while procs.pid_exists(pid):
            time.sleep(0.001)
        return (time.perf_counter() - started) * 1000

    times = [once(i) for i in range(max(3, repeat // 3))]
    print(f"SIGKILL runner -> grandchild gone           {statistics.median(times):8.1f} ms (median of {len(times)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--effects", default="0,50,200")
    args = parse(parser, repeat=2, effects="0,3")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        isolate(home)
        store = make_repo(Path(tmp) / "repo")
        in_process(store, args.repeat, [int(x) for x in args.effects.split(",")])
        cli(store, args.repeat)
        kill_to_death(store, args.repeat)


if __name__ == "__main__":
    main()
