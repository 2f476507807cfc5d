"""The other worktrees of this repository and the runs active in them (for scope-overlap warnings)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shiftgit.errors import ShiftError
from shiftgit.ledger.schema import parse_ledger
from shiftgit.repo import SHIFT_DIR, Repo


@dataclass(frozen=True)
class ActiveRun:
    worktree: Path
    run: str
    scope: tuple[str, ...]


def other_worktrees(repo: Repo) -> list[Path]:
    out = repo.git("worktree", "list", "--porcelain", check=False)
    paths = [Path(line[len("worktree "):]) for line in out.splitlines() if line.startswith("worktree ")]
    return [p for p in paths if p.resolve() != repo.root.resolve() and p.is_dir()]


def active_elsewhere(repo: Repo) -> list[ActiveRun]:
    """Each other worktree's active run (its pointer, its ledger file there), if it is still active."""
    found = []
    for path in other_worktrees(repo):
        try:
            other = Repo.open(path)
            run = other.git_dir.joinpath("shift", "active").read_text().strip()
            where = path / SHIFT_DIR / "runs" / run / "ledger.json"
            ledger = parse_ledger(where.read_bytes(), str(where))
        except (OSError, ShiftError):  # no active run there, or a ledger its own commands will report
            continue
        if ledger.status == "active":
            found.append(ActiveRun(path, ledger.run, ledger.contract.scope))
    return found
