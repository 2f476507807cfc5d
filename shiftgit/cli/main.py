"""The `shiftgit` click group: every command module's commands, and the one place errors become exit codes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from shiftgit import __version__
from shiftgit.cli import plain
from shiftgit.errors import ShiftError


def say(message: str, prefix: str = "shiftgit: ") -> None:
    """One line on stderr: control characters shown, never obeyed, and cut to plain.MESSAGE_CAP."""
    click.echo(plain.line(message, prefix), err=True)


class ShiftGroup(click.Group):
    """Turns every ShiftError into one line on stderr and its exit code; bugs keep their traceback.

    Usage errors (a missing option, an unknown command) are one line too, naming the command's
    `--help`; so is a file system that refuses a write (full, read-only, not permitted).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A command's module is imported when the command is asked for: one command line loads one module
        of commands, not all eleven (and what they import)."""
        import importlib

        # A name not in the table loads them all: click's "No such command" suggests from what is loaded.
        for name in [cmd_name] if cmd_name in LAZY else LAZY:
            if name not in self.commands:
                module, attribute = LAZY[name]
                self.add_command(getattr(importlib.import_module(f"shiftgit.cli.{module}"), attribute), name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (ShiftError, OSError) as exc:
            said = plain.failure(exc)  # the line and exit code the plain route gives too
            if said is None:
                raise
            click.echo(said[0], err=True)
            ctx.exit(said[1])

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()
            return exc.exit_code
        except click.UsageError as exc:
            path = exc.ctx.command_path if exc.ctx is not None else "shiftgit"
            say(f"{path}: {exc.format_message().rstrip('.')}; see `{path} --help`", prefix="")
            return exc.exit_code
        except click.ClickException as exc:
            say(exc.format_message())
            return exc.exit_code
        except click.Abort:
            say("aborted")
            return 1


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


# Every command: its name -> (module in shiftgit/cli/, attribute). tests/test_cli_lazy.py holds it against the modules.
LAZY: dict[str, tuple[str, str]] = {
    "init": ("setup", "init"), "doctor": ("setup", "doctor"), "demo": ("setup", "demo"),
    "start": ("runs", "start"), "check": ("runs", "check"), "checkpoint": ("runs", "checkpoint"),
    "constraint": ("lifecycle", "constraint"),  # runs.py's group: lifecycle.py adds `promote` to it
    "amend": ("runs", "amend"), "stop": ("runs", "stop"),
    "finish": ("runs", "finish"), "accept": ("runs", "accept"),
    "status": ("reports", "status"), "show": ("reports", "show"), "validate": ("reports", "validate"),
    "log": ("reports", "log_command"), "notes": ("reports", "notes_group"), "report": ("reports", "report_command"),
    "effect": ("effects", "effect"), "approval": ("approvals", "approval"), "service": ("approvals", "service"),
    "merge-driver": ("sync", "merge_driver"), "sync": ("sync", "sync_command"),
    "verify": ("recovery", "verify_cmd"), "resume": ("recovery", "resume_cmd"),
    "rollback": ("recovery", "rollback_cmd"), "diff": ("recovery", "diff_cmd"), "trust": ("recovery", "trust_cmd"),
    "mcp": ("agents", "mcp_server"), "hook": ("agents", "hook"), "ci": ("ci", "ci"),
    "context": ("context", "context"), "output": ("context", "output"),
    "archive": ("lifecycle", "archive_cmd"), "runs": ("lifecycle", "runs_cmd"), "gc": ("lifecycle", "gc_cmd"),
    "insights": ("lifecycle", "insights_cmd"), "review": ("lifecycle", "review"),
    "confirm": ("lifecycle", "confirm_cmd"), "memory": ("lifecycle", "memory"),
}
