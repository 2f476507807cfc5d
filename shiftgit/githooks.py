"""Git hook entry points and their installation. (Interim: the commit gate lands with issue 3.)"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from shiftgit.repo import Repo

HOOKS = ("pre-commit", "commit-msg", "post-commit", "post-rewrite")
MARK = "# installed by shiftgit"


def hooks_dir(repo: Repo) -> Path:
    path = repo.git("rev-parse", "--git-path", "hooks").strip()
    return Path(path) if os.path.isabs(path) else repo.root / path


def install(repo: Repo) -> list[str]:
    folder = hooks_dir(repo)
    folder.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        target = folder / name
        target.write_text(f"#!/bin/sh\n{MARK}\nexec {shlex.quote(sys.executable)} -m shiftgit hook {name} \"$@\"\n")
        target.chmod(0o755)
    return [f"installed git hooks in {folder}"]


def install_pre_commit(repo: Repo) -> list[str]:
    return ["pre-commit framework hooks: not yet available"]


def run_hook(name: str, args: list[str]) -> int:
    return 0
