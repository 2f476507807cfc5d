"""`check`: run a command as evidence and keep its real result on the run."""


from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from shiftgit.errors import UsageError
from shiftgit.evidence import runner as evidence
from shiftgit.evidence.outcomes import parse_outcome
from shiftgit.git.scope import in_scope as in_scope  # re-exported: runs.in_scope
from shiftgit.ledger import trustdb as trust
from shiftgit.ledger.argvsecrets import argv_secret
from shiftgit.ledger.model import (
    Check,
    Ledger,
)
from shiftgit.ledger.record import replace
from shiftgit.ledger.secrets import redact
from shiftgit.ledger.store import Store
from shiftgit.runs.contract import new_id, now_iso

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from shiftgit.tuples import NamedTuple  # typing's class without importing typing or dataclasses

PENDING_CAP = 50

# -- check ---------------------------------------------------------------------------------

class CheckInput(NamedTuple):
    argv: tuple[str, ...]
    name: str | None = None
    cwd: str = "."
    timeout: float | None = None
    covers: tuple[str, ...] = ()
    junit: str | None = None
    env: tuple[str, ...] = ()
    keep_output: bool = False  # keep the whole redacted output on refs/shift/outputs/<run> (runs/outputs.py)


def check(store: Store, run: str, spec: CheckInput, *, echo: BinaryIO | None = None) -> Check:
    """Run a command and record its real result on the run (evidence)."""
    store.read(run)  # a broken ledger is reported before anything runs
    if not spec.argv:
        raise UsageError("no command given; put it after `--`, e.g. `shiftgit check -- pytest -q`")
    where = argv_secret(spec.argv)
    if where is not None:
        raise UsageError(f"the command line holds what looks like a secret ({where}); pass it through an environment "
                         "variable and name it with --env NAME, so it never lands in git; nothing was run")
    workdir = (store.repo.root / spec.cwd).resolve()
    if not workdir.is_dir() or not workdir.is_relative_to(store.repo.root):
        raise UsageError(f"--cwd {spec.cwd!r} is not a directory inside the repository")
    from shiftgit.runs.lease import guard

    guard(store, run)  # a fenced writer stops here, before the command runs (exit 4)
    content = store.repo.worktree_build().result()  # begun before this code loaded (__main__)
    check_id = new_id("k")
    started = now_iso()  # when the command started, not when it finished
    result, kept = _run(store, run, check_id, spec, workdir, echo)
    junit_xml = _read_junit(workdir, spec.junit)
    outcome = parse_outcome(spec.argv, result.output, result.exit_code, junit_xml)
    record = Check(
        id=check_id, name=spec.name or _default_name(spec.argv), argv=spec.argv,
        cwd=str(workdir.relative_to(store.repo.root)) or ".", timeout=spec.timeout, env=spec.env,
        started_at=started, duration_s=result.duration_s, exit_code=result.exit_code,
        timed_out=result.timed_out, outcome=outcome.to_dict(), failing=outcome.failing,
        output_tail=redact(result.tail), output_sha256=result.sha256, output_bytes=result.total_bytes,
        content=content, covers=spec.covers, junit=spec.junit, output_blob=kept,
    )

    def add(ledger: Ledger) -> Ledger:
        pending = (*ledger.pending_checks, record)[-PENDING_CAP:]
        return replace(ledger, pending_checks=pending, updated_at=now_iso())

    store.update(run, add)
    trust.remember_quietly(store.repo, trust.command_of(record), record.started_at)  # ran here: trusted here
    return record


def uncleared(store: Store, run: str, record: Check) -> str | None:
    """Why `record` (just run) does not clear an earlier failure of its name: a narrower command (checkstates.py)."""
    from shiftgit.ledger.checkstates import check_states

    if record.exit_code != 0 or record.failing:
        return None
    return next((str(e["why"]) for e in check_states(store.read(run)) if e["name"] == record.name and e.get("why")),
                None)


def _run(store: Store, run: str, check_id: str, spec: CheckInput, workdir: Path,
         echo: BinaryIO | None) -> tuple[evidence.Result, str | None]:
    """Run the command; with keep_output, its whole output is spooled, redacted and kept (the blob id)."""
    if not spec.keep_output:
        return evidence.run(spec.argv, cwd=str(workdir), timeout=spec.timeout, echo=echo), None
    from shiftgit.runs import outputs

    with outputs.spool(store, check_id) as (handle, path):
        result = evidence.run(spec.argv, cwd=str(workdir), timeout=spec.timeout, echo=echo, keep=handle)
        handle.flush()
        return result, outputs.keep(store, run, check_id, path)


def _default_name(argv: Sequence[str]) -> str:
    words = [os.path.basename(argv[0])] + [a for a in argv[1:] if not a.startswith("-")][:2]
    return " ".join(words)[:60]


def _read_junit(workdir: Path, junit: str | None) -> str | None:
    if not junit:
        return None
    try:
        return (workdir / junit).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None




def overrun(store: Store, run: str) -> list[str]:
    """`check` still runs over budget (it only reads) but says so: each spent budget with its figures."""
    from shiftgit.ledger.budgets import exhausted

    spent = exhausted(store.read(run))
    if not spent:
        return []
    return [f"the run's budget is spent ({'; '.join(spent)}): new effects and services are refused until "
            "`shiftgit amend --token-budget|--time-budget|--cost-budget N --reason R` raises it"]
