"""Every bench still runs: `--quick` (tiny sizes, fewest rounds). No figure is judged here; the benches are
measured by hand on a quiet machine (README, "How fast")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
BENCHES = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))


def test_every_bench_is_listed() -> None:
    assert {"commit_path.py", "interactive.py", "sync_scale.py"} <= set(BENCHES)


@pytest.mark.parametrize("bench", BENCHES)
def test_the_bench_runs_in_its_quick_mode(bench: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run([sys.executable, str(BENCH / bench), "--quick"], cwd=BENCH, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stdout.strip()
