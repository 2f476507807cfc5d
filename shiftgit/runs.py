"""A run's life: start, evidence, checkpoints, constraints, amendments, stop, finish."""

from __future__ import annotations

import datetime as dt
import fnmatch
import os
import secrets as _random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from shiftgit import evidence, trust
from shiftgit.errors import GitError, UsageError
from shiftgit.ledger import (
    DECISIONS_CAP,
    DONE_CAP,
    FINISH_STATUSES,
    HISTORY_CAP,
    STOP_REASONS,
    Amendment,
    Budgets,
    Check,
    Checkpoint,
    Constraint,
    Contract,
    Decision,
    FileChange,
    HistoryEntry,
    Item,
    Ledger,
    NextAction,
    Receipt,
    Spend,
    Stop,
)
from shiftgit.outcomes import parse_outcome
from shiftgit.scope import in_scope as in_scope  # re-exported: runs.in_scope
from shiftgit.secrets import find_secrets, redact
from shiftgit.store import Store

PENDING_CAP = 50
SNAPSHOT_RETRIES = 20


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    """Unique across machines: random, not a counter."""
    return f"{prefix}-{_random.token_hex(6)}"


# -- start ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ContractInput:
    goal: str
    stop_when: str
    owner: str | None = None
    minutes: float | None = None
    tokens: int | None = None
    cost: float | None = None
    allow: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    accept: tuple[str, ...] = ()
    scope: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()


def start(store: Store, run: str, spec: ContractInput) -> tuple[Ledger, list[str]]:
    """Write a new run's contract and make it active here. Returns the ledger and warnings."""
    if not spec.goal.strip() or not spec.stop_when.strip():
        raise UsageError("a run needs a goal and a stop condition: --goal TEXT --stop-when TEXT")
    both = set(spec.allow) & set(spec.forbid)
    if both:
        raise UsageError(f"effect kind(s) both allowed and forbidden: {', '.join(sorted(both))}")
    at = now_iso()
    contract = Contract(goal=spec.goal, stop_when=spec.stop_when, owner=spec.owner,
                        budgets=Budgets(minutes=spec.minutes, tokens=spec.tokens, cost=spec.cost),
                        allow=spec.allow, forbid=spec.forbid, artifacts=spec.artifacts, accept=spec.accept,
                        scope=spec.scope)
    constraints = tuple(Constraint(id=new_id("c"), text=t, added_at=at) for t in spec.constraints if t.strip())
    ledger = Ledger(run=run, created_at=at, updated_at=at, contract=contract, constraints=constraints)
    warnings = scope_overlaps(store, run, spec.scope)
    store.create(ledger)
    store.set_active(run)
    return ledger, warnings


def scope_overlaps(store: Store, run: str, scope: Sequence[str]) -> list[str]:
    """Active runs (here, and in the other worktrees from their live ledgers) whose scope may overlap this one's.

    No scope means the whole tree.
    """
    from shiftgit.worktrees import active_elsewhere

    elsewhere = active_elsewhere(store.repo)
    warnings = [f"scope overlaps run {a.run!r} active in worktree {a.worktree} ({', '.join(a.scope) or 'everything'})"
                for a in elsewhere if a.run == run or _globs_overlap(scope, a.scope)]
    for other in store.run_ids():
        if other == run or other in {a.run for a in elsewhere}:
            continue
        try:
            theirs = store.read(other)
        except Exception:  # an unreadable neighbour is reported by its own commands
            continue
        if theirs.status == "active" and _globs_overlap(scope, theirs.contract.scope):
            warnings.append(f"scope overlaps active run {other!r} ({', '.join(theirs.contract.scope) or 'everything'})")
    return warnings


def _globs_overlap(a: Sequence[str], b: Sequence[str]) -> bool:
    if not a or not b:
        return True
    return any(fnmatch.fnmatch(x, y) or fnmatch.fnmatch(y, x) or _prefix(x) == _prefix(y) for x in a for y in b)


def _prefix(glob: str) -> str:
    return glob.split("*", 1)[0].split("?", 1)[0].rstrip("/")


# -- check ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class CheckInput:
    argv: tuple[str, ...]
    name: str | None = None
    cwd: str = "."
    timeout: float | None = None
    covers: tuple[str, ...] = ()
    junit: str | None = None
    env: tuple[str, ...] = ()


def check(store: Store, run: str, spec: CheckInput, *, echo: BinaryIO | None = None) -> Check:
    """Run a command and record its real result on the run (evidence)."""
    store.read(run)  # a broken ledger is reported before anything runs
    if not spec.argv:
        raise UsageError("no command given; put it after `--`, e.g. `shiftgit check -- pytest -q`")
    if find_secrets("\0".join(spec.argv)):
        raise UsageError("the command line holds what looks like a secret; pass it through an environment "
                         "variable and name it with --env NAME, so it never lands in git")
    workdir = (store.repo.root / spec.cwd).resolve()
    if not workdir.is_dir() or not workdir.is_relative_to(store.repo.root):
        raise UsageError(f"--cwd {spec.cwd!r} is not a directory inside the repository")
    content = store.repo.worktree_tree()
    result = evidence.run(spec.argv, cwd=str(workdir), timeout=spec.timeout, echo=echo)
    junit_xml = _read_junit(workdir, spec.junit)
    outcome = parse_outcome(spec.argv, result.output, result.exit_code, junit_xml)
    record = Check(
        id=new_id("k"), name=spec.name or _default_name(spec.argv), argv=spec.argv,
        cwd=str(workdir.relative_to(store.repo.root)) or ".", timeout=spec.timeout, env=spec.env,
        started_at=now_iso(), duration_s=result.duration_s, exit_code=result.exit_code,
        timed_out=result.timed_out, outcome=outcome.to_dict(), failing=outcome.failing,
        output_tail=redact(result.tail), output_sha256=result.sha256, output_bytes=result.total_bytes,
        content=content, covers=spec.covers, junit=spec.junit,
    )

    def add(ledger: Ledger) -> Ledger:
        pending = (*ledger.pending_checks, record)[-PENDING_CAP:]
        return replace(ledger, pending_checks=pending, updated_at=now_iso())

    store.update(run, add)
    trust.remember_quietly(store.repo, trust.command_of(record), record.started_at)  # ran here: trusted here
    return record


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


# -- checkpoint ----------------------------------------------------------------------------

@dataclass(frozen=True)
class CheckpointInput:
    step: str | None = None
    next_action: str | None = None
    done_when: str | None = None
    done: tuple[str, ...] = ()
    doing: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()
    resolve: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()
    note: str | None = None
    phase: str | None = None
    milestone: bool = False
    tokens: int = 0
    cost: float = 0.0


def checkpoint(store: Store, run: str, spec: CheckpointInput) -> Checkpoint:
    """Record what the tree holds now (from git, never from the caller), with the evidence since."""
    if spec.tokens < 0 or spec.cost < 0:
        raise UsageError("--tokens and --cost add spend; they cannot be negative")
    store.read(run)  # fail on a broken ledger before touching git objects
    repo = store.repo
    head = repo.head()
    tree = repo.worktree_tree()
    files = tuple(FileChange(path=e.path, id=e.blob, status=e.status) for e in repo.diff_trees(head, tree))
    made: list[Checkpoint] = []

    def change(ledger: Ledger) -> Ledger:
        at = now_iso()
        previous = ledger.checkpoint
        seq = (previous.seq if previous else 0) + 1
        snapshot = _snapshot(store, ledger.run, tree, head, seq)
        checks = ledger.pending_checks or (previous.checks if previous else ())
        spend = _add_spend(ledger, spec, at)
        point = Checkpoint(
            id=new_id(f"p{seq}"), seq=seq, at=at, step=spec.step,
            phase=spec.phase or (previous.phase if previous else None),
            milestone=spec.milestone, base=head, branch=repo.branch(), tree=tree, snapshot=snapshot, files=files,
            checks=tuple(replace(c, fresh=c.content == tree) for c in checks),
            next=_next(previous, spec), note=spec.note, spend=spend,
            **_carried_items(previous, spec, seq),
        )
        history = ledger.history
        if previous is not None:
            entry = HistoryEntry(id=previous.id, seq=previous.seq, at=previous.at, step=previous.step,
                                 base=previous.base)
            history = (*history, entry)[-HISTORY_CAP:]
        made.append(point)
        return replace(ledger, checkpoint=point, pending_checks=(), history=history, spend=spend, updated_at=at)

    store.update(run, change)
    return made[0]


def _snapshot(store: Store, run: str, tree: str, head: str | None, seq: int) -> str:
    """Keep the working tree as a commit under refs/shift/ (HEAD, index and files untouched)."""
    ref = f"refs/shift/snapshots/{run}"
    for attempt in range(SNAPSHOT_RETRIES + 1):  # the ref is shared by worktrees and `sync`: compare-and-swap
        previous = store.repo.ref(ref)
        parents = [p for p in (head, previous) if p]
        message = f"shiftgit snapshot: {run} checkpoint {seq}"
        commit = store.repo.commit_tree(tree, list(dict.fromkeys(parents)), message)
        try:
            store.repo.update_ref(ref, commit, previous or "0" * 40, f"shiftgit checkpoint {run} {seq}")
            return commit
        except GitError:
            if attempt == SNAPSHOT_RETRIES:
                raise
            time.sleep(_random.randbelow(20 * (attempt + 1)) / 1000)
    raise AssertionError("unreachable")


def _add_spend(ledger: Ledger, spec: CheckpointInput, at: str) -> Spend:
    """Tokens and cost from the caller; wall minutes since the last write by the budgets' idle rule."""
    from shiftgit.budgets import gap_minutes

    spent = ledger.spend
    return Spend(tokens=spent.tokens + spec.tokens, cost=round(spent.cost + spec.cost, 6),
                 minutes=round(spent.minutes + gap_minutes(ledger.updated_at, at), 3))


def _next(previous: Checkpoint | None, spec: CheckpointInput) -> NextAction:
    old = previous.next if previous else NextAction()
    if spec.next_action is not None:
        return NextAction(action=spec.next_action, done_when=spec.done_when)
    if spec.done_when is not None:
        return replace(old, done_when=spec.done_when)
    return old


def _carried_items(previous: Checkpoint | None, spec: CheckpointInput, seq: int) -> dict[str, Any]:
    """Open items persist until resolved; a checkpoint adds to them and need not repeat them."""
    resolved = set(spec.resolve)

    def keep(old: Sequence[Item], new: Sequence[str], cap: int | None = None) -> tuple[Item, ...]:
        items = [i for i in old if i.text not in resolved]
        items += [Item(text=t, seq=seq) for t in new if t not in {i.text for i in items}]
        return tuple(items[-cap:] if cap else items)

    old_decisions = [d for d in (previous.decisions if previous else ()) if d.text not in resolved]
    new_decisions = [_decision(text, seq) for text in spec.decisions]
    return {
        "done": keep(previous.done if previous else (), spec.done, DONE_CAP),
        "doing": keep(previous.doing if previous else (), spec.doing),
        "blocked": keep(previous.blocked if previous else (), spec.blocked),
        "questions": keep(previous.questions if previous else (), spec.questions),
        "decisions": tuple((old_decisions + new_decisions)[-DECISIONS_CAP:]),
    }


def _decision(text: str, seq: int) -> Decision:
    """`--decision "keep the API -- callers depend on it"`: text, then the rationale after ' -- '."""
    what, _, why = text.partition(" -- ")
    return Decision(text=what.strip(), rationale=why.strip() or None, seq=seq)


# -- constraints, amendments ----------------------------------------------------------------

def add_constraint(store: Store, run: str, text: str) -> Constraint:
    if not text.strip():
        raise UsageError("a constraint needs text, e.g. `shiftgit constraint add \"no deploys on fridays\"`")
    record = Constraint(id=new_id("c"), text=text, added_at=now_iso())
    store.update(run, lambda ledger: replace(ledger, constraints=(*ledger.constraints, record),
                                             updated_at=record.added_at))
    return record


def lift_constraint(store: Store, run: str, which: str, reason: str) -> Constraint:
    if not reason.strip():
        raise UsageError("lifting a constraint needs a reason: --reason TEXT")
    lifted: list[Constraint] = []

    def change(ledger: Ledger) -> Ledger:
        matches = [c for c in ledger.constraints if c.status == "active" and which in (c.id, c.text)]
        if not matches:
            active = "; ".join(f"{c.id}: {c.text}" for c in ledger.active_constraints()) or "none"
            raise UsageError(f"no active constraint {which!r} on run {run!r} (active: {active})")
        target = matches[0]
        at = now_iso()
        new = replace(target, status="lifted", lifted_at=at, reason=reason)
        lifted.append(new)
        constraints = tuple(new if c is target else c for c in ledger.constraints)
        return replace(ledger, constraints=constraints, updated_at=at)

    store.update(run, change)
    return lifted[0]


AMENDABLE = {
    "goal": "goal", "stop_when": "stop_when", "owner": "owner", "allow": "allow", "forbid": "forbid",
    "artifacts": "artifacts", "accept": "accept", "scope": "scope",
    "time_budget": "minutes", "token_budget": "tokens", "cost_budget": "cost",
}


def amend(store: Store, run: str, changes: Mapping[str, Any], reason: str) -> list[Amendment]:
    """Change contract fields, each change recorded with the old value, the new one and the reason."""
    if not reason.strip():
        raise UsageError("an amendment needs a reason: --reason TEXT")
    if not changes:
        raise UsageError("nothing to amend; give at least one field, e.g. --goal TEXT")
    made: list[Amendment] = []

    def change(ledger: Ledger) -> Ledger:
        contract = ledger.contract
        at = now_iso()
        for name, value in changes.items():
            attr = AMENDABLE[name]
            if attr in ("minutes", "tokens", "cost"):
                old = getattr(contract.budgets, attr)
                contract = replace(contract, budgets=replace(contract.budgets, **{attr: value}))
            else:
                old = getattr(contract, attr)
                contract = replace(contract, **{attr: value})
            made.append(Amendment(id=new_id("a"), at=at, field=attr, old=_plain(old), new=_plain(value),
                                  reason=reason))
        return replace(ledger, contract=contract, amendments=(*ledger.amendments, *made), updated_at=at)

    store.update(run, change)
    return made


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# -- stop, finish ---------------------------------------------------------------------------

def stop(store: Store, run: str, reason: str, detail: str | None) -> Stop:
    if reason not in STOP_REASONS:
        raise UsageError(f"unknown stop reason {reason!r}; use one of: {', '.join(STOP_REASONS)}")
    record = Stop(reason=reason, detail=detail, at=now_iso())
    store.update(run, lambda ledger: replace(ledger, stop=record, status="stopped", updated_at=record.at))
    return record


def finish(store: Store, run: str, status: str, reviewer_action: str | None,
           assumptions: Sequence[str], known_failures: Sequence[str]) -> Receipt:
    """Write the receipt: final status, artifacts, every check with its outcome; end the run."""
    if status not in FINISH_STATUSES:
        raise UsageError(f"unknown finish status {status!r}; use one of: {', '.join(FINISH_STATUSES)}")
    made: list[Receipt] = []

    def change(ledger: Ledger) -> Ledger:
        at = now_iso()
        checks = (*(ledger.checkpoint.checks if ledger.checkpoint else ()), *ledger.pending_checks)
        failing = [f"{c.name}: {', '.join(c.failing) or f'exit {c.exit_code}'}" for c in checks
                   if c.exit_code != 0]
        receipt = Receipt(
            status=status, at=at, artifacts=_artifacts(store, ledger),
            checks=tuple({"name": c.name, "argv": list(c.argv), "exit_code": c.exit_code,
                          "failing": list(c.failing), "fresh": c.fresh} for c in checks),
            known_failures=(*known_failures, *failing), assumptions=tuple(assumptions),
            reviewer_action=reviewer_action,
        )
        made.append(receipt)
        stop_record = ledger.stop if status != "completed" else Stop(reason="completed", at=at)
        return replace(ledger, receipt=receipt, status=status, stop=stop_record, updated_at=at)

    store.update(run, change)
    if store.active_run({}) == run:
        store.set_active(None)
    return made[0]


def _artifacts(store: Store, ledger: Ledger) -> tuple[str, ...]:
    """Commits made since the run started (touching its ledger) on this branch, oldest first."""
    path = store.rel(store.ledger_path(ledger.run))
    out = store.repo.git("log", "--format=%H", "--reverse", "--", path, check=False)
    return tuple(out.split())
