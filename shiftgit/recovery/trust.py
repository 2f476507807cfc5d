"""Which recorded commands this user may run in this clone. Trust lives on the user's side, never in the repo.

`check` remembers every command it runs (`ledger.trustdb`, the store); commands that arrived
from elsewhere run only after `shiftgit trust`, or when pinned with `verify --expect-sha256`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from shiftgit import textsafe
from shiftgit.errors import Refused, UsageError
from shiftgit.ledger.model import Check, Ledger
from shiftgit.ledger.trustdb import Command, command_of
from shiftgit.procs import AGENT_PREFIXES as AGENT_PREFIXES
from shiftgit.procs import AGENT_VARS as AGENT_VARS
from shiftgit.procs import NOT_AGENT_VARS as NOT_AGENT_VARS
from shiftgit.procs import agent_markers


def latest_per_command(checks: Iterable[Check]) -> list[Check]:
    """One record per command (argv + cwd): the latest; an earlier result of it is superseded."""
    latest: dict[str, Check] = {}
    for check in checks:
        digest = command_of(check).digest
        latest.pop(digest, None)
        latest[digest] = check
    return list(latest.values())


def recorded_commands(ledger: Ledger) -> list[Command]:
    """The run's commands, one per digest: the latest checkpoint's checks and those since, its acceptance checks,
    the contract's inspect and escalate-when commands, then its effects' probes."""
    from shiftgit.effects import probes

    checks = (*(ledger.checkpoint.checks if ledger.checkpoint else ()), *ledger.pending_checks)
    from shiftgit.ledger.trustdb import command_digest
    from shiftgit.recovery.plans import commands as plan_commands

    commands = [command_of(check) for check in checks]
    commands += [Command(f"acceptance check {a.name}", a.argv, ".", False, command_digest(a.argv, "."))
                 for a in ledger.contract.accept if a.argv]
    commands += plan_commands(ledger)
    commands += [probe for probe in (probes.of(effect) for effect in ledger.effects) if probe is not None]
    seen: dict[str, Command] = {}
    for command in commands:
        seen.setdefault(command.digest, command)
    return list(seen.values())


def require_human(environ: Mapping[str, str], interactive: bool, yes: bool, what: str) -> None:
    """Refuse inside an agent's own process; without a terminal, demand an explicit --yes."""
    markers = agent_markers(environ)
    if markers:
        raise Refused(f"{what} needs a human: this process looks like a coding agent's "
                      f"({', '.join(markers)} set); run it yourself in a terminal")
    if not interactive and not yes:
        raise UsageError(f"{what} asks for confirmation but there is no terminal; run it in a terminal, "
                         "or add --yes after reading what it would do")




def describe(command: Command) -> list[str]:
    """How `trust` shows a command: what it is, where it runs and its digest, then one argument per line,
    quoted, every control character escaped (what a person approves is exactly what runs)."""
    shell = "   (run by a shell)" if command.shell else ""
    lines = [f"  {command.kind} {textsafe.quote(command.name)}   cwd {textsafe.quote(command.cwd)}   "
             f"sha256 {command.digest}{shell}"]
    lines += [f"    argv[{index}] {textsafe.quote(arg)}" for index, arg in enumerate(command.argv)]
    return lines


def with_control(commands: Iterable[Command]) -> list[Command]:
    """Commands holding a control character (a carriage return, an escape sequence, a line break...)."""
    return [c for c in commands if any(textsafe.has_control(text) for text in (*c.argv, c.cwd, c.name))]


def refuse_control(commands: Iterable[Command], run: str) -> None:
    found = with_control(commands)
    if found:
        names = ", ".join(textsafe.quote(c.name) for c in found)
        raise UsageError(f"{len(found)} command(s) of run {run} hold control characters ({names}; shown escaped "
                         "above): they may print as something else than what runs; nothing was trusted. Read "
                         f"them, then trust them anyway with `shiftgit trust {run} --allow-control`")
