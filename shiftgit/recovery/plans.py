"""The contract's recovery plan, run by `resume`: inspect-first and escalate-when commands, the rollback plan.

These are recorded commands, so they run only when trusted in this clone, on the same terms as
`verify` and effect probes (`effects/probes.require_trusted`): inside a coding agent, only after
a person ran `shiftgit trust`. An escalate-when command whose exit code is 0 means escalate; one
that cannot run (untrusted, missing) escalates too, since nobody can say the condition is false.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from shiftgit import textsafe
from shiftgit.errors import Refused, ShiftError

if TYPE_CHECKING:  # trust and the secret scanner load only when a command runs: never for `resume --no-run`
    from shiftgit.ledger.model import Ledger
    from shiftgit.ledger.store import Store
    from shiftgit.ledger.trustdb import Command

TIMEOUT_S = 120.0
TAIL = 400


def commands(ledger: Ledger) -> list[Command]:
    """The plan's commands as trust sees them (for `shiftgit trust`)."""
    from shiftgit.ledger import trustdb

    out = []
    for kind, texts in (("inspect", ledger.contract.inspect), ("escalate-when", ledger.contract.escalate_when)):
        for text in texts:
            argv = _split(text)
            if argv:
                out.append(trustdb.Command(f"{kind} {text}"[:80], tuple(argv), ".", False,
                                           trustdb.command_digest(argv, "."), kind="check"))
    return out


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return []


def run_plan(store: Store, ledger: Ledger, run_checks: bool) -> dict[str, Any]:
    """{inspect: [...], escalate_when: [...], escalate: [reasons]}; nothing runs with run_checks False."""
    inspect = [_run(store, ledger.run, text, run_checks) for text in ledger.contract.inspect]
    guards = [_run(store, ledger.run, text, run_checks) for text in ledger.contract.escalate_when]
    escalate = []
    for guard in guards:
        if guard["exit_code"] == 0:
            escalate.append(f"escalate-when command {textsafe.quote(guard['command'])} exited 0: the contract says "
                            "escalate (its output: " + textsafe.one_line(guard["output"], 200) + ")")
        elif guard["status"] == "untrusted":
            escalate.append(f"escalate-when command {textsafe.quote(guard['command'])} is not trusted in this clone, "
                            f"so nobody can say the condition is false; a person trusts it with "
                            f"`shiftgit trust {ledger.run}`")
        elif guard["status"] == "failed_to_run":
            escalate.append(f"escalate-when command {textsafe.quote(guard['command'])} could not run: "
                            + textsafe.one_line(guard["output"], 200))
    return {"inspect": inspect, "escalate_when": guards, "escalate": escalate}


def _run(store: Store, run: str, text: str, run_checks: bool) -> dict[str, Any]:
    from shiftgit.effects.probes import require_trusted
    from shiftgit.evidence.runner import run as run_command
    from shiftgit.ledger import trustdb
    from shiftgit.ledger.secrets import redact

    entry: dict[str, Any] = {"command": text, "status": "not_run", "exit_code": None, "output": ""}
    argv = _split(text)
    if not run_checks:
        return dict(entry, output="not run (--no-run)")
    if not argv:
        return dict(entry, status="failed_to_run", output="the command does not parse")
    command = trustdb.Command(text, tuple(argv), ".", False, trustdb.command_digest(argv, "."), kind="check")
    try:
        require_trusted(store.repo, run, command)
    except Refused:
        return dict(entry, status="untrusted", output=f"not trusted here: `shiftgit trust {run}`")
    try:
        result = run_command(argv, cwd=str(store.repo.root), timeout=TIMEOUT_S)
    except (ShiftError, OSError) as exc:  # a missing program is a result to show, not a crash
        return dict(entry, status="failed_to_run", output=str(exc))
    status = "ran" if result.exit_code is not None else "timed_out"
    return dict(entry, status=status, exit_code=result.exit_code, output=redact(result.tail[-TAIL:]))


def lines(plan: dict[str, Any], ledger: Ledger) -> list[str]:
    """The briefing's lines for the plan (recorded text quoted and fenced by the briefing's caller)."""
    out = []
    for kind in ("inspect", "escalate_when"):
        for entry in plan.get(kind, ()):
            result = f"exit {entry['exit_code']}" if entry["status"] == "ran" else entry["status"]
            out.append(f"{kind.replace('_', '-')} {textsafe.quote(entry['command'])}: {result}: "
                       + textsafe.quote(textsafe.one_line(entry["output"], 240)))
    if ledger.contract.rollback_plan:
        out.append("rollback plan: " + textsafe.quote(ledger.contract.rollback_plan))
    return out
