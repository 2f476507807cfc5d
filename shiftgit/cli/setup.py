"""`init` and `demo`: set a repository up, take the tour."""

from __future__ import annotations

import sys
from typing import Any

import click

from shiftgit.cli.common import emit, json_option
from shiftgit.cli.common import store as _store

# -- init -----------------------------------------------------------------------------------

@click.command()
@click.option("--hooks", type=click.Choice(["git", "pre-commit", "none"]), default="git", show_default=True,
              help="Install plain git hooks, add shiftgit to .pre-commit-config.yaml, or install none.")
@click.option("--agent", "agents", multiple=True,
              type=click.Choice(["claude", "codex", "gemini", "qwen", "copilot", "opencode", "aider"]),
              help="Also wire an agent's own hooks (repeatable).")
@click.option("--publish", "remote", metavar="REMOTE",
              help="Push every checkpoint to REMOTE in the background (\"publish\" in .shift/config.json).")
@json_option
def init(hooks: str, agents: tuple[str, ...], remote: str | None, as_json: bool) -> None:
    """Create .shift/, set repo-local git config, install hooks. Idempotent.

    When a remote exists and checkpoints are not published yet, it offers to publish them (asks on a
    terminal, else prints the command).

    \b
    Example:
      shiftgit init --hooks git --agent claude
      shiftgit init --publish origin
      shiftgit init --json
    """
    from shiftgit.agents import install as agent_hooks
    from shiftgit.git import setup

    store = _store(require=False)
    if agents:
        agent_hooks.preflight(store.repo, agents)  # a broken agent config stops init before any write
    lines = setup.init(store, hooks=hooks)
    for agent in dict.fromkeys(agents):
        lines += agent_hooks.install(store.repo, agent)
    if agents:
        lines += agent_hooks.path_note(agents)
    if as_json:
        lines += _offer_publish(store, remote, interactive=False)
        emit({"root": str(store.repo.root), "store": store.rel(store.root), "hooks": hooks, "agents": list(agents),
              "done": lines})
        return
    for line in lines:
        click.echo(line)
    for line in _offer_publish(store, remote, interactive=sys.stdin.isatty()):
        click.echo(line)


def _offer_publish(store: Any, remote: str | None, interactive: bool) -> list[str]:
    from shiftgit.git import publish

    if remote is not None:
        return [publish.set_remote(store, remote)]
    offered = publish.offer(store)
    if offered is None:
        return []
    if not interactive:
        return [publish.offer_text(offered)]
    if click.confirm(f"Push every checkpoint to {offered} in the background, so another machine can take over?",
                     default=False):
        return [publish.set_remote(store, offered)]
    return []

# -- doctor ------------------------------------------------------------------------------------

@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@click.option("--no-timing", is_flag=True, help="Skip timing the agent hooks (a scratch repository, a few seconds).")
def doctor(as_json: bool, no_timing: bool) -> None:
    """Check that shiftgit works here: git hooks, notes and publish config, and for each wired agent its hooks,
    `shiftgit` on its PATH, its trust settings and the hook log; times each agent hook once.

    Every finding names the command that fixes it. Exit 0 when all is well, 1 when something is wrong.

    \b
    Example:
      shiftgit doctor
      shiftgit doctor --json
    """
    from shiftgit.agents import doctor as checkup
    from shiftgit.cli.common import emit
    from shiftgit.repo import Repo

    report = checkup.run(Repo.open("."), timings=not no_timing)
    if as_json:
        emit(report)
    else:
        for line in checkup.render(report):
            click.echo(line)
    sys.exit(0 if report["ok"] else 1)

# -- demo ------------------------------------------------------------------------------------

@click.command()
@click.argument("directory", metavar="[DIR]", required=False, type=click.Path(file_okay=False))
def demo(directory: str | None) -> None:
    """A self-contained tour in a temporary repo (or DIR): start, check, checkpoint, commit, resume.

    \b
    Example:
      shiftgit demo
    """
    from shiftgit.cli import demo as tour

    sys.exit(tour.run(directory))
