"""Check states: every distinct check of a run (by name) in a checkpoint, and its latest result.

A check's latest result is carried from checkpoint to checkpoint until it is rerun or retired
(`check --retire`), so a failure is never forgotten because other checks ran after it. Its state
in a checkpoint is `passed` or `failed` (its latest result ran on the checkpoint's tree), `stale`
(it ran on other content; its outcome is kept) or `never_attempted` (an acceptance check not run
yet). Pure functions over the model: the note, `log`, `resume`, the briefing and the receipt
all read states from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from shiftgit.ledger.model import Acceptance, Check, Checkpoint, Ledger, Retirement
from shiftgit.ledger.record import replace

STATES = ("passed", "failed", "never_attempted", "stale")
NAMES_CAP = 100  # distinct checks a checkpoint carries (the oldest results drop first)


def passed(check: Check) -> bool:
    return check.exit_code == 0 and not check.timed_out and not check.failing


def carry(previous: Sequence[Check], pending: Sequence[Check], retired: Iterable[Retirement],
          seq: int, tree: str | None) -> tuple[Check, ...]:
    """The checks of checkpoint `seq`: the previous checkpoint's latest result per name, retired names dropped,
    then the checks run since (the latest of each name wins), each marked with the checkpoint it entered."""
    gone = {r.name for r in retired if r.checkpoint is None}
    latest: dict[str, Check] = {c.name: c for c in previous if c.name not in gone}
    for check in pending:
        latest.pop(check.name, None)
        latest[check.name] = replace(check, checkpoint=check.checkpoint or seq)
    kept = list(latest.values())[-NAMES_CAP:]
    return tuple(replace(c, fresh=tree is not None and c.content == tree) for c in kept)


def state_of(check: Check, tree: str | None) -> str:
    if tree is not None and check.content != tree:
        return "stale"
    return "passed" if passed(check) else "failed"


def latest_checks(ledger: Ledger) -> list[Check]:
    """The record's latest result per check name: the latest checkpoint's, then the checks run since."""
    point = ledger.checkpoint
    open_retired = {r.name for r in ledger.retired if r.checkpoint is None}
    base = [c for c in (point.checks if point else ()) if c.name not in open_retired]
    latest: dict[str, Check] = {c.name: c for c in base}
    for check in ledger.pending_checks:
        latest.pop(check.name, None)
        latest[check.name] = check
    return list(latest.values())


def check_states(ledger: Ledger, point: Checkpoint | None = None, tree: str | None = None) -> list[dict[str, Any]]:
    """Every check's state in checkpoint `point` (default: the latest, with the checks run since it), judged
    against `tree` (default: the checkpoint's; `finish` passes the final working tree).

    Entries: name, state, argv, exit_code, failing, acceptance, checkpoint (seq of the latest result,
    null when never attempted or not yet checkpointed), pending, at, content."""
    point = point if point is not None else ledger.checkpoint
    latest = latest_checks(ledger) if point is ledger.checkpoint else list(point.checks if point else ())
    tree = tree if tree is not None else point.tree if point is not None else None
    accept = {a.name: a for a in ledger.contract.accept}
    entries = [_entry(c, state_of(c, tree) if tree is not None else ("passed" if passed(c) else "failed"),
                      c.name in accept, _seq(c, point)) for c in latest]
    seen = {c.name for c in latest}
    entries += [_never(a) for a in ledger.contract.accept if a.name not in seen]
    return entries


def _seq(check: Check, point: Checkpoint | None) -> int | None:
    if point is None or not any(c is check for c in point.checks):
        return None  # run since the checkpoint: not in one yet
    return check.checkpoint if check.checkpoint is not None else point.seq  # schema 1 records: the carrying one


def _entry(check: Check, state: str, acceptance: bool, seq: int | None) -> dict[str, Any]:
    return {"name": check.name, "state": state, "argv": list(check.argv), "exit_code": check.exit_code,
            "failing": list(check.failing), "timed_out": check.timed_out, "acceptance": acceptance,
            "checkpoint": seq, "pending": seq is None, "at": check.started_at, "content": check.content,
            "id": check.id}


def _never(accept: Acceptance) -> dict[str, Any]:
    return {"name": accept.name, "state": "never_attempted", "argv": list(accept.argv), "exit_code": None,
            "failing": [], "timed_out": False, "acceptance": True, "checkpoint": None, "pending": False,
            "at": None, "content": None, "id": None}


def failing(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries whose latest result failed, stale or not."""
    return [e for e in entries if e["state"] in ("failed", "stale") and (e["exit_code"] != 0 or e["failing"]
                                                                           or e["timed_out"])]


def describe(entry: dict[str, Any]) -> str:
    """One line: `unit: failed (exit 1): tests/x.py::test_y`."""
    outcome = "timed out" if entry["timed_out"] else f"exit {entry['exit_code']}"
    if entry["state"] == "never_attempted":
        return f"{entry['name']}: never attempted"
    tests = ", ".join(entry["failing"][:5]) + (" ..." if len(entry["failing"]) > 5 else "")
    return f"{entry['name']}: {entry['state']} ({outcome})" + (f": {tests}" if tests else "")
