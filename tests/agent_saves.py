"""Waiting for the saves an agent hook hands to a background process (agents/background.py), as an agent's next
hook does: each holds the run's save lock, `<git-dir>/shift/agents/context-<run>.lock`, until it is done."""

from __future__ import annotations

import fcntl
import subprocess
from pathlib import Path


def settle(root: Path, timeout: float = 60.0) -> None:
    """Until no background save of any run of the repository at `root` holds its lock."""
    git_dir = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.strip()
    for path in sorted((Path(git_dir) / "shift" / "agents").glob("context-*.lock")):
        with open(path, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes


def pending(root: Path) -> list[str]:
    """The runs whose background job is still pending (its process running, or dead before the end)."""
    git_dir = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.strip()
    return sorted(p.name[len("pending-"):-len(".json")] for p in (Path(git_dir) / "shift" / "agents").glob(
        "pending-*.json"))
