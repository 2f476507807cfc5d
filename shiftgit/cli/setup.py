"""`init` and `demo`: set a repository up, take the tour."""

from __future__ import annotations

import sys

import click

from shiftgit.cli.common import store as _store

# -- init -----------------------------------------------------------------------------------

@click.command()
@click.option("--hooks", type=click.Choice(["git", "pre-commit", "none"]), default="git", show_default=True,
              help="Install plain git hooks, add shiftgit to .pre-commit-config.yaml, or install none.")
@click.option("--agent", "agents", multiple=True, type=click.Choice(["claude", "codex", "gemini"]),
              help="Also wire an agent's own hooks (repeatable).")
def init(hooks: str, agents: tuple[str, ...]) -> None:
    """Create .shift/, set repo-local git config, install hooks. Idempotent.

    \b
    Example:
      shiftgit init --hooks git --agent claude
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
