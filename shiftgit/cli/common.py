"""What every command module shares: the JSON and run options, JSON output, opening the store, picking the run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from shiftgit.cli import plain
from shiftgit.cli.plain import command_argv as command_argv  # re-exported: the commands import it from here

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


class Count(click.IntRange):
    """A whole number from `min` up to what a 64-bit reader holds (a larger one overflows islice, timedelta, JSON)."""

    def __init__(self, min: int = 1) -> None:
        super().__init__(min=min, max=plain.INT_MAX)


def terminal(text: str) -> str:
    """Human output holding recorded text: line breaks stay, other control characters are shown, never obeyed."""
    from shiftgit import textsafe

    return textsafe.for_terminal(text)


def options(table: Sequence[plain.Opt]) -> Callable[[F], F]:
    """The click options of an option table (cli/plain.py), in the table's order."""
    types = {"int>=0": Count(min=0), "finite>=0": Finite(min=0), "finite>=0.1": Finite(min=0.1),
             "int1-100": click.IntRange(min=1, max=100)}

    def decorate(f: F) -> F:
        for opt in reversed(table):
            given: dict[str, Any] = {"multiple": {"multiple": True}, "flag": {"is_flag": True},
                                     "switch": {"flag_value": opt.flag_value}}.get(opt.kind, {})
            given |= {key: value for key, value in [("metavar", opt.metavar), ("required", opt.required),
                                                     ("show_default", opt.show_default),
                                                     ("type", types.get(opt.type or ""))] if value}
            given |= {"default": opt.default} if opt.default is not None else {}
            f = click.option(*opt.names, opt.dest, help=opt.help, **given)(f)
        return f
    return decorate


json_option = options([plain.JSON])
run_option = options([plain.RUN])


def emit(data: Any) -> None:
    """Stable JSON on stdout; no character in it can act on a terminal."""
    plain.emit(click.echo, data)


def resolve(store: Any, run: str | None) -> str:
    """The named run, else the one discovery picks; when it picked among several, say which on stderr."""
    return plain.resolve(click.echo, store, run)


def store(require: bool = True) -> Any:
    from shiftgit.ledger.store import Store

    return Store.open(require=require)
