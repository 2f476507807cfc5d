"""What every command module shares: the JSON and run options, JSON output, opening the store, picking the run."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

# Commands that pass everything after `--` to another program untouched.
COMMAND = {"ignore_unknown_options": True, "allow_interspersed_args": False}


class Finite(click.FloatRange):
    """A float range that refuses NaN and infinity: neither is JSON, and `inf` would disable a budget for good."""

    name = "finite number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math

        number = super().convert(value, param, ctx)
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def command_argv(command: tuple[str, ...], name: str) -> tuple[str, ...]:
    """The command after `--`. Options a command does not know land here too (click passes them on):
    a first word starting with `-` is such an option, refused before anything is recorded or run."""
    if command and command[0].startswith("-"):
        from shiftgit import textsafe
        from shiftgit.errors import UsageError

        raise UsageError(f"no such option {textsafe.quote(command[0], 60)} for `shiftgit {name}`; nothing was recorded "
                         f"or run (see `shiftgit {name} --help`; the command goes after `--`)")
    return command


def terminal(text: str) -> str:
    """Human output holding recorded text: line breaks stay, other control characters are shown, never obeyed."""
    from shiftgit import textsafe

    return textsafe.for_terminal(text)


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print stable JSON for agents and harnesses.")(f)


def run_option(f: F) -> F:
    return click.option("--run", "run", metavar="ID",
                        help="The run (default: SHIFT_RUN, else this worktree's active run, else the one "
                             "active run; see `shiftgit resume --help`).")(f)


def emit(data: Any) -> None:
    """Stable JSON on stdout; no character in it can act on a terminal."""
    from shiftgit import textsafe

    click.echo(textsafe.json_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)))


def resolve(store: Any, run: str | None) -> str:
    """The named run, else the one discovery picks; when it picked among several, say which on stderr."""
    from shiftgit.ledger.discovery import discover

    pick = discover(store, run)
    if pick.note:
        click.echo(f"shiftgit: {pick.note}", err=True)
    return pick.run


def store(require: bool = True) -> Any:
    from shiftgit.ledger.store import Store

    return Store.open(require=require)
