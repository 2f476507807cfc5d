"""`init` and `demo`: set a repository up, take the tour."""

from __future__ import annotations

import sys
from typing import Any

import click

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
def init(hooks: str, agents: tuple[str, ...], remote: str | None) -> None:
    """Create .shift/, set repo-local git config, install hooks. Idempotent.

    When a remote exists and checkpoints are not published yet, it offers to publish them (asks on a
    terminal, else prints the command).

    \b
    Example:
      shiftgit init --hooks git --agent claude
      shiftgit init --publish origin
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
        lines += agent_hooks.path_note()
    for line in lines:
        click.echo(line)
    _offer_publish(store, remote)


def _offer_publish(store: Any, remote: str | None) -> None:
    from shiftgit.git import publish

    if remote is not None:
        click.echo(publish.set_remote(store, remote))
        return
    offered = publish.offer(store)
    if offered is None:
        return
    if not sys.stdin.isatty():
        click.echo(publish.offer_text(offered))
    elif click.confirm(f"Push every checkpoint to {offered} in the background, so another machine can take over?",
                       default=False):
        click.echo(publish.set_remote(store, offered))

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
