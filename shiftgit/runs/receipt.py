"""`finish`: the receipt, built from the record (never from what the caller types), and the run's end.

Every check's latest state and outcome on the final tree, known failures filled in from failing
and stale checks, the contract's expected artifacts each marked produced or missing with its
evidence, assumptions, the reviewer action. `--status completed` is refused while an acceptance
check has not passed on the final tree, unless overridden with a reason the receipt keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shiftgit.errors import CheckFailed, UsageError
from shiftgit.ledger import checkstates
from shiftgit.ledger.model import FINISH_STATUSES, Ledger, Receipt, Stop
from shiftgit.ledger.record import replace
from shiftgit.ledger.store import Store
from shiftgit.runs import acceptance
from shiftgit.runs.contract import now_iso

RECEIPT_KEYS = ("name", "state", "argv", "exit_code", "failing", "acceptance", "checkpoint", "timed_out")


def finish(store: Store, run: str, status: str, reviewer_action: str | None, assumptions: Sequence[str],
           known_failures: Sequence[str], override: str | None = None) -> Receipt:
    """Write the receipt and end the run; `completed` only over passed acceptance checks (or an override)."""
    if status not in FINISH_STATUSES:
        raise UsageError(f"unknown finish status {status!r}; use one of: {', '.join(FINISH_STATUSES)}")
    if override is not None and not override.strip():
        raise UsageError("--override needs a reason, e.g. --override 'the owner accepts the flaky e2e suite'")
    tree = store.repo.worktree_tree()
    made: list[Receipt] = []

    def change(ledger: Ledger) -> Ledger:
        if ledger.status in FINISH_STATUSES:
            raise UsageError(f"run {run} already finished as {ledger.status}; its receipt: `shiftgit show {run}`; "
                             "start the next run with `shiftgit start RUN --goal ... --stop-when ...`")
        missing = acceptance.unmet(ledger, tree) if status == "completed" else []
        if missing and override is None:
            raise CheckFailed(acceptance.refusal(run, missing, tree))
        at = now_iso()
        receipt = build(store, ledger, status, at, tree, reviewer_action, assumptions, known_failures, override)
        made.append(receipt)
        stop_record = ledger.stop if status != "completed" else Stop(reason="completed", at=at)
        return replace(ledger, receipt=receipt, status=status, stop=stop_record, updated_at=at)

    from shiftgit.runs.contract import fenced

    fenced(store, run)  # a holder of an older owner epoch finishes nothing
    store.update(run, change)
    if store.active_run({}) == run:
        store.set_active(None)
    from shiftgit.runs.archive import archive_run

    archive_run(store, run)  # the final ledger and receipt leave the tree for refs/shift/archive
    return made[0]


def build(store: Store, ledger: Ledger, status: str, at: str, tree: str, reviewer_action: str | None,
          assumptions: Sequence[str], known_failures: Sequence[str], override: str | None) -> Receipt:
    entries = checkstates.check_states(ledger, tree=tree)
    found = [text for text in map(_known_failure, entries) if text]
    extra: dict[str, Any] = {"commits": list(_commits(store, ledger)), "tree": tree}
    if override is not None:
        extra["override"] = override
    return Receipt(
        status=status, at=at, artifacts=tuple(artifacts(store, ledger, tree)),
        checks=tuple({k: e[k] for k in RECEIPT_KEYS} for e in entries),
        known_failures=(*known_failures, *found), assumptions=tuple(assumptions),
        reviewer_action=reviewer_action, extra=extra,
    )


def _known_failure(entry: dict[str, Any]) -> str | None:
    """A failing check, a stale one (its result is not about the final tree) or an acceptance check never run."""
    if entry["state"] == "failed":
        return checkstates.describe(entry)
    if entry["state"] == "stale":
        return checkstates.describe(entry) + " — its latest result ran on other content than the final tree"
    if entry["state"] == "never_attempted":
        return f"{entry['name']}: acceptance check never attempted"
    return None


def artifacts(store: Store, ledger: Ledger, tree: str) -> list[dict[str, Any]]:
    """The contract's expected artifacts, each produced (with its evidence) or missing."""
    out = []
    for name in ledger.contract.artifacts:
        evidence = _path_evidence(store, tree, name) or _effect_evidence(ledger, name)
        out.append({"name": name, "state": "produced" if evidence else "missing", "evidence": evidence})
    return out


def _path_evidence(store: Store, tree: str, name: str) -> str | None:
    """A path in the final tree: its blob (or tree) id there."""
    if not name or name.startswith("/") or ".." in name.split("/"):
        return None
    line = store.repo.git("ls-tree", tree, "--", name.rstrip("/"), check=False).strip()
    if not line:
        return None
    kind, oid = line.split("\t", 1)[0].split()[1:3]
    return f"{name} in the final tree ({kind} {oid[:12]})"


def _effect_evidence(ledger: Ledger, name: str) -> str | None:
    """An effect of that key (or external id) that completed: its external id, evidence or result."""
    for effect in ledger.effects:
        if name in (effect.key, effect.extra.get("external_id")) and effect.state == "completed":
            detail = effect.extra.get("external_id") or effect.evidence or effect.result or "completed"
            return f"effect {effect.key} ({effect.kind}) completed: {detail}"
    return None


def _commits(store: Store, ledger: Ledger) -> tuple[str, ...]:
    """Commits made since the run started (touching its ledger) on this branch, oldest first."""
    path = store.rel(store.ledger_path(ledger.run))
    out = store.repo.git("log", "--format=%H", "--reverse", "--", path, check=False)
    return tuple(out.split())
