"""How resume / verify / rollback scale with a run's length: python bench/resume_scale.py [CHECKPOINTS] [--quick]

Builds a run with CHECKPOINTS long checkpoints (through the library, on a real repository), then
times the CLI a fresh process would use: `resume --no-run` here and in a fresh clone (no notes,
no snapshot refs), `verify` of a trivial check, `rollback --yes` of a small edit, and reports the
briefing's length. Medians of 5 runs.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import SG, isolate, parse, scale


def sh(cwd: Path, *argv: str, ok: tuple[int, ...] = (0,)) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} -> {proc.returncode}\n{proc.stderr}")
    return proc.stdout


def timed(cwd: Path, *argv: str, ok: tuple[int, ...] = (0,), before: list[str] | None = None) -> float:
    samples = []
    for _ in range(5):
        if before:
            sh(cwd, *before)
        started = time.perf_counter()
        sh(cwd, *argv, ok=ok)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", type=int, nargs="?", default=200)
    checkpoints = parse(parser, checkpoints=3).checkpoints
    with tempfile.TemporaryDirectory() as tmp:
        isolate(Path(tmp) / "home")
        root = Path(tmp) / "work"
        root.mkdir()
        build(root, checkpoints)
        clone = Path(tmp) / "clone"
        sh(Path(tmp), "git", "clone", "-q", "--no-local", str(root), str(clone))
        import json

        briefing = json.loads(sh(root, *SG, "resume", "--no-run", "--json"))["briefing"]
        print(f"{checkpoints} checkpoints, 21 constraints; briefing {len(briefing)} characters")
        print(f"resume --no-run           {timed(root, *SG, 'resume', '--no-run'):.3f} s")
        clone_s = timed(clone, *SG, "resume", "bench", "--no-run", ok=(0, 4))  # 4: the first clone holds the lease
        print(f"resume --no-run (clone)   {clone_s:.3f} s")
        print(f"resume (reruns 1 check)   {timed(root, *SG, 'resume'):.3f} s")
        print(f"verify (1 trivial check)  {timed(root, *SG, 'verify'):.3f} s")
        edit = [sys.executable, "-c", "open('app.py', 'a').write('# edit\\n')"]
        print(f"rollback --yes (1 file)   {timed(root, *SG, 'rollback', '--yes', before=edit):.3f} s")
        print(scale())


if __name__ == "__main__":
    main()
