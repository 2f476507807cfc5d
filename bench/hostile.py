"""Kills and concurrent writers against the durable write path: a ledger is the old one or the new one, never torn.

    python bench/hostile.py [--kills N] [--writers N]

Kills: `shiftgit constraint add` is SIGKILLed after a random delay (0-400 ms: before, during and
after its write), N times; after each kill the ledger must parse and validate, and hold either the
constraints before the kill or those plus the new one. Writers: N processes add a constraint to one
run at once, 5 rounds; every constraint must be there afterwards (the per-run lock). Prints the
figures with Python's start-up time and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import SG, isolate, parse, startup_ms

from shiftgit.ledger.schema import parse_ledger


def _repo(root: Path) -> Path:
    path = root / "work"
    path.mkdir()
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "commit", "-q", "--allow-empty", "-m", "i"],
                 [*SG, "init", "--hooks", "none"], [*SG, "start", "demo", "--goal", "g", "--stop-when", "s"]):
        subprocess.run(argv, cwd=path, check=True, capture_output=True)
    return path


def _texts(path: Path) -> list[str]:
    data = (path / ".shift/runs/demo/ledger.json").read_bytes()
    return [c.text for c in parse_ledger(data, "ledger.json").constraints]  # raises on a torn ledger


def kills(repo: Path, count: int) -> dict[str, int]:
    torn = completed = 0
    for n in range(count):
        before = _texts(repo)
        proc = subprocess.Popen([*SG, "constraint", "add", f"rule {n}"], cwd=repo, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(random.uniform(0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        try:
            after = _texts(repo)
        except Exception:  # noqa: BLE001 - a torn or invalid ledger is what this counts
            torn += 1
            continue
        if after not in (before, [*before, f"rule {n}"]):
            torn += 1
        completed += after != before
    return {"kills": count, "torn": torn, "write_landed_before_the_kill": completed}


def writers(repo: Path, count: int, rounds: int = 5) -> dict[str, int]:
    lost = 0
    for r in range(rounds):
        procs = [subprocess.Popen([*SG, "constraint", "add", f"w{r}-{i}"], cwd=repo, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for i in range(count)]
        for proc in procs:
            proc.wait()
        texts = set(_texts(repo))
        lost += sum(f"w{r}-{i}" not in texts for i in range(count))
    return {"writers": count, "rounds": rounds, "lost": lost}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--writers", type=int, default=8)
    args = parse(parser, kills=3, writers=2)
    with tempfile.TemporaryDirectory() as tmp:
        isolate(Path(tmp) / "home")
        repo = _repo(Path(tmp))
        figures = {**kills(repo, args.kills), **writers(repo, args.writers)}
    figures.update(python_start_ms=round(startup_ms(), 1), load=os.getloadavg()[0])
    print(json.dumps(figures))
    return 1 if figures["torn"] or figures["lost"] else 0


if __name__ == "__main__":
    sys.exit(main())
