"""Acceptance checks (`start/amend --accept NAME=CMD`, `shiftgit accept`) and retiring a check (`check --retire`).

An acceptance check is a named command, stored as argv and run without a shell like `check`; it is
`never_attempted` until `shiftgit accept` runs it. `finish --status completed` is refused while one
is not `passed` on the final tree (`unmet`), unless the caller overrides with a reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, BinaryIO

from shiftgit.errors import UsageError
from shiftgit.ledger import checkstates
from shiftgit.ledger.model import Check, Ledger, Retirement
from shiftgit.ledger.record import replace
from shiftgit.ledger.store import Store
from shiftgit.runs.acceptspec import parse as parse  # re-exported
from shiftgit.runs.contract import new_id, now_iso


def commands(ledger: Ledger) -> list[tuple[str, tuple[str, ...]]]:
    """(name, argv) of each acceptance check that has a command."""
    return [(a.name, a.argv) for a in ledger.contract.accept if a.argv]


def run_all(store: Store, run: str, *, echo: BinaryIO | None = None) -> list[Check]:
    """Run every acceptance check as a check of its name (trusted commands only, like `verify`)."""
    from shiftgit.effects.probes import require_trusted
    from shiftgit.ledger import trustdb
    from shiftgit.runs.checks import CheckInput, check

    ledger = store.read(run)
    todo = commands(ledger)
    if not todo:
        missing = [a.name for a in ledger.contract.accept]
        hint = (f"; {', '.join(missing)} has no command: give it one with `shiftgit amend --accept NAME=CMD "
                "--reason R`") if missing else ""
        raise UsageError(f"run {run} has no acceptance check to run{hint}; add one with "
                         "`shiftgit amend --accept NAME=CMD --reason R`")
    for name, argv in todo:
        command = trustdb.Command(f"acceptance check {name}", argv, ".", False, trustdb.command_digest(argv, "."),
                                  kind="check")
        require_trusted(store.repo, run, command)
    return [check(store, run, CheckInput(argv=argv, name=name), echo=echo) for name, argv in todo]


def unmet(ledger: Ledger, tree: str | None) -> list[dict[str, Any]]:
    """Acceptance checks whose latest result did not pass on `tree` (the final one), each with its state there."""
    out = []
    for entry in checkstates.check_states(ledger):
        if not entry["acceptance"]:
            continue
        if entry["state"] == "never_attempted" or entry["content"] != tree:
            state = entry["state"] if entry["state"] == "never_attempted" else "stale"
            out.append(dict(entry, state=state))
        elif not (entry["exit_code"] == 0 and not entry["failing"] and not entry["timed_out"]):
            out.append(dict(entry, state="failed"))
    return out


def refusal(run: str, missing: Sequence[dict[str, Any]], worktree: str | None) -> str:
    """The `finish --status completed` refusal: every unmet acceptance check and the command that fixes it."""
    parts = []
    for entry in missing:
        if entry["state"] == "never_attempted" and not entry["argv"]:
            parts.append(f"{entry['name']} has no command (`shiftgit amend --accept {entry['name']}=CMD --reason R`)")
        elif entry["state"] == "never_attempted":
            parts.append(f"{entry['name']} was never run (`shiftgit accept {run}`)")
        else:
            parts.append(f"{checkstates.describe(entry)} (`shiftgit accept {run}`, then `shiftgit checkpoint`)")
    return (f"run {run} cannot finish as completed: {len(missing)} acceptance check(s) not passed on the final "
            f"tree: {'; '.join(parts)}; or finish with --override REASON, which the receipt keeps")


# -- retire ---------------------------------------------------------------------------------------

def retire(store: Store, run: str, name: str, reason: str) -> Retirement:
    """Take check `name` out of the record from the next checkpoint on, with the reason (recorded)."""
    if not reason.strip():
        raise UsageError("retiring a check needs a reason: --reason TEXT; nothing was written")
    made: list[Retirement] = []

    def change(ledger: Ledger) -> Ledger:
        known = [e["name"] for e in checkstates.check_states(ledger)]
        if name not in known:
            raise UsageError(f"no check named {name!r} on run {run} (checks: {', '.join(known) or 'none'}); "
                             "nothing was retired")
        at = now_iso()
        record = Retirement(name=name, reason=reason, at=at, extra={"id": new_id("t")})  # merged by id
        made.append(record)
        accept = tuple(a for a in ledger.contract.accept if a.name != name)
        contract = replace(ledger.contract, accept=accept)
        amendments = ledger.amendments
        if accept != ledger.contract.accept:
            from shiftgit.ledger.model import Amendment

            amendments = (*amendments, Amendment(id=new_id("a"), at=at, field="accept", reason=reason,
                                                 old=[a.to_dict() for a in ledger.contract.accept],
                                                 new=[a.to_dict() for a in accept]))
        return replace(ledger, retired=(*ledger.retired, record), contract=contract, amendments=amendments,
                       pending_checks=tuple(c for c in ledger.pending_checks if c.name != name), updated_at=at)

    store.update(run, change)
    return made[0]
