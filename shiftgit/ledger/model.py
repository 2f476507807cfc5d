"""The data model: frozen records, from_dict/to_dict, canonical bytes. No I/O.

Every record keeps the keys it does not know in `extra`, so a document written by a newer
shiftgit (same schema version) round-trips without losing data.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from typing import Any

from shiftgit.ledger.canonical import canonical_bytes as canonical_bytes  # defined there: no model needed
from shiftgit.ledger.record import Record as Record  # the machinery: ledger/record.py
from shiftgit.ledger.record import dataclass, field  # dataclasses' own for mypy, cheaper ones at run time

_KEY = attrgetter("key")

SCHEMA_VERSION = 2
RUN_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
STOP_REASONS = (  # SPEC §8's closed set (`crashed` is what resume reports when a writer died without one)
    "completed", "waiting_for_approval", "blocked_external", "budget_exhausted", "failed_after_retries",
    "user_paused", "context_limit", "crashed",
)
OLD_STOP_REASONS = ("failed_after_retry_budget", "cancelled", "context_exhausted")  # schema 1 names, still read
FINISH_STATUSES = ("completed", "blocked", "abandoned")
RUN_STATUSES = ("active", "stopped", *FINISH_STATUSES)
HISTORY_CAP = 100
# An effect's states in order: planned < attempted < the outcomes. Among outcomes: unknown is the least informed
# (reconcile replaces it), a completion supersedes a failure (a failed key may run again), compensation undoes a
# completion. The merge driver and runs/foreign.py (records from other clones) both rank by it.
EFFECT_RANK = {"planned": 0, "attempted": 1, "unknown": 2, "failed": 3, "completed": 4, "compensated": 5}
DONE_CAP = 50
DECISIONS_CAP = 50

@dataclass(frozen=True, kw_only=True)
class Budgets(Record):
    minutes: float | None = None
    tokens: int | None = None
    cost: float | None = None


@dataclass(frozen=True, kw_only=True)
class Acceptance(Record):  # a named command (argv, no shell) that must pass before `finish --status completed`
    name: str
    argv: tuple[str, ...] = ()  # empty: a schema 1 free-text criterion, kept in `text`, that nothing can run
    text: str | None = None


@dataclass(frozen=True, kw_only=True)
class Contract(Record):
    goal: str
    stop_when: str
    owner: str | None = None
    budgets: Budgets = field(default_factory=Budgets)
    allow: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    accept: tuple[Acceptance, ...] = ()
    scope: tuple[str, ...] = ()
    # recovery plan (seed: inspect_first, escalate_when, rollback): commands run by `resume` when trusted
    inspect: tuple[str, ...] = ()
    escalate_when: tuple[str, ...] = ()
    rollback_plan: str | None = None
    # where the work lives, recorded by `start`
    repository: str | None = None
    branch: str | None = None
    worktree: str | None = None


@dataclass(frozen=True, kw_only=True)
class Constraint(Record):
    id: str
    text: str
    status: str = "active"
    added_at: str
    lifted_at: str | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class Amendment(Record):
    id: str
    at: str
    field: str
    old: Any = None
    new: Any = None
    reason: str


@dataclass(frozen=True, kw_only=True)
class Check(Record):
    id: str
    name: str
    argv: tuple[str, ...]
    cwd: str = "."
    timeout: float | None = None
    env: tuple[str, ...] = ()
    shell: bool = False
    started_at: str
    duration_s: float | None = None
    exit_code: int | None = None
    timed_out: bool = False
    outcome: Mapping[str, Any] = field(default_factory=dict)
    failing: tuple[str, ...] = ()
    output_tail: str = ""
    output_sha256: str = ""
    output_bytes: int = 0
    content: str | None = None
    covers: tuple[str, ...] = ()
    junit: str | None = None
    fresh: bool | None = None
    output_blob: str | None = None  # `check --keep-output`: the redacted output, kept on refs/shift/outputs/<run>
    checkpoint: int | None = None  # the seq of the checkpoint this result first entered (null while pending)


@dataclass(frozen=True, kw_only=True)
class FileChange(Record):
    path: str
    id: str | None = None
    status: str = "M"


@dataclass(frozen=True, kw_only=True)
class Item(Record):
    text: str
    seq: int = 0


@dataclass(frozen=True, kw_only=True)
class Decision(Record):
    text: str
    rationale: str | None = None
    seq: int = 0


@dataclass(frozen=True, kw_only=True)
class NextAction(Record):
    action: str | None = None
    done_when: str | None = None


@dataclass(frozen=True, kw_only=True)
class Spend(Record):
    tokens: int = 0
    cost: float = 0.0
    minutes: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Checkpoint(Record):
    id: str
    seq: int
    at: str
    step: str | None = None
    phase: str | None = None
    milestone: bool = False
    base: str | None = None
    branch: str | None = None
    tree: str | None = None
    snapshot: str | None = None
    files: tuple[FileChange, ...] = ()
    checks: tuple[Check, ...] = ()
    next: NextAction = field(default_factory=NextAction)
    done: tuple[Item, ...] = ()
    doing: tuple[Item, ...] = ()
    blocked: tuple[Item, ...] = ()
    decisions: tuple[Decision, ...] = ()
    questions: tuple[Item, ...] = ()
    note: str | None = None
    spend: Spend = field(default_factory=Spend)
    turn: int | None = None
    # recorded by an agent hook (pre-compact, session-end), not by a command: it does not count as the
    # agent's own record for the end-of-turn hold; `unrecorded`: the paths changed since the last
    # checkpoint a command recorded
    auto: str | None = None
    unrecorded: tuple[str, ...] = ()
    session: str | None = None


@dataclass(frozen=True, kw_only=True)
class HistoryEntry(Record):
    id: str
    seq: int
    at: str
    step: str | None = None
    base: str | None = None
    turn: int | None = None


@dataclass(frozen=True, kw_only=True)
class Effect(Record):
    key: str
    kind: str
    reversibility: str = "irreversible"
    state: str = "planned"
    argv: tuple[str, ...] = ()
    probe: str | None = None
    compensate: str | None = None
    created_at: str
    updated_at: str | None = None
    exit_code: int | None = None
    result: str | None = None
    evidence: str | None = None
    name: str | None = None
    pid: int | None = None
    port: int | None = None
    attempts: int = 0
    history: tuple[Mapping[str, Any], ...] = ()
    # added by effects: who runs it (procs.identity), the run's result, a service's process and log
    runner: Mapping[str, Any] | None = None
    cwd: str | None = None
    timeout: float | None = None
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = None
    output_tail: str | None = None
    output_sha256: str | None = None
    process: Mapping[str, Any] | None = None
    log: str | None = None


@dataclass(frozen=True, kw_only=True)
class Approval(Record):
    key: str
    state: str = "requested"
    reason: str | None = None
    requested_at: str
    decided_at: str | None = None
    by: str | None = None
    expires_at: str | None = None
    decision_reason: str | None = None
    history: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, kw_only=True)
class Stop(Record):
    reason: str
    detail: str | None = None
    at: str
    closed: int | None = None  # the seq of the checkpoint that closed it (work went on)


@dataclass(frozen=True, kw_only=True)
class Retirement(Record):  # `check --retire NAME --reason R`: the check leaves at the next checkpoint (its seq)
    name: str
    reason: str
    at: str
    checkpoint: int | None = None


@dataclass(frozen=True, kw_only=True)
class Receipt(Record):
    status: str
    at: str
    artifacts: tuple[Any, ...] = ()  # schema 1: strings; schema 2: {name, state, evidence}
    checks: tuple[Mapping[str, Any], ...] = ()
    known_failures: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    reviewer_action: str | None = None


@dataclass(frozen=True, kw_only=True)
class Review(Record):
    """Review feedback that follows the job (`shiftgit review add|resolve`)."""

    id: str
    text: str
    status: str = "open"  # open | resolved
    by: str | None = None
    file: str | None = None
    line: int | None = None
    created_at: str
    resolved_at: str | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class Reopening(Record):
    at: str
    reason: str
    by: str | None = None
    from_status: str | None = None


@dataclass(frozen=True, kw_only=True)
class Confirmation(Record):
    """A milestone awaiting the owner's agreement (`checkpoint --milestone --confirm`, `shiftgit confirm`)."""

    id: str
    seq: int
    step: str | None = None
    state: str = "awaiting"  # awaiting | confirmed | corrected
    requested_at: str
    by: str | None = None
    at: str | None = None
    correction: str | None = None


@dataclass(frozen=True, kw_only=True)
class Ledger(Record):
    schema_version: int = SCHEMA_VERSION
    run: str
    created_at: str
    updated_at: str
    status: str = "active"
    contract: Contract
    constraints: tuple[Constraint, ...] = ()
    amendments: tuple[Amendment, ...] = ()
    pending_checks: tuple[Check, ...] = ()
    checkpoint: Checkpoint | None = None
    history: tuple[HistoryEntry, ...] = ()
    effects: tuple[Effect, ...] = ()
    approvals: tuple[Approval, ...] = ()
    spend: Spend = field(default_factory=Spend)
    stop: Stop | None = None
    receipt: Receipt | None = None
    retired: tuple[Retirement, ...] = ()
    resolved: tuple[Mapping[str, Any], ...] = ()  # `checkpoint --resolve`: {kind, text, reason, at, checkpoint}
    lease: Mapping[str, Any] | None = None  # the owner lease and its epochs (runs/lease.py)
    # issue 14 (optional: a ledger without them reads as before)
    reviews: tuple[Review, ...] = ()
    reopened: tuple[Reopening, ...] = ()
    confirmations: tuple[Confirmation, ...] = ()

    def active_constraints(self) -> tuple[Constraint, ...]:
        return tuple(c for c in self.constraints if c.status == "active")

    def open_reviews(self) -> tuple[Review, ...]:
        return tuple(r for r in self.reviews if r.status == "open")

    def awaiting_confirmation(self) -> tuple[Confirmation, ...]:
        return tuple(c for c in self.confirmations if c.state == "awaiting")

    def effect(self, key: str) -> Effect | None:
        keys = list(map(_KEY, self.effects))  # C's loop: `effect run` asks a dozen times, of 1,000 effects
        return self.effects[keys.index(key)] if key in keys else None

    def approval(self, key: str) -> Approval | None:
        return next((a for a in self.approvals if a.key == key), None)


def dumps(ledger: Ledger) -> bytes:
    return canonical_bytes(ledger.to_dict())
