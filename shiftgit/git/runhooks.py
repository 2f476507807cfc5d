"""The git hooks only a run needs (install.RUN_HOOKS: commit-msg and post-commit), added when a run needs them.

While no run is active (no SHIFT_RUN, no active-run pointer, no ledger whose status is "active"), `init` leaves out
the hooks only a run needs (each is a process git starts at every commit): the first thing that needs
them installs them, before git looks for them (git finds each hook when it runs it): a run's start, resume or
adoption, every checkpoint (a commit that follows one may skip the pre-commit hook: `--no-verify`, a cherry-pick),
a merge that brings a ledger saying so (a `git pull`: the post-merge hook, when the merge changed a ledger),
and the pre-commit shim, which passes its folder to Python (SHIFT_ADD_HOOKS) when it goes on with them missing (an
active run, SHIFT_SKIP, a staged ledger). Each is added on its own: one that cannot be does not stop the other.
`init` notes the folder when it is not the git dir's `hooks/` (install.FOLDER_NOTE), so a checkpoint finds the
shims with no git process: two file reads when they are there.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from shiftgit.errors import UsageError
from shiftgit.git import install
from shiftgit.repo import Repo

LOST = {"commit-msg": "no Shift- trailers in the run's commits", "post-commit": "no handoff notes on them"}


def add_run_hooks(folder: Path) -> list[str]:
    """The run hooks beside a pre-commit shim of ours in `folder`, with its interpreter and package, where they are
    not ours yet (a hook there is kept and chained); nothing when the git hooks are not shiftgit's. Each hook on its
    own: a line for each one that could not be added (why, and the fix). Two file reads when they are there."""
    missing = [hook for hook in install.RUN_HOOKS if not install.is_ours(folder / hook)]
    if not missing:
        return []
    text = install.read_head(folder / "pre-commit", 4096)
    python = install.recorded(text, "python") if install.MARK.decode() in text else None
    if python is None:
        return []
    problems = []
    for hook in missing:
        try:
            install.put_shims(folder, [hook], python, install.recorded(text, "package"))
        except (OSError, UsageError) as exc:
            problems.append(f"could not add the {hook} hook a run needs (without it: {LOST[hook]}): {exc}")
    return problems


def add_repo_run_hooks(repo: Repo) -> list[str]:
    """`add_run_hooks` in the folder `init` put `repo`'s shims in (a run starts, resumes, is checkpointed): a line
    per hook that could not be added; an error never stops the caller (the pre-commit shim tries again)."""
    try:
        return add_run_hooks(installed_folder(repo))
    except OSError as exc:
        return [f"could not add the commit-msg and post-commit hooks a run needs: {exc}"]


def installed_folder(repo: Repo) -> Path:
    """The folder `init --hooks git` put the shims in (FOLDER_NOTE), without a git process."""
    try:
        noted = (repo.common_dir / "shift" / install.FOLDER_NOTE).read_text("utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        noted = ""
    return Path(noted) if noted else repo.common_dir / "hooks"


def add_shim_hooks(folder: str) -> None:
    """`add_run_hooks` for the pre-commit shim (SHIFT_ADD_HOOKS): a failure is a line per hook, the commit goes on."""
    try:
        problems = add_run_hooks(Path(folder))
    except OSError as exc:
        problems = [f"could not add the commit-msg and post-commit hooks a run needs: {exc}"]
    for problem in problems:
        print(f"shiftgit pre-commit: {problem}", file=sys.stderr)


def ledger_says_active(runs: Path) -> bool:
    """A ledger under RUNS (`.shift/runs`) says its run is "active", or cannot be read (counted as active)."""
    from shiftgit import rawjson

    try:
        names = os.listdir(runs)
    except OSError:
        return False
    for name in names:
        try:
            document = rawjson.loads((runs / name / "ledger.json").read_bytes())
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, ValueError):
            return True
        status = document.get("status") if isinstance(document, dict) else None
        if not isinstance(status, str) or status == "active":
            return True
    return False


def after_merge(root: str) -> None:
    """A merge changed ledgers (a `git pull`): when one says its run is active, the run hooks, for what may follow
    here before any checkpoint with no pre-commit shim to add them (a cherry-pick, `commit --no-verify`)."""
    from shiftgit.errors import ShiftError

    if not ledger_says_active(Path(root, ".shift", "runs")):
        return
    try:
        problems = add_repo_run_hooks(Repo.open(root))
    except ShiftError:
        return
    for problem in problems:
        print(f"shiftgit post-merge: {problem}", file=sys.stderr)
