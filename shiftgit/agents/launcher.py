"""The agent hook launcher, `<git-common-dir>/shift/agent-hook`, and the hook command that runs it.

An agent's config is committed with the project, so the command `init --agent` writes there names no
machine's interpreter: it runs this clone's launcher when `init` wrote one, else `shiftgit hook AGENT EVENT`
from PATH (a clone where `init` has not run; an older shiftgit wired that alone). The launcher, never
committed, records the absolute interpreter that installed it and the folder holding the shiftgit package,
as the git hook shims do (`hooks/agent-hook.sh`), and starts Python without site: an agent hook costs what
its work costs, not site's start-up and every `.pth` file of the environment. Codex runs hooks under
`bash -lc`, which rebuilds PATH: the launcher does not depend on it.

The command asks git for the common dir only when the agent's working directory is not the main work
tree's top (`.git/shift/agent-hook` is tested first: no process).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from shiftgit.git import install as git_install
from shiftgit.repo import Repo

NAME = "agent-hook"
TEMPLATE = "agent-hook.sh"
LEGACY = "shiftgit hook {agent} {event}"  # what an older shiftgit wired, and the fallback where no launcher is
COMMAND = ('h=.git/shift/agent-hook; [ -x "$h" ] || h=$(git rev-parse --git-common-dir 2>/dev/null)/shift/agent-hook; '
           '[ -x "$h" ] && exec "$h" {agent} {event}; exec ' + LEGACY)


def command(agent: str, event: str) -> str:
    """The hook command a config gets: this clone's launcher, else `shiftgit` from PATH."""
    return COMMAND.format(agent=agent, event=event)


def legacy(agent: str, event: str) -> str:
    return LEGACY.format(agent=agent, event=event)


def is_ours(text: str, agent: str, event: str) -> bool:
    """A command shiftgit wrote for this hook, current or older (`init` replaces an older one with the current)."""
    return text in (legacy(agent, event), command(agent, event)) or (
        "shift/agent-hook" in text and text.endswith("exec " + legacy(agent, event)))


def path(repo: Repo) -> Path:
    return repo.common_dir / "shift" / NAME


def text(python: str | None = None) -> str:
    """The launcher for `python` (default: the interpreter running now)."""
    return git_install.launcher_text(TEMPLATE, os.path.abspath(python or sys.executable))


def install(repo: Repo, python: str | None = None) -> list[str]:
    """Write (or update) this clone's launcher; one line when it changed."""
    target = path(repo)
    wanted = text(python)
    try:
        if target.read_text(encoding="utf-8") == wanted:
            return []
    except (OSError, UnicodeDecodeError):
        pass
    target.parent.mkdir(parents=True, exist_ok=True)
    git_install.write_executable(target, wanted)
    return [f"agent hooks run {target} (not committed; it starts {interpreter(wanted)} without site)"]


def interpreter(launcher: str) -> str | None:
    """The interpreter a launcher's text records."""
    return git_install.recorded_python(launcher)
