"""How long an agent waits on shiftgit's hooks: wall time of `python -m shiftgit hook claude ...` processes.

    python bench/agent_hooks.py [--files 200] [--repeat 11]

Builds a throw-away repository with FILES tracked files, starts a run with a checkpoint, then times
session-start, stop (fresh, and stale after one edit) and pre-compact with nothing changed; prints
medians, with `python -c pass` and `git status` beside them for scale. Runs isolated from the
machine's git config.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import SG, isolate


def run(argv: list[str], repo: Path, env: dict[str, str], data: str | None = None) -> str:
    return subprocess.run(argv, cwd=repo, env=env, input=data, capture_output=True, text=True, check=True).stdout


def build(repo: Path, env: dict[str, str], files: int) -> None:
    repo.mkdir()
    run(["git", "init", "-q", "-b", "main"], repo, env)
    for n in range(files):
        (repo / f"src/m{n % 20}").mkdir(parents=True, exist_ok=True)
        (repo / f"src/m{n % 20}/f{n}.py").write_text(f"X = {n}\n" * 20)
    run(["git", "add", "-A"], repo, env)
    run(["git", "commit", "-qm", "init"], repo, env)
    run([*SG, "init", "--hooks", "none"], repo, env)
    run([*SG, "start", "bench", "--goal", "g", "--stop-when", "s", "--constraint", "c"], repo, env)
    run([*SG, "checkpoint", "--step", "one", "--next", "two"], repo, env)
    run(["git", "add", "-A"], repo, env)
    run(["git", "commit", "-qm", "start"], repo, env)


def median_ms(argv: list[str], repo: Path, env: dict[str, str], data: str | None, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run(argv, repo, env, data)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = isolate(Path(tmp))
        repo = Path(tmp) / "repo"
        build(repo, env, args.files)

        def payload(event: str, **extra: object) -> str:
            return json.dumps({"session_id": "b", "cwd": str(repo), "hook_event_name": event, **extra})

        rows = [
            ("python -c pass", [sys.executable, "-c", "pass"], None),
            ("git status", ["git", "status", "--porcelain"], None),
            ("hook claude session-start", [*SG, "hook", "claude", "session-start"], payload("SessionStart")),
            ("hook claude stop (fresh)", [*SG, "hook", "claude", "stop"], payload("Stop", stop_hook_active=False)),
            ("hook claude pre-compact (no change)", [*SG, "hook", "claude", "pre-compact"], payload("PreCompact")),
        ]
        print(f"{args.files} tracked files, median of {args.repeat} runs")
        for label, argv, data in rows:
            print(f"  {label:<40} {median_ms(argv, repo, env, data, args.repeat):8.1f} ms")
        (repo / "src/m0/f0.py").write_text("edited\n")
        stale = [*SG, "hook", "claude", "stop"]
        print(f"  {'hook claude stop (stale, held once)':<40} "
              f"{median_ms(stale, repo, env, payload('Stop', stop_hook_active=True), args.repeat):8.1f} ms")


if __name__ == "__main__":
    main()
