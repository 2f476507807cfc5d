"""The parts of `resume`'s decision (SPEC §6, §8) that read the record's story: stop reasons, a finished run,
edits made after the checkpoint, where the work lives.

| stop reason | decision |
|---|---|
| `waiting_for_approval` | escalate until the approval is granted |
| `budget_exhausted` | escalate (the owner raises the budget with `amend`) |
| `user_paused` | escalate: resume when the owner says so |
| `blocked_external`, `failed_after_retries` | escalate |
| `context_limit`, `crashed` | resume (edits after the checkpoint decide rollback) |
| `completed` (a finished run) | finished |

A stop record is closed by the next checkpoint (work went on). A run whose last writer left
uncheckpointed edits without a stop record is reported as `crashed`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shiftgit import textsafe
from shiftgit.git import record
from shiftgit.ledger.model import Checkpoint, Ledger
from shiftgit.repo import FileEntry, Repo

ENDED = ("completed", "blocked", "abandoned")
OLD_NAMES = {"failed_after_retry_budget": "failed_after_retries", "cancelled": "user_paused",
             "context_exhausted": "context_limit"}
ESCALATING = {
    "waiting_for_approval": "waiting for an approval: escalate until it is granted "
                            "(`shiftgit approval grant KEY --by WHO`)",
    "budget_exhausted": "the budget ran out: escalate; the owner raises it with "
                        "`shiftgit amend --token-budget|--time-budget|--cost-budget N --reason R`",
    "user_paused": "paused by its owner: resume when the owner says so",
    "blocked_external": "blocked by something outside the run: escalate to a person",
    "failed_after_retries": "it failed after its retries: a person decides what comes next",
}
FILES_SHOWN = 10


def stop_reason(ledger: Ledger, edits: Sequence[FileEntry] | None) -> str | None:
    """The open stop record's reason; `crashed` when the last writer left edits behind without one."""
    stop = ledger.stop
    if stop is not None and stop.closed is None and ledger.status == "stopped":
        return OLD_NAMES.get(stop.reason, stop.reason)
    if ledger.status == "active" and edits:
        return "crashed"
    return None


def stop_reasons(ledger: Ledger, reason: str | None) -> tuple[list[str], list[str]]:
    """(escalations, notes) for the stop reason."""
    if reason is None:
        return [], []
    detail = ledger.stop.detail if ledger.stop is not None and reason != "crashed" else None
    said = f" ({textsafe.quote(detail)})" if detail else ""
    if reason == "waiting_for_approval" and _approval_granted(ledger):
        return [], [f"the run stopped waiting for an approval{said}; it was granted since: continue"]
    if reason in ESCALATING:
        return [f"the run stopped: {reason}{said}: {ESCALATING[reason]}"], []
    if reason == "crashed":
        return [], ["the last writer stopped without a stop record (crashed): its uncheckpointed edits are judged "
                    "below"]
    return [], [f"the run stopped: {reason}{said}: a fresh process continues from the record"]


def _approval_granted(ledger: Ledger) -> bool:
    states = [a.state for a in ledger.approvals]
    return bool(states) and "requested" not in states and "granted" in states


def finished(ledger: Ledger) -> list[str]:
    """A finished run stays finished: its receipt, and how to start the next run."""
    receipt = ledger.receipt
    lines = [f"run {ledger.run} is finished ({ledger.status}); nothing was made active"]
    if receipt is not None:
        lines.append(f"receipt ({receipt.at}): reviewer action: {textsafe.quote(receipt.reviewer_action or 'none')}; "
                     f"{len(receipt.checks)} check(s); known failures: "
                     + ("; ".join(textsafe.quote(k) for k in receipt.known_failures[:5]) or "none"))
        if receipt.extra.get("override"):
            lines.append(f"finished over unmet acceptance checks: {textsafe.quote(str(receipt.extra['override']))}")
    lines.append("start the next run with `shiftgit start NEW-RUN --goal TEXT --stop-when TEXT`")
    return lines


def judge_edits(run: str, point: Checkpoint, edits: Sequence[FileEntry],
                report: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """(rollback reasons, notes) for uncommitted edits after the checkpoint.

    Edits whose rerun makes failing checks pass and regresses none are kept (resume, checkpoint them);
    rollback is proposed only when they regress a check or nothing verifies them."""
    if not edits:
        return [], []
    more = " ..." if len(edits) > FILES_SHOWN else ""
    files = ", ".join(textsafe.quote(e.path) for e in edits[:FILES_SHOWN]) + more
    verdicts = {c["name"]: c["verdict"] for c in (report or {}).get("checks", ())}
    fixed = [n for n, v in verdicts.items() if v == "newly_passing"]
    regressed = [n for n, v in verdicts.items() if v in ("regressed", "flaky")]
    if fixed and not regressed:
        return [], [f"uncommitted edits after checkpoint #{point.seq} ({files}) make {', '.join(fixed)} pass and "
                    f"regress no check: keep them; record them with `shiftgit checkpoint --step TEXT`"]
    why = (f"they regress {', '.join(regressed)}" if regressed
           else "no rerun check verifies them" if verdicts else "nothing verifies them (no check was rerun)")
    return [f"uncommitted edits were made after checkpoint #{point.seq} and {why}: `shiftgit rollback {run}` would "
            f"replace {files} with checkpoint #{point.seq}'s content, keeping what it replaces under "
            f"refs/shift/rescue/{run}/<time> first; get them back with `git restore --source "
            f"refs/shift/rescue/{run}/<time> -- PATHS` (rollback prints the exact ref)"], []


def location_reasons(ledger: Ledger, here: Mapping[str, str | None]) -> tuple[list[str], list[str]]:
    """(escalations, notes): resuming from another repository escalates; another worktree or branch is said."""
    contract = ledger.contract
    escalate, notes = [], []
    if contract.repository and here.get("repository") and contract.repository != here["repository"]:
        escalate.append(f"this is another repository: the run was started in {textsafe.quote(contract.repository)}, "
                        f"this one is {textsafe.quote(str(here['repository']))}")
    if contract.worktree and here.get("worktree") and contract.worktree != here["worktree"]:
        notes.append(f"resumed from another worktree or machine: the run was started in "
                     f"{textsafe.quote(contract.worktree)}, this is {textsafe.quote(str(here['worktree']))}")
    if contract.branch and here.get("branch") and contract.branch != here["branch"]:
        notes.append(f"on another branch: the run was started on {textsafe.quote(contract.branch)}, "
                     f"this is {textsafe.quote(str(here['branch']))}")
    return escalate, notes


def head_reasons(repo: Repo, state: record.HeadState, point: Checkpoint) -> list[str]:
    """Why HEAD is not where the checkpoint left it (none when it is): behind it, rewritten, or moved on."""
    if state.matches:
        return []
    base, head = state.base, state.head
    fork = repo.git("merge-base", base, head, check=False).strip() if base and head else None
    if base and fork is not None and fork != base:
        if fork and fork == head:  # the base builds on HEAD: its commits came (with a snapshot) on no branch
            from shiftgit.recovery.elsewhere import bring

            untracked = (repo.root / ".shift/config.json").exists() and not repo.git(
                "ls-files", "--", ".shift/config.json", check=False).strip()
            aside = (" (first move aside the untracked .shift/ that `shiftgit init` wrote here: `mv .shift "
                     ".shift.mine`; git refuses to overwrite it)") if untracked else ""
            return [f"HEAD is behind: checkpoint #{point.seq} was made on {base[:12]}, which builds on HEAD; its "
                    "commits are on no branch here (they came with the published record): "
                    f"{bring(repo, base, point.branch)}{aside}"]
        if not fork and not record.has_object(repo, base, "commit"):
            return [f"HEAD moved: checkpoint #{point.seq}'s base {base[:12]} is not in this clone (its commits "
                    "were never pushed or fetched here): fetch them, or adopt the checkpoint's files"]
        return [f"HEAD moved: checkpoint #{point.seq}'s base {base[:12]} is no longer in HEAD's history (a "
                "rebase, amend or reset rewrote it); the run's changes may be in HEAD as new commits: compare them"]
    described = record.describe_commits(repo, state.commits, limit=3)
    example = "; ".join(f"{c['commit'][:12]} by {textsafe.quote(c['author'])}: {textsafe.quote(c['subject'])}"
                        for c in described)
    return [f"HEAD moved: {str(state.head)[:12]} is neither checkpoint #{point.seq}'s base "
            f"{str(state.base)[:12]} nor a commit carrying it ({len(state.commits)} commit(s) since"
            + (f", e.g. {example}" if example else "") + "); someone committed without a handoff"]
