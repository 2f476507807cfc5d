"""Options defined once, for click and for a command line without click; the one place errors become lines.

click's import costs about two Python start-ups, as much as a whole small `checkpoint`. A command whose
options are an `Opt` table here gets its click options from the table (`cli/common.options`), and in
its plainest forms — options this table names, each value plain (`--step TEXT`, not `--step=TEXT`, no
value starting with `-`), then for a command that runs one the words after `--` — `__main__` runs it
through `main` below without click. Anything else (`--help`, an unknown or repeated option, a value
click would refuse, a missing required option) goes to click, untouched and before anything ran, so
every error says what it always said. What a command prints and the exit codes go through the same
functions on both routes (`Echo`, `failure`); tests/test_plain_routes.py runs both and compares.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

MESSAGE_CAP = 800  # characters of one error line: a 10,000-character argument is not echoed whole
# What the machine refuses rather than what shiftgit gets wrong: one line, exit 2, no traceback.
REFUSALS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO,
                      errno.ENOTDIR, errno.EISDIR, errno.ELOOP, errno.ENAMETOOLONG})


Echo = Callable[..., None]  # what a command prints with: echo(line) to stdout, echo(line, err=True) to stderr


class Opt(NamedTuple):
    """One option of a command: its names, the parameter it fills, and how.

    `kind`: "value" (one value), "multiple" (repeatable), "flag", or "switch" (a flag that sets `dest` to
    `flag_value`; several switches share one dest). `type`: None (text), or a key of `TYPES`."""

    names: tuple[str, ...]
    dest: str
    help: str | None = None
    kind: str = "value"
    metavar: str | None = None
    type: str | None = None
    default: Any = None
    flag_value: str | None = None
    required: bool = False
    show_default: bool = False


INT_MAX = 2**63 - 1  # the largest count any option takes: what a 64-bit reader of the JSON (and islice) holds


def _at_least(number: type, low: float) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        import math

        value = number(text)  # what click's IntRange / FloatRange call first
        if value < low or (isinstance(value, float) and not math.isfinite(value)) or (
                isinstance(value, int) and value > INT_MAX):
            raise ValueError(text)
        return value
    return convert


def _at_most(high: int) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        value = _at_least(int, 1)(text)
        if value > high:
            raise ValueError(text)
        return value
    return convert


# type name -> (click's type for it, built in cli/common.py; the plain conversion: ValueError -> click says why)
TYPES: dict[str, Callable[[str], Any]] = {"int>=0": _at_least(int, 0), "finite>=0": _at_least(float, 0),
                                          "finite>=0.1": _at_least(float, 0.1), "int1-100": _at_most(100)}
RUN = Opt(("--run",), "run", "The run (default: SHIFT_RUN, else this worktree's active run, else the one active run; "
          "see `shiftgit resume --help`).", metavar="ID")
JSON = Opt(("--json",), "as_json", "Print stable JSON for agents and harnesses.", kind="flag")


class Command(NamedTuple):
    """A command the plain route can run: its words, options, whether it runs a command after `--`, its body,
    and the parameter of its one optional argument (`verify [RUN]`), if it has one."""

    words: tuple[str, ...]
    options: tuple[Opt, ...]
    runs_command: bool
    body: Callable[..., int | None]
    argument: str | None = None


def parse(options: Sequence[Opt], args: Sequence[str], runs_command: bool,
          argument: str | None = None) -> dict[str, Any] | None:
    """ARGS as the command's parameters when they are in a plainest form (see the module), else None."""
    by_name = {name: opt for opt in options for name in opt.names}
    values: dict[str, Any] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        opt = by_name.get(arg)
        if arg == "--" and runs_command:
            values["command"] = tuple(args[i + 1:])
            break
        if argument is not None and argument not in values and not arg.startswith("-"):
            values[argument] = arg
            i += 1
            continue
        if opt is None or (opt.kind != "multiple" and opt.dest in values and opt.kind != "switch"):
            return None  # a word, an unknown or repeated option, `--help`, `--opt=value`: click's to parse
        if opt.kind in ("flag", "switch"):
            values[opt.dest] = True if opt.kind == "flag" else opt.flag_value
            i += 1
            continue
        if i + 1 >= len(args) or args[i + 1].startswith("-"):
            return None
        try:
            value = TYPES[opt.type](args[i + 1]) if opt.type else args[i + 1]
        except (ValueError, OverflowError):
            return None
        values[opt.dest] = (*values.get(opt.dest, ()), value) if opt.kind == "multiple" else value
        i += 2
    if runs_command and "command" not in values:
        return None
    if argument is not None:
        values.setdefault(argument, None)
    for opt in options:
        if opt.dest not in values:
            if opt.required:
                return None
            values[opt.dest] = {"flag": False, "multiple": ()}.get(opt.kind, opt.default)
    return values


def main(args: Sequence[str], commands: Sequence[Command]) -> int | None:
    """Run ARGS without click when a command of COMMANDS takes them in a plainest form; None: click's to run."""
    for command in commands:
        if tuple(args[:len(command.words)]) == command.words:
            values = parse(command.options, args[len(command.words):], command.runs_command, command.argument)
            if values is None:
                return None
            return invoke(command.body, write, values)
    return None


def invoke(body: Callable[..., int | None], echo: Echo, values: dict[str, Any]) -> int:
    """BODY run as the click command line runs a command: an expected error is one line and its exit code."""
    try:
        try:
            return body(echo, **values) or 0
        except (EOFError, KeyboardInterrupt):
            echo("", err=True)
            echo("shiftgit: aborted", err=True)
            return 1
        except Exception as exc:
            said = failure(exc)
            if said is None:
                raise
            echo(said[0], err=True)
            return said[1]
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        import os  # the reader went away: exit 1 as click does, nothing more written (no error at exit's flush)

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def failure(exc: BaseException) -> tuple[str, int] | None:
    """The line and exit code an expected error ends a command with (a ShiftError, a refused write); None: a bug."""
    from shiftgit.errors import ShiftError

    if isinstance(exc, ShiftError):
        return line(_with_hint(exc)), exc.exit_code
    if isinstance(exc, OSError) and exc.errno in REFUSALS:
        where = f"{exc.filename}: " if exc.filename else ""
        return line(f"{where}{exc.strerror or exc}; the file system refused, so the command stopped there: free "
                    "space or fix the permissions, then run it again"), 2
    return None


def _with_hint(exc: BaseException) -> str:
    """No `.shift/` here, but another clone published a run: how to get to the commit it was made on."""
    from shiftgit.errors import NotInitialized, ShiftError

    if not isinstance(exc, NotInitialized):
        return str(exc)
    from shiftgit.recovery.elsewhere import not_here_hint
    from shiftgit.repo import Repo

    try:
        hint = not_here_hint(Repo.open())
    except (ShiftError, OSError):
        hint = None
    return f"{exc}; or take over: {hint}" if hint else str(exc)


def line(message: str, prefix: str = "shiftgit: ") -> str:
    """One error line: control characters shown, never obeyed, and cut to MESSAGE_CAP."""
    from shiftgit import textsafe

    return prefix + textsafe.one_line(message, MESSAGE_CAP)


def write(message: str, err: bool = False) -> None:
    """click.echo without click: the line, UTF-8 where the stream is ASCII, flushed."""
    from shiftgit.cli.quick import write_to

    write_to(sys.stderr if err else sys.stdout, message + "\n")


def emit(echo: Echo, data: Any) -> None:
    """Stable JSON on stdout; no character in it can act on a terminal."""
    from shiftgit.cli.quick import json_text

    echo(json_text(data))


def resolve(echo: Echo, store: Any, run: str | None) -> str:
    """The named run, else the one discovery picks; when it picked among several, say which on stderr."""
    from shiftgit.ledger.discovery import discover

    pick = discover(store, run)
    if pick.note:
        echo(f"shiftgit: {pick.note}", err=True)
    return pick.run


def command_argv(command: tuple[str, ...], name: str) -> tuple[str, ...]:
    """The command after `--`. Options a command does not know land here too (click passes them on):
    a first word starting with `-` is such an option, refused before anything is recorded or run."""
    if command and command[0].startswith("-"):
        from shiftgit import textsafe
        from shiftgit.errors import UsageError

        raise UsageError(f"no such option {textsafe.quote(command[0], 60)} for `shiftgit {name}`; nothing was recorded "
                         f"or run (see `shiftgit {name} --help`; the command goes after `--`)")
    return command
