"""Check states: every distinct check of a run (by name) in a checkpoint, and its latest result.

A check's latest result is carried from checkpoint to checkpoint until it is rerun or retired
(`check --retire`), so a failure is never forgotten because other checks ran after it. Its state
in a checkpoint is `passed` or `failed` (its latest result ran on the checkpoint's tree), `stale`
(it ran on other content; its outcome is kept) or `never_attempted` (an acceptance check not run
yet). Pure functions over the model: the note, `log`, `resume`, the briefing and the receipt
all read states from here.

A failure is cleared only by a result that covers it: a later run of the same command, or of a wider one
(the failing argv with trailing arguments dropped, or given paths that hold them: `pytest` and `pytest tests`
cover `pytest tests/test_one.py`; an added option never widens). A narrower
rerun under the same name (`pytest tests/test_one.py` after a failing `pytest`) is recorded beside the
failure it does not cover, and the name's state stays that failure's until a covering run passes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from shiftgit import textsafe
from shiftgit.ledger.model import Acceptance, Check, Checkpoint, Ledger, Retirement
from shiftgit.ledger.record import replace

STATES = ("passed", "failed", "never_attempted", "stale")
NAMES_CAP = 100  # distinct checks a checkpoint carries (the oldest results drop first)
HELD_CAP = 4  # failures of one name a later narrower run did not cover, kept beside its latest result


def passed(check: Check) -> bool:
    return check.exit_code == 0 and not check.timed_out and not check.failing


def clears(newer: Check, older: Check) -> bool:
    """Whether `newer` covers `older`: run in the same place the same way, with `older`'s argv, a prefix of it, or
    the same command on paths that hold every argument `older` added (`pytest tests` covers `pytest tests/a.py`)."""
    if (newer.cwd, newer.shell) != (older.cwd, older.shell):
        return False
    same = 0
    for mine, theirs in zip(newer.argv, older.argv, strict=False):
        if mine != theirs:
            break
        same += 1
    wider, narrower = newer.argv[same:], older.argv[same:]
    return not wider or (same > 0 and all(not w.startswith("-") for w in wider)
                         and all(any(_under(n, w) for w in wider) for n in narrower))


def _under(path: str, parent: str) -> bool:
    """`tests/a.py` and `tests/a.py::test_x` lie under `tests` (and under `tests/`); `tests2` does not."""
    top = parent.rstrip("/")
    return path == parent or path.startswith((top + "/", parent + "::")) or (top == "." and not path.startswith("-"))


def _add(latest: dict[str, list[Check]], check: Check) -> None:
    """`check` becomes its name's latest result; an earlier failure of the name it does not cover stays beside it."""
    earlier = latest.pop(check.name, [])
    held = [c for c in earlier if not passed(c) and not clears(check, c)][-HELD_CAP:]
    latest[check.name] = [*held, check]


def _grouped(checks: Iterable[Check]) -> dict[str, list[Check]]:
    """A checkpoint's records by name, in order (a name holds its latest result and the failures it left uncleared)."""
    out: dict[str, list[Check]] = {}
    for check in checks:
        out.setdefault(check.name, []).append(check)
    return out


def carry(previous: Sequence[Check], pending: Sequence[Check], retired: Iterable[Retirement],
          seq: int, tree: str | None) -> tuple[Check, ...]:
    """The checks of checkpoint `seq`: the previous checkpoint's latest result per name, retired names dropped,
    then the checks run since (the latest of each name wins, beside the failures it does not cover), each marked
    with the checkpoint it entered."""
    gone = {r.name for r in retired if r.checkpoint is None}
    latest = _grouped(c for c in previous if c.name not in gone)
    for check in pending:
        _add(latest, replace(check, checkpoint=check.checkpoint or seq))
    kept = [c for group in list(latest.values())[-NAMES_CAP:] for c in group]
    return tuple(replace(c, fresh=tree is not None and c.content == tree) for c in kept)


def state_of(check: Check, tree: str | None) -> str:
    if tree is not None and check.content != tree:
        return "stale"
    return "passed" if passed(check) else "failed"


def latest_checks(ledger: Ledger) -> list[Check]:
    """The record's latest result per check name: the latest checkpoint's, then the checks run since."""
    point = ledger.checkpoint
    open_retired = {r.name for r in ledger.retired if r.checkpoint is None}
    latest = _grouped(c for c in (point.checks if point else ()) if c.name not in open_retired)
    for check in ledger.pending_checks:
        _add(latest, check)
    return [c for group in latest.values() for c in group]


def check_states(ledger: Ledger, point: Checkpoint | None = None, tree: str | None = None) -> list[dict[str, Any]]:
    """Every check's state in checkpoint `point` (default: the latest, with the checks run since it), judged
    against `tree` (default: the checkpoint's; `finish` passes the final working tree).

    Entries: name, state, argv, exit_code, failing, acceptance, checkpoint (seq of the latest result,
    null when never attempted or not yet checkpointed), pending, at, content."""
    point = point if point is not None else ledger.checkpoint
    latest = latest_checks(ledger) if point is ledger.checkpoint else list(point.checks if point else ())
    tree = tree if tree is not None else point.tree if point is not None else None
    accept = {a.name: a for a in ledger.contract.accept}
    entries = []
    for group in _grouped(latest).values():
        check, later = _standing(group)
        entry = _entry(check, state_of(check, tree) if tree is not None else ("passed" if passed(check) else "failed"),
                       check.name in accept, _seq(check, point))
        entries.append({**entry, **_uncleared(check, later)} if later else entry)
    seen = {c.name for c in latest}
    entries += [_never(a) for a in ledger.contract.accept if a.name not in seen]
    return entries


def _standing(group: list[Check]) -> tuple[Check, list[Check]]:
    """The result that stands for a name, and the later passing results that did not cover it: the latest result,
    unless it passed beside an earlier failure it does not cover (a narrower command): then that failure."""
    latest = group[-1]
    held = [c for c in group[:-1] if not passed(c)]
    if not held or not passed(latest):
        return latest, []
    return held[-1], [latest]


def _uncleared(check: Check, later: list[Check]) -> dict[str, Any]:
    """Why a later pass did not clear `check`: its command is narrower (`why`: one line, for people and agents)."""
    newer = later[-1]
    why = (f"check {textsafe.quote(check.name, 60)} still fails: the later pass of {_argv(newer.argv)} does not cover "
           f"the failing {_argv(check.argv)} (a narrower or other command); run that command, or a wider one, again")
    return {"why": why, "not_cleared_by": [{"id": c.id, "argv": list(c.argv), "exit_code": c.exit_code,
                                            "at": c.started_at} for c in later]}


def _argv(argv: Sequence[str]) -> str:
    return textsafe.quote_argv(argv, 300)


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
