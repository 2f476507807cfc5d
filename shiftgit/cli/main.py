"""The `shiftgit` click group: every command module's commands, and the one place errors become exit codes."""

from __future__ import annotations

from typing import Any

import click

from shiftgit import __version__
from shiftgit.cli import agents, approvals, ci, effects, recovery, reports, runs, setup, sync
from shiftgit.errors import ShiftError


class ShiftGroup(click.Group):
    """Turns every ShiftError into one line on stderr and its exit code; bugs keep their traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ShiftError as exc:
            click.echo(f"shiftgit: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=ShiftGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="shiftgit")
def cli() -> None:
    """Keep a coding agent's work state in git, so a fresh process can verify the handoff.

    \b
    Example:
      shiftgit init
      shiftgit start fix-login --goal "fix the login callback" --stop-when "tests pass"
      shiftgit check -- pytest -q
      shiftgit checkpoint --step "callback parses state" --next "handle expired tokens"
    """


COMMANDS: tuple[click.Command, ...] = (
    setup.init, runs.start, runs.check, runs.checkpoint, reports.status, reports.show, reports.validate,
    runs.constraint, runs.amend, runs.stop, runs.finish, setup.demo,
    effects.effect, approvals.approval, approvals.service,
    sync.merge_driver, sync.sync_command,
    recovery.verify_cmd, recovery.resume_cmd, recovery.rollback_cmd, recovery.trust_cmd,
    agents.mcp_server, reports.log_command, agents.hook, ci.ci,
)
for command in COMMANDS:
    cli.add_command(command)
