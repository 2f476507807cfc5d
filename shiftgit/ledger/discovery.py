"""Run discovery: which run a command, hook or tool acts on when none is named (SPEC §8, issue 10).

One rule for every entry point (agent hooks, MCP, resume, verify, status, log and every command that
takes `--run`): the named run; else `SHIFT_RUN`; else this worktree's active run; else the one run
whose ledger says `active`; else, among several active runs, the one last checkpointed on the
current branch, named with how to pick another. When nothing fits, the error lists the runs.

Ledgers are read as plain JSON here (no schema validation): discovery only picks a name; the
command that reads the run validates it and reports a broken ledger.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from shiftgit import rawjson
from shiftgit.errors import UsageError

TYPE_CHECKING = False  # typing costs ~4 ms to import (`status`, `show`): annotations only
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, NamedTuple, Protocol

    from shiftgit.repo import Repo

    class Store(Protocol):
        """What discovery reads of ledger.store.Store (which calls discovery: no import back)."""

        repo: Repo

        def ledger_path(self, run: str) -> Path: ...  # validates the run id

        def exists(self, run: str) -> bool: ...

        def read(self, run: str) -> Any: ...

        def run_ids(self) -> list[str]: ...

        def active_run(self, environ: Mapping[str, str] | None = None) -> str | None: ...
else:
    from shiftgit.tuples import NamedTuple

HOW_TO_PICK = "pick another with --run ID, SHIFT_RUN=ID or `shiftgit resume ID`"
LISTED = 20


class Pick(NamedTuple):  # not a dataclass: `status` and `show` would import dataclasses for it alone
    """The run chosen, by which rule, and what to tell the user when it was picked among several."""

    run: str
    rule: str               # named | env | worktree | only-active | branch
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "rule": self.rule, "note": self.note}


class RunInfo(NamedTuple):
    """What discovery needs from one ledger: its status and where it was checkpointed last."""

    run: str
    status: str | None      # None: the ledger cannot be read
    branch: str | None
    at: str | None

    def describe(self) -> str:
        if self.status is None:
            return f"{self.run} (unreadable ledger: `shiftgit validate {self.run}`)"
        where = f", last checkpoint on {self.branch or 'a detached HEAD'}" if self.at else ", no checkpoint"
        return f"{self.run} ({self.status}{where})"


def discover(store: Store, named: str | None = None, environ: Mapping[str, str] | None = None) -> Pick:
    """The run to act on, by the one rule; UsageError (exit 2) listing the runs when nothing fits."""
    env = os.environ if environ is None else environ
    if named:
        if not store.exists(named):  # (a bad id is refused by ledger_path)
            store.read(named)  # raises the unknown-run error, naming the runs here
        return Pick(named, "named")
    if env.get("SHIFT_RUN"):
        store.ledger_path(env["SHIFT_RUN"])  # refuses a bad id
        return Pick(env["SHIFT_RUN"], "env")
    here = store.active_run({})
    if here is not None:
        return Pick(here, "worktree")
    return _by_ledgers(store, [read_info(store, run) for run in store.run_ids()])


def try_discover(store: Store, environ: Mapping[str, str] | None = None) -> Pick | None:
    """The run the rule picks, or None when nothing fits (for reports that show every run anyway)."""
    try:
        return discover(store, None, environ)
    except UsageError:
        return None


def _by_ledgers(store: Store, infos: list[RunInfo]) -> Pick:
    active = [i for i in infos if i.status == "active"]
    if len(active) == 1:
        others = [i.describe() for i in infos if i is not active[0]]
        note = (f"picked run {active[0].run!r}, the only active run here (also here: {_listing(others)}); "
                f"{HOW_TO_PICK}") if others else None
        return Pick(active[0].run, "only-active", note)
    branch = store.repo.branch()
    on_branch = sorted((i for i in active if i.at and branch and i.branch == branch), key=lambda i: str(i.at))
    if on_branch:
        chosen = on_branch[-1]
        note = (f"picked run {chosen.run!r}: of {len(active)} active runs it was checkpointed last on branch "
                f"{branch} (at {chosen.at}); {HOW_TO_PICK}")
        return Pick(chosen.run, "branch", note)
    raise UsageError(_nothing_fits(infos, len(active), branch))


def _nothing_fits(infos: list[RunInfo], active: int, branch: str | None) -> str:
    if not infos:
        return ("no run here yet, and this worktree has no active run; start one with "
                "`shiftgit start ID --goal ... --stop-when ...` (in a fresh clone: `shiftgit sync` first)")
    why = ("no run is active" if active == 0 else
           f"{active} runs are active and none was checkpointed on branch {branch}" if branch else
           f"{active} runs are active and HEAD is detached")
    lines = [f"no run to pick: this worktree has no active run, SHIFT_RUN is not set, and {why}; name one "
             f"with --run ID, SHIFT_RUN=ID or `shiftgit resume ID`. Runs here:"]
    lines += [f"  {info.describe()}" for info in infos[:LISTED]]
    if len(infos) > LISTED:
        lines.append(f"  (+{len(infos) - LISTED} more: `shiftgit status`)")
    return "\n".join(lines)


def _listing(items: list[str]) -> str:
    shown = ", ".join(items[:5])
    return shown + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def read_info(store: Store, run: str) -> RunInfo:
    try:
        document = rawjson.loads(store.ledger_path(run).read_bytes())
    except (OSError, ValueError):
        return RunInfo(run, None, None, None)
    if not isinstance(document, dict) or not isinstance(document.get("status"), str):
        return RunInfo(run, None, None, None)
    point = document.get("checkpoint")
    point = point if isinstance(point, dict) else {}
    branch, at = point.get("branch"), point.get("at")
    return RunInfo(run, document["status"], branch if isinstance(branch, str) else None,
                   at if isinstance(at, str) else None)
