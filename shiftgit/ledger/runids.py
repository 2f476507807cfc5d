"""Run ids: what a run may be called (its ledger directory and its refs, `refs/shift/*/<run>`)."""

from __future__ import annotations

from shiftgit import textsafe
from shiftgit.errors import UsageError
from shiftgit.ledger.canonical import is_run_id


class _RunIds:
    """`re.compile(RUN_ID_PATTERN)` as its callers use it (`RUN_ID.match(name)`), without re (canonical.is_run_id):
    an agent hook's process does not import re."""

    @staticmethod
    def match(text: str) -> bool:
        return is_run_id(text)


RUN_ID = _RunIds()
# Names Windows reserves for devices, with or without an extension: a run dir named so cannot be checked out there.
_RESERVED = frozenset(["con", "prn", "aux", "nul", *(f"{dev}{n}" for dev in ("com", "lpt") for n in range(10))])


def run_id_problem(run: str) -> str | None:
    """Why `run` cannot be a run id (its ledger dir and its refs, `refs/shift/*/<run>`), or None."""
    if not RUN_ID.match(run):
        return "use 1-64 of a-z 0-9 . _ - , starting with a letter or digit"
    if ".." in run or run.endswith((".", ".lock")):
        return "git cannot name a ref with `..` in it or ending in `.` or `.lock` (git check-ref-format)"
    if run.split(".", 1)[0] in _RESERVED:
        return f"{run.split('.', 1)[0]!r} is a device name Windows reserves, so that checkout could not hold it"
    return None


def validate_run_id(run: str) -> str:
    problem = run_id_problem(run)
    if problem:
        raise UsageError(f"bad run id {textsafe.quote(run, 80)}: {problem} (e.g. fix-login)")
    return run
