"""How shiftgit.notes scales: one-note writes and reads on notes refs holding 10, 1,000 and 10,000 notes.

    python bench/notes_scale.py [--commits 10000] [--repeat 31]

Builds a throw-away repository with `git fast-import` (N commits), fills one notes ref per size with a
single write_notes call, then prints median times, with git's own `notes add -f` / `notes show` beside
them for scale. Runs isolated from the machine's git config.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from _common import isolate, parse

from shiftgit.git.notes import note_blobs, read_note, read_notes, write_notes  # noqa: E402


def git(repo: Path, *args: str, data: str | None = None) -> str:
    return subprocess.run(["git", *args], cwd=repo, input=data, capture_output=True, text=True,
                          check=True).stdout


def make_commits(repo: Path, n: int) -> list[str]:
    git(repo, "init", "-q", "-b", "main")
    stream = "".join(f"commit refs/heads/main\ncommitter B <b@b> {1700000000 + i} +0000\n"
                     f"data {len(str(i))}\n{i}\n" for i in range(n))
    git(repo, "fast-import", "--quiet", data=stream)
    return git(repo, "rev-list", "main").split()


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def ms(action: Callable[[int], object], repeat: int) -> tuple[float, float]:
    """Median and minimum milliseconds over `repeat` runs (the minimum is the least disturbed run)."""
    runs = [timed(partial(action, i)) for i in range(repeat)]
    return 1000 * statistics.median(runs), 1000 * min(runs)


def measure(repo: Path, ref: str, noted: list[str], repeat: int) -> dict[str, tuple[float, float]]:
    rng = random.Random(len(noted))
    picks = [rng.choice(noted) for _ in range(repeat)]
    return {
        "write_notes (1 note)": ms(lambda i: write_notes(repo, {picks[i]: f"v{i}"}, ref), repeat),
        "read_note": ms(lambda i: read_note(repo, picks[i], ref), repeat),
        "git notes show": ms(lambda i: git(repo, "notes", f"--ref={ref}", "show", picks[i]), repeat),
        "git notes add -f": ms(lambda i: git(repo, "notes", f"--ref={ref}-git", "add", "-f", "-m", f"g{i}",
                                             picks[i]), repeat),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=31)
    args = parse(parser, commits=20, repeat=2)
    with tempfile.TemporaryDirectory(prefix="shiftgit-bench-") as tmp:
        isolate(Path(tmp))
        repo = Path(tmp) / "repo"
        repo.mkdir()
        took = timed(lambda: make_commits(repo, args.commits))
        ids = git(repo, "rev-list", "main").split()
        print(f"{len(ids)} commits by git fast-import: {took:.2f} s")
        rows: dict[int, dict[str, tuple[float, float]]] = {}
        for size in sorted({10, 1000, args.commits} & set(range(1, args.commits + 1))):
            ref = f"refs/notes/n{size}"
            batch = {c: f'{{"note": {i}, "commit": "{c}"}}\n' for i, c in enumerate(ids[:size])}
            took = timed(partial(write_notes, repo, batch, ref))
            print(f"write_notes of {size} notes in one call: {took:.2f} s")
            git(repo, "update-ref", f"{ref}-git", ref)
            rows[size] = measure(repo, ref, ids[:size], args.repeat)
        big = f"refs/notes/n{max(rows)}"
        print(f"note_blobs at {max(rows)} notes: {timed(lambda: note_blobs(repo, big)) * 1000:.1f} ms; read_notes "
              f"of 100 commits: {timed(lambda: read_notes(repo, ids[:100], big)) * 1000:.1f} ms")
        print_table(rows, args.repeat)


def print_table(rows: dict[int, dict[str, tuple[float, float]]], repeat: int) -> None:
    columns = list(next(iter(rows.values())))
    print(f"\nms, median (min) of {repeat}; load average {os.getloadavg()[0]:.2f}")
    print(f"{'notes on ref':>12}" + "".join(f" | {c:>20}" for c in columns))
    for size, row in rows.items():
        print(f"{size:>12}" + "".join(f" | {row[c][0]:>12.1f} ({row[c][1]:>4.1f})" for c in columns))


if __name__ == "__main__":
    main()
