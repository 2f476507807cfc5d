"""Run ids: what a run may be called (its ledger directory and its refs, `refs/shift/*/<run>`)."""

from __future__ import annotations

from shiftgit import textsafe
from shiftgit.errors import UsageError
from shiftgit.ledger.canonical import is_ref_name, is_run_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from shiftgit.repo import Repo


class _RunIds:
    """`re.compile(RUN_ID_PATTERN)` as its callers use it (`RUN_ID.match(name)`), without re (canonical.is_run_id):
    an agent hook's process does not import re. It also refuses what git refuses in a ref (canonical.is_ref_name):
    a run listed under such a name would break every command that lists runs."""

    @staticmethod
    def match(text: str) -> bool:
        return is_ref_name(text)


RUN_ID = _RunIds()
# Names Windows reserves for devices, with or without an extension: a run dir named so cannot be checked out there.
_RESERVED = frozenset(["con", "prn", "aux", "nul", *(f"{dev}{n}" for dev in ("com", "lpt") for n in range(10))])


def run_id_problem(run: str) -> str | None:
    """Why `run` cannot be a run id (its ledger dir and its refs, `refs/shift/*/<run>`), or None."""
    if not is_run_id(run):
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


def bad_run_dirs(top: str) -> list[tuple[str, str]]:
    """(name, problem) for each directory under TOP (`.shift/runs`) holding a `ledger.json` under a name no run may
    have: every command that lists runs skips it, and says so."""
    import os

    try:
        with os.scandir(top) as entries:
            names = sorted(e.name for e in entries if not RUN_ID.match(e.name) and e.is_dir())
    except OSError:
        return []
    return [(name, run_id_problem(name) or "not a run id") for name in names
            if os.path.isfile(os.path.join(top, name, "ledger.json"))]


def skipped_lines(top: str, rel_top: str) -> list[str]:
    """One line for each run directory under TOP (shown as REL_TOP) named as no run may be, with the fix."""
    return [f"skipped {textsafe.quote(f'{rel_top}/{name}', 120)}: not a run name ({problem}); rename the directory "
            "to a run id (e.g. `git mv` it to fix-login), then run the command again"
            for name, problem in bad_run_dirs(top)]


def unknown_run(repo: Repo, run: str, run_ids: Callable[[], list[str]]) -> str:
    """The error for a run with no ledger here. Another clone may have published it (its commits never reached
    this branch; `sync` fetched the record): then resume it, never start a second run under its name."""
    refs = repo.git("for-each-ref", "--count=1", "--format=%(refname)", f"refs/shift/ledgers/{run}",
                    f"refs/shift-remote/*/shift/ledgers/{run}", check=False).strip()
    if refs:
        return (f"run {run!r} has no ledger in this work tree, but {refs} holds a published record of it: "
                f"`shiftgit resume {run}` says where the run is and what to do")
    known = ", ".join(run_ids()) or "none yet"
    return f"unknown run {run!r} (runs here: {known}); start one with `shiftgit start {run} --goal ... --stop-when ...`"
