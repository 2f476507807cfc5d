"""A run's contract and rules: start, constraints, amendments, stop, finish."""


from __future__ import annotations

import datetime as dt
import fnmatch
import os
from collections.abc import Mapping, Sequence
from typing import Any

from shiftgit.errors import UsageError
from shiftgit.git.scope import in_scope as in_scope  # re-exported: runs.in_scope
from shiftgit.ledger.model import (
    STOP_REASONS,
    Amendment,
    Budgets,
    Constraint,
    Contract,
    Ledger,
    Stop,
)
from shiftgit.ledger.record import replace
from shiftgit.ledger.store import Store
from shiftgit.runs.acceptspec import parse as parse_accept

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from shiftgit.tuples import NamedTuple  # typing's class without importing typing or dataclasses


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    """Unique across machines: random, not a counter."""
    return f"{prefix}-{os.urandom(6).hex()}"


# -- start ---------------------------------------------------------------------------------

class ContractInput(NamedTuple):
    goal: str
    stop_when: str
    owner: str | None = None
    minutes: float | None = None
    tokens: int | None = None
    cost: float | None = None
    allow: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    accept: tuple[str, ...] = ()  # NAME=CMD
    scope: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    inspect: tuple[str, ...] = ()
    escalate_when: tuple[str, ...] = ()
    rollback_plan: str | None = None


def start(store: Store, run: str, spec: ContractInput,
          template: Mapping[str, Any] | None = None) -> tuple[Ledger, list[str]]:
    """Write a new run's contract and make it active here. Returns the ledger and warnings.

    `template`: {"name", "sha256"} of the template that filled the contract (runs/templates.py)."""
    if not spec.goal.strip() or not spec.stop_when.strip():
        raise UsageError("a run needs a goal and a stop condition: --goal TEXT --stop-when TEXT")
    both = set(spec.allow) & set(spec.forbid)
    if both:
        raise UsageError(f"effect kind(s) both allowed and forbidden: {', '.join(sorted(both))}")
    accept = parse_accept(spec.accept)
    inspect, escalate = plan_commands(spec.inspect, "--inspect"), plan_commands(spec.escalate_when, "--escalate-when")
    untyped = set(template.get("untyped") or ()) if template else set()  # filled by a template: `trust` them first
    typed = [*([(a.argv, ".") for a in accept] if "accept" not in untyped else []),
             *(inspect if "inspect" not in untyped else []), *(escalate if "escalate_when" not in untyped else [])]
    at = now_iso()
    contract = Contract(goal=spec.goal, stop_when=spec.stop_when, owner=spec.owner,
                        budgets=Budgets(minutes=spec.minutes, tokens=spec.tokens, cost=spec.cost),
                        allow=spec.allow, forbid=spec.forbid, artifacts=spec.artifacts, accept=accept,
                        scope=spec.scope, inspect=spec.inspect, escalate_when=spec.escalate_when,
                        rollback_plan=spec.rollback_plan, **location(store))
    from_template = set(template.get("constraints") or ()) if template else set()
    constraints = tuple(Constraint(id=new_id("c"), text=t, added_at=at,
                                   extra={"source": "template" if t in from_template else "contract"})
                        for t in spec.constraints if t.strip())
    used = {"template": {k: template[k] for k in ("name", "sha256") if k in template}} if template else {}
    ledger = Ledger(run=run, created_at=at, updated_at=at, contract=contract, constraints=constraints, extra=used)
    warnings = scope_overlaps(store, run, spec.scope)
    store.create(ledger)
    warnings += activate(store, run)
    remember_typed(store, typed, at)
    return ledger, warnings


def activate(store: Store, run: str) -> list[str]:
    """`run` is this worktree's active run; the git hooks `init` left out while none was are installed
    (git/runhooks.py). Returns a line per hook that could not be (why, and the fix): the caller says it."""
    from shiftgit.git import runhooks

    store.set_active(run)
    return runhooks.add_repo_run_hooks(store.repo)


def location(store: Store) -> dict[str, Any]:
    """Where the work lives: the repository (its remote URL, or null), the branch and the worktree path."""
    repo = store.repo
    remotes = repo.git("remote", check=False).split()
    remote = "origin" if "origin" in remotes else (remotes[0] if remotes else None)
    url = repo.git("remote", "get-url", remote, check=False).strip() if remote else ""
    return {"repository": _without_credentials(url) or None, "branch": repo.branch(), "worktree": str(repo.root)}


def _without_credentials(url: str) -> str:
    """`https://user:token@host/x` -> `https://host/x`: a credential never lands in the ledger."""
    import re

    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^/@]*@", r"\1", url)


def plan_commands(values: Sequence[str], flag: str) -> list[tuple[tuple[str, ...], str]]:
    """Recovery-plan commands (strings, split like a shell would) as (argv, cwd); a bad one -> UsageError."""
    import shlex

    out = []
    for value in values:
        try:
            argv = tuple(shlex.split(value))
        except ValueError as exc:
            raise UsageError(f"{flag} {value!r} does not parse ({exc}); nothing was written") from None
        if not argv:
            raise UsageError(f"{flag} needs a command, e.g. {flag} 'psql -c \"select 1\"'; nothing was written")
        from shiftgit.ledger.argvsecrets import argv_secret  # here: the regular expressions load only for a command

        where = argv_secret(argv)
        if where is not None:
            raise UsageError(f"{flag}: the command holds what looks like a secret ({where}); pass it "
                             "through an environment variable so it never lands in git; nothing was written")
        out.append((argv, "."))
    return out


def remember_typed(store: Store, commands: Sequence[tuple[tuple[str, ...], str]], at: str) -> None:
    """Commands a person typed into the contract here are trusted here (an agent's wait for `shiftgit trust`)."""
    import os

    from shiftgit.ledger import trustdb
    from shiftgit.procs import agent_markers

    if agent_markers(os.environ):
        return
    for argv, cwd in commands:
        name = " ".join(argv)[:60]
        trustdb.remember_quietly(store.repo, trustdb.Command(name, argv, cwd, False,
                                                             trustdb.command_digest(argv, cwd)), at)


def scope_overlaps(store: Store, run: str, scope: Sequence[str]) -> list[str]:
    """Active runs (here, and in the other worktrees from their live ledgers) whose scope may overlap this one's.

    No scope means the whole tree.
    """
    from shiftgit.git.worktrees import active_elsewhere

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


# -- constraints, amendments ----------------------------------------------------------------

def fenced(store: Store, run: str) -> None:
    """The owner lease's fence (runs/lease.py): a holder of an older epoch changes nothing (Fenced, exit 4)."""
    from shiftgit.runs.lease import guard

    guard(store, run)


def add_constraint(store: Store, run: str, text: str) -> Constraint:
    if not text.strip():
        raise UsageError("a constraint needs text, e.g. `shiftgit constraint add \"no deploys on fridays\"`")
    record = Constraint(id=new_id("c"), text=text, added_at=now_iso(), extra={"source": "added"})
    fenced(store, run)
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

    fenced(store, run)
    store.update(run, change)
    return lifted[0]


AMENDABLE = {
    "goal": "goal", "stop_when": "stop_when", "owner": "owner", "allow": "allow", "forbid": "forbid",
    "artifacts": "artifacts", "accept": "accept", "scope": "scope", "inspect": "inspect",
    "escalate_when": "escalate_when", "rollback_plan": "rollback_plan",
    "time_budget": "minutes", "token_budget": "tokens", "cost_budget": "cost",
}


def amend(store: Store, run: str, changes: Mapping[str, Any], reason: str) -> list[Amendment]:
    """Change contract fields, each change recorded with the old value, the new one and the reason."""
    if not reason.strip():
        raise UsageError("an amendment needs a reason: --reason TEXT")
    if not changes:
        raise UsageError("nothing to amend; give at least one field, e.g. --goal TEXT")
    for name in ("goal", "stop_when"):
        if isinstance(changes.get(name), str) and not changes[name].strip():
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} cannot be empty: a run always has a goal and a stop condition; give the new "
                             f"text, e.g. `shiftgit amend {flag} \"...\" --reason R`; nothing was changed")
    changes = dict(changes)
    if "accept" in changes:
        changes["accept"] = parse_accept(changes["accept"])
    typed = [(a.argv, ".") for a in changes.get("accept", ())]
    typed += plan_commands(changes.get("inspect", ()), "--inspect")
    typed += plan_commands(changes.get("escalate_when", ()), "--escalate-when")
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

    fenced(store, run)
    store.update(run, change)
    remember_typed(store, typed, made[0].at)
    return made


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# -- stop, finish ---------------------------------------------------------------------------

def stop(store: Store, run: str, reason: str, detail: str | None) -> Stop:
    if reason not in STOP_REASONS:
        raise UsageError(f"unknown stop reason {reason!r}; use one of: {', '.join(STOP_REASONS)}")
    record = Stop(reason=reason, detail=detail, at=now_iso())

    def change(ledger: Ledger) -> Ledger:
        if ledger.status in ("completed", "blocked", "abandoned"):  # a finished run stays finished
            raise UsageError(f"run {run} is finished ({ledger.status}); nothing to stop: start the next run with "
                             "`shiftgit start RUN --goal ... --stop-when ...`")
        return replace(ledger, stop=record, status="stopped", updated_at=record.at)

    fenced(store, run)
    store.update(run, change)
    return record
