"""What every command module shares: the JSON and run options, JSON output, opening the store, picking the run."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

# Commands that pass everything after `--` to another program untouched.
COMMAND = {"ignore_unknown_options": True, "allow_interspersed_args": False}


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print stable JSON for agents and harnesses.")(f)


def run_option(f: F) -> F:
    return click.option("--run", "run", metavar="ID",
                        help="The run (default: SHIFT_RUN, else this worktree's active run, else the one "
                             "active run; see `shiftgit resume --help`).")(f)


def emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False))


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
