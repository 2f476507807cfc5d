"""Which recorded commands this user may run in this clone. Trust lives on the user's side, never in the repo.

`check` remembers every command it runs (`ledger.trustdb`, the store); commands that arrived
from elsewhere run only after `shiftgit trust`, or when pinned with `verify --expect-sha256`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from shiftgit.errors import Refused, UsageError
from shiftgit.ledger.model import Check, Ledger
from shiftgit.ledger.trustdb import Command, command_of

# Environment markers of a coding agent's own process: trust must come from a human.
AGENT_VARS = ("CLAUDECODE", "GEMINI_CLI")
AGENT_PREFIXES = ("CODEX_",)
NOT_AGENT_VARS = ("CODEX_HOME",)  # a user's own configuration, set in ordinary shells too


def latest_per_command(checks: Iterable[Check]) -> list[Check]:
    """One record per command (argv + cwd): the latest; an earlier result of it is superseded."""
    latest: dict[str, Check] = {}
    for check in checks:
        digest = command_of(check).digest
        latest.pop(digest, None)
        latest[digest] = check
    return list(latest.values())


def recorded_commands(ledger: Ledger) -> list[Command]:
    """The run's commands: the latest checkpoint's checks and those since, one per digest."""
    checks = (*(ledger.checkpoint.checks if ledger.checkpoint else ()), *ledger.pending_checks)
    seen: dict[str, Command] = {}
    for check in checks:
        command = command_of(check)
        seen.setdefault(command.digest, command)
    return list(seen.values())


def agent_markers(environ: Mapping[str, str]) -> list[str]:
    found = [name for name in AGENT_VARS if environ.get(name)]
    found += sorted(name for name in environ
                    if name.startswith(AGENT_PREFIXES) and name not in NOT_AGENT_VARS)
    return found


def require_human(environ: Mapping[str, str], interactive: bool, yes: bool, what: str) -> None:
    """Refuse inside an agent's own process; without a terminal, demand an explicit --yes."""
    markers = agent_markers(environ)
    if markers:
        raise Refused(f"{what} needs a human: this process looks like a coding agent's "
                      f"({', '.join(markers)} set); run it yourself in a terminal")
    if not interactive and not yes:
        raise UsageError(f"{what} asks for confirmation but there is no terminal; run it in a terminal, "
                         "or add --yes after reading what it would do")


