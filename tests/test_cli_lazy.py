"""The command line loads a command's module only when that command runs (cli/main.py's LAZY table)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click

from shiftgit.cli.main import LAZY, cli

MODULES = ("agents", "approvals", "ci", "context", "effects", "lifecycle", "recovery", "reports", "runs", "setup",
           "sync")


def test_the_table_names_every_top_level_command_of_every_module() -> None:
    commands: dict[int, click.Command] = {}
    inner: set[int] = set()
    for module in MODULES:
        for value in vars(importlib.import_module(f"shiftgit.cli.{module}")).values():
            if isinstance(value, click.Command):
                commands[id(value)] = value
                if isinstance(value, click.Group):
                    inner |= {id(c) for c in value.commands.values()}
    top = {command.name for key, command in commands.items() if key not in inner}
    assert top == set(LAZY)
    ctx = click.Context(cli)
    for name in LAZY:
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name
    assert cli.list_commands(ctx) == sorted(LAZY)


def test_a_command_loads_only_its_own_module() -> None:
    code = ("import sys; from shiftgit.cli.main import cli; import click; "
            "cli.get_command(click.Context(cli), 'checkpoint'); "
            "print(sorted(m for m in sys.modules if m.startswith('shiftgit.cli.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(eval(out))  # a list of module names
    assert "shiftgit.cli.runs" in loaded
    assert not {f"shiftgit.cli.{m}" for m in ("approvals", "effects", "lifecycle", "recovery", "sync")} & loaded


def test_an_unknown_command_still_gets_clicks_suggestion() -> None:
    proc = subprocess.run([sys.executable, "-m", "shiftgit", "chekpoint"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == ("shiftgit: No such command 'chekpoint'. Did you mean 'checkpoint'?; "
                           "see `shiftgit --help`\n")


def test_a_group_loaded_alone_has_every_subcommand() -> None:
    everything = {name: sorted(getattr(cli.get_command(click.Context(cli), name), "commands", {})) for name in LAZY}
    for name, subcommands in everything.items():
        if not subcommands:
            continue
        code = ("import click; from shiftgit.cli.main import cli; "
                f"print(sorted(cli.get_command(click.Context(cli), {name!r}).commands))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert eval(out) == subcommands, name  # a list of names
