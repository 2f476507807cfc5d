"""The git hooks only a run needs (install.RUN_HOOKS: commit-msg and post-commit), added when a run needs them.

While no run is active (no SHIFT_RUN, no active-run pointer, no ledger whose status is "active"), `init` leaves out
the hooks only a run needs (each is a process git starts at every commit): the first thing that needs
them installs them, before git looks for them (git finds each hook when it runs it): a run's start, resume or
adoption, every checkpoint (a commit that follows one may skip the pre-commit hook: `--no-verify`, a cherry-pick),
and the pre-commit shim, which passes its folder to Python (SHIFT_ADD_HOOKS) when it goes on with them missing (an
active run, SHIFT_SKIP, a staged ledger). Each is added on its own: one that cannot be does not stop the other.
`init` notes the folder when it is not the git dir's `hooks/` (install.FOLDER_NOTE), so a checkpoint finds the
shims with no git process: two file reads when they are there.
"""

from __future__ import annotations

import sys
from pathlib import Path

from shiftgit.errors import UsageError
from shiftgit.git import install
from shiftgit.repo import Repo


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
            problems.append(f"could not add the {hook} hook a run needs (no handoff note or trailers without it): "
                            f"{exc}")
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
