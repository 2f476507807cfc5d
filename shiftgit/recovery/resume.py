"""`resume`: the replacement-process test made executable (SPEC §6).

From durable artifacts only (the ledger in the tree, git objects, /proc), answer: which changes were applied, which
effects happened and whether they are safe to repeat, which services still live, which checks failed, and whether
to resume, roll back or escalate; then brief.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from shiftgit import textsafe
from shiftgit.git import headview, record, sources
from shiftgit.ledger.checkstates import check_states
from shiftgit.ledger.checkstates import failing as failing_states
from shiftgit.ledger.model import Checkpoint, Effect, Ledger
from shiftgit.ledger.store import Store
from shiftgit.recovery import decisions, elsewhere, plans, takeover
from shiftgit.recovery.briefing import build_briefing
from shiftgit.repo import FileEntry, Repo, TreeBuild
from shiftgit.runs.contract import activate, location
from shiftgit.runs.memory import standing_rules
from shiftgit.runs.reviews import awaiting_reasons

if TYPE_CHECKING:  # verify (and its output parsers) load only when checks rerun: `resume --no-run` never does
    from shiftgit.recovery.verify import Progress

EXIT = {"resume": 0, "rollback": 3, "escalate": 4, "finished": 0}
UNSETTLED = ("unknown", "attempted")
LIST_CAP = 200
COMMITS_PER_PATH = 10


def resume(store: Store, run: str | None, run_checks: bool, *, adopt: bool = False, take_over: bool = False,
           progress: Progress | None = None, tree: TreeBuild | None = None) -> dict[str, Any]:
    """Decide and brief (after adopting a newer published record, with `adopt`; after starting a new owner
    epoch here, with `take_over`); make the run active here. `tree`: the work tree's, begun early (not with `adopt`)."""
    from shiftgit.runs import lease

    pick = elsewhere.pick(store, run, adopt)  # discovery's, or a run known here only from a published record
    adopted = takeover.adopt(store, pick.run) if adopt else None
    taken = lease.take_over(store, pick.run) if take_over else None
    brought = takeover.bring_effects(store, pick.run)
    report = build_report(store, pick.run, run_checks, progress=progress, tree=tree)
    problems = activate(store, pick.run) if report["decision"] != "finished" and store.exists(pick.run) else []
    extra = {"take_over": taken, "picked": pick.note or None, "adopt": adopted, "effects_brought": brought or None,
             "hook_problems": problems or None}
    report.update({key: value for key, value in extra.items() if value is not None})
    report["skipped"] = store.skipped_runs()  # run dirs under names no run may have: named, never read
    return report


def exit_code(report: Mapping[str, Any]) -> int:
    return EXIT[report["decision"]]


# -- the answers ---------------------------------------------------------------------------------

def effect_entry(effect: Effect) -> dict[str, Any]:
    """As `effect list` shows it: an `attempted` whose runner is gone is `unknown`."""
    from shiftgit.effects.runner import safe_to_repeat, state_of

    return {"key": effect.key, "kind": effect.kind, "state": state_of(effect), "recorded_state": effect.state,
            "reversibility": effect.reversibility, "safe_to_repeat": safe_to_repeat(effect),
            "external_id": effect.extra.get("external_id"), "external_status": effect.extra.get("external_status")}


def service_entries(ledger: Ledger) -> list[dict[str, Any]]:
    """Each recorded service: `alive` True or False here, None (`liveness` unknown) when recorded on another host."""
    return [_service_entry(e) for e in ledger.effects if e.kind == "service"]


def _service_entry(effect: Effect) -> dict[str, Any]:
    from shiftgit.effects.liveness import liveness  # socket and /proc: only for a recorded service

    identity = _identity(effect)
    state = liveness(effect.pid, effect.port, identity)
    return {"name": effect.name or effect.key, "key": effect.key, "pid": effect.pid, "port": effect.port,
            "state": effect.state, "alive": {"alive": True, "dead": False}.get(state), "liveness": state,
            "host": identity.get("host") if identity else None}


def _identity(effect: Effect) -> Mapping[str, Any] | None:
    """The process identity `service start` records (a field once effects lands, kept in `extra` before)."""
    value = getattr(effect, "process", None) or effect.extra.get("process")
    return value if isinstance(value, Mapping) else None


def checks(ledger: Ledger) -> list[dict[str, Any]]:
    """Every check's state in the latest checkpoint (ledger/checkstates.py), with those run since."""
    return check_states(ledger)


def failing_checks(ledger: Ledger) -> list[dict[str, Any]]:
    """Every check whose latest result failed, stale or not, with its state."""
    return failing_states(check_states(ledger))


def _start_commit(repo: Repo, ledger: Ledger, rel: str) -> str | None:
    """Where the run started: its first recorded base, else the commit that added its ledger, else HEAD."""
    firsts = [h.base for h in ledger.history if h.seq == 1]
    point = ledger.checkpoint
    if point is not None and point.seq == 1:
        firsts.append(point.base)
    for base in firsts:
        if base is None or record.has_object(repo, base, "commit"):
            return base
    added = repo.git("log", "--diff-filter=A", "--format=%H", "--", rel, check=False).split()
    return added[-1] if added else repo.head()


def _commits_by_path(repo: Repo, start: str | None, head: str) -> dict[str, list[str]]:
    spec = [head] if start is None else [f"{start}..{head}"]
    out = repo.git("log", "-z", "--format=%x01%H", "--name-only", "--no-renames", "--max-count=500", *spec,
                   check=False)
    by_path: dict[str, list[str]] = {}
    commit = ""
    for token in out.split("\0"):
        if token.startswith("\x01"):
            commit = token[1:]
            continue
        path = textsafe.path_text(token.lstrip("\n"))
        if path and commit and len(by_path.setdefault(path, [])) < COMMITS_PER_PATH:
            by_path[path].append(commit)
    return by_path


def changes(store: Store, ledger: Ledger, worktree: str, edits: Sequence[FileEntry] | None,
            head: str | None = None) -> dict[str, Any]:
    """Paths changed since the run started: committed (with their commits) and uncommitted (`head`: HEAD, if known)."""
    repo, rel = store.repo, store.rel(store.ledger_path(ledger.run))
    start, head = _start_commit(repo, ledger, rel), head or repo.head()
    after = {e.path for e in edits or ()}
    committed = repo.diff_trees(start, head) if head and start != head else []
    by_path = _commits_by_path(repo, start, head) if committed and head else {}
    uncommitted = repo.diff_trees(head, worktree)

    def entry(e: FileEntry, commits: list[str] | None) -> dict[str, Any]:
        out: dict[str, Any] = {"path": e.path, "status": e.status,
                               "checkpoint_covers": edits is not None and ledger.checkpoint is not None
                               and e.path not in after}
        if commits is not None:
            out["commits"] = commits
        return out

    return {
        "since": start, "head": head,
        "committed": [entry(e, by_path.get(e.path, [])) for e in committed][:LIST_CAP],
        "uncommitted": [entry(e, None) for e in uncommitted][:LIST_CAP],
        "after_checkpoint": sorted(after)[:LIST_CAP],
        "covered_by_checkpoint": ledger.checkpoint is not None and edits is not None and not after,
    }


# -- the decision ----------------------------------------------------------------------------------

def _effect_reasons(ledger: Ledger) -> list[str]:
    reasons = [f"effect {e.key} ({e.kind}) is {e.state}: its outcome is unknown; settle it with "
               f"`shiftgit effect reconcile {e.key} --state completed|failed|compensated --evidence TEXT`"
               for e in ledger.effects if e.state in UNSETTLED]
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    reasons += [f"approval for {a.key} is pending" + (f" ({textsafe.quote(a.reason)})" if a.reason else "")
                for a in ledger.approvals if a.state == "requested" and not (a.expires_at and a.expires_at < now)]
    return reasons


def budget_reasons(ledger: Ledger) -> list[str]:
    from shiftgit.ledger.budgets import exhausted

    # exhausted() says "cost: spent 3 of 2.5"
    spent = (line.partition(": ") for line in exhausted(ledger))
    return [f"the {kind} budget is spent: {detail}" for kind, _, detail in spent]


def _verify_reasons(report: Mapping[str, Any] | None, edits: Sequence[FileEntry] | None,
                    stale: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
    """(escalations, notes) from a verify report. STALE: checks whose result at the checkpoint ran on other content."""
    if report is None:
        return [], []
    if report["result"] == "refused":
        return [f"verify could not run {len(report['untrusted'])} command(s) not trusted in this clone; a person "
                f"trusts them with `shiftgit trust {report['run']}`, or `shiftgit resume --no-run` decides "
                "from the record alone"], []
    verdicts = [(f"{c['name']} {c['verdict']}", c["name"] in stale and c["verdict"] != "flaky")
                for c in report["checks"] if c["verdict"] != "reproduced"]
    moved, bad = [v for v, allowed in verdicts if allowed], [v for v, allowed in verdicts if not allowed]
    said = [f"verify: {', '.join(moved)}, as a stale record allows (its result ran on other content)"] if moved else []
    if not bad:
        return [], said or ([f"verify reproduced {len(report['checks'])} check(s)"] if report["checks"] else [])
    if edits:
        return [], [f"verify mismatch ({', '.join(bad)}) is explained by the edits made after the checkpoint", *said]
    return [f"verify mismatch the record does not explain: {', '.join(bad)}"], said


def decide(store: Store, ledger: Ledger, worktree: str, run_checks: bool,
           progress: Progress | None = None, head: str | None = None) -> dict[str, Any]:
    repo = store.repo
    point = ledger.checkpoint
    rel = store.rel(store.ledger_path(ledger.run))
    if ledger.status in decisions.ENDED:  # a finished run stays finished: nothing reruns, nothing turns active
        return {"decision": "finished", "reasons": decisions.finished(ledger), "edits": [], "verify": None,
                "stop_reason": "completed" if ledger.status == "completed" else None, "plan": None}
    escalate = _effect_reasons(ledger) + budget_reasons(ledger) + awaiting_reasons(ledger)
    notes: list[str] = []
    edits: list[FileEntry] | None = []
    report = None
    if point is not None:
        state = record.head_state(repo, point, rel, head)
        escalate += decisions.head_reasons(repo, state, point)
        edits = headview.edits(repo, point, worktree, state)
        if edits is None:
            escalate.append(f"the content of checkpoint #{point.seq} is not in this clone: edits made after it "
                            "cannot be told apart")
        if run_checks and point.checks:
            from shiftgit.recovery import verify

            report = verify.verify(store, ledger.run, ledger=ledger, worktree=worktree, progress=progress)
        stale = frozenset(c.name for c in point.checks if point.tree is not None and c.content != point.tree)
        more, notes = _verify_reasons(report, edits, stale)
        escalate += more
    reason = decisions.stop_reason(ledger, edits)
    more, said = decisions.stop_reasons(ledger, reason)
    escalate += more
    elsewhere, where = decisions.location_reasons(ledger, location(store))
    escalate += elsewhere
    plan = plans.run_plan(store, ledger, run_checks)
    escalate += plan["escalate"]
    rollback, kept = decisions.judge_edits(ledger.run, point, edits, report) if point is not None and edits \
        else ([], [])
    notes = said + where + kept + notes
    decision = "escalate" if escalate else "rollback" if rollback else "resume"
    reasons = escalate + rollback + notes if decision != "resume" else _resume_reasons(point, notes, run_checks,
                                                                                         bool(edits))
    return {"decision": decision, "reasons": reasons, "edits": edits, "verify": report, "stop_reason": reason,
            "plan": plan}


def _resume_reasons(point: Checkpoint | None, notes: list[str], run_checks: bool, edited: bool) -> list[str]:
    if point is None:
        return ["no checkpoint yet: the run continues from its contract", *notes]
    tree = "" if edited else f" and the working tree matches checkpoint #{point.seq}"
    reasons = [f"the record matches HEAD{tree}", *notes]
    if not run_checks:
        reasons.append("checks were not rerun (--no-run): decided from the record alone")
    elif not point.checks:
        reasons.append("the checkpoint recorded no checks to rerun")
    return reasons


def build_report(store: Store, run: str, run_checks: bool, progress: Progress | None = None,
                 tree: TreeBuild | None = None) -> dict[str, Any]:
    """The `resume --json` report for `run`, without printing or changing anything (`tree`: see `resume`)."""
    repo = store.repo
    rel = store.rel(store.ledger_path(run))
    found = sources.candidates(store, run)  # the work tree's file and HEAD's, the published ones: read once
    provenance = record.ledger_provenance(repo, rel, sources.local_files(found))
    chosen = elsewhere.newest_record(store, run, rel, provenance, found)  # the newest record: here, or published
    if isinstance(chosen, str):
        return _invalid(run, rel, provenance, chosen)
    ledger = chosen.ledger
    worktree, head = (tree or repo.start_worktree_tree()).result(), repo.head()  # HEAD asked once, here
    if chosen.elsewhere:  # decide and describe as if adopted: its checks cannot run on files that are not here
        worktree = takeover.target_tree(store, chosen)
        verdict = takeover.adjust(decide(store, ledger, worktree, False), run, chosen)
    else:
        verdict = decide(store, ledger, worktree, run_checks, progress, head)
    verdict = _lease_verdict(store, run, ledger, verdict)
    services = service_entries(ledger)
    changed = changes(store, ledger, worktree, verdict["edits"], head)
    briefing = build_briefing(ledger, chosen.where, chosen.provenance, decision=verdict["decision"],
                              reasons=verdict["reasons"], services=services, changes=changed,
                              failing=failing_checks(ledger), record=takeover.record_lines(store, chosen),
                              rerun=_rerun(verdict), plan=plans.lines(verdict.get("plan") or {}, ledger),
                              standing=standing_rules(store))
    return {
        "run": run, "decision": verdict["decision"], "reasons": verdict["reasons"], "briefing": briefing,
        "changes": changed, "effects": [effect_entry(e) for e in ledger.effects], "services": services,
        "failing_checks": failing_checks(ledger), "checks": checks(ledger),
        "stop_reason": verdict.get("stop_reason"), "plan": verdict.get("plan"),
        "receipt": ledger.receipt.to_dict() if ledger.receipt else None,
        "contract": {"repository": ledger.contract.repository, "branch": ledger.contract.branch,
                     "worktree": ledger.contract.worktree},
        "checkpoint": ledger.checkpoint.seq if ledger.checkpoint else None,
        "provenance": chosen.provenance.to_dict(), "verify": verdict["verify"],
        "source": chosen.source.to_dict() if chosen.source else None,
        "lease": _lease_status(store, run, ledger),
    }


def _lease_verdict(store: Store, run: str, ledger: Ledger, verdict: dict[str, Any]) -> dict[str, Any]:
    """Another host, clone or work tree holds the run's lease and it has not expired: a person decides."""
    from shiftgit.runs import lease

    held = ledger.lease
    if not isinstance(held, Mapping) or verdict["decision"] == "finished" or not lease.held_elsewhere(
            held, lease.here(store)):
        return verdict
    reasons = [lease.held_line(run, held)] + (verdict["reasons"] if verdict["decision"] != "resume" else [])
    return {**verdict, "decision": "escalate", "reasons": reasons}


def _lease_status(store: Store, run: str, ledger: Ledger) -> dict[str, Any] | None:
    from shiftgit.runs import lease

    return lease.status(store, run, {"lease": ledger.lease})


def _rerun(verdict: Mapping[str, Any]) -> bool | None:
    """Whether the decision rests on checks run again here (None for a finished run)."""
    if verdict["decision"] == "finished":
        return None
    report = verdict.get("verify")
    return report is not None and report["result"] != "refused" and bool(report["checks"])


def _invalid(run: str, rel: str, provenance: record.Provenance, error: str) -> dict[str, Any]:
    reason = f"the ledger is invalid: {textsafe.one_line(error, 1500)}"
    briefing = (f"shiftgit briefing for run {run}\nDecision: escalate. Reasons: {reason}\n"
                f"The ledger {rel} cannot be read, so nothing it records can be relied on. Last commit touching "
                f"it: {textsafe.one_line(provenance.describe())}.\n")
    return {"run": run, "decision": "escalate", "reasons": [reason], "briefing": briefing[:9500],
            "changes": {}, "effects": [], "services": [], "failing_checks": [], "checkpoint": None,
            "provenance": provenance.to_dict(), "verify": None, "source": None}


def text(report: Mapping[str, Any]) -> str:
    """What a person sees: the decision, its reasons, then the briefing."""
    lines = [f"resume {report['run']}: {report['decision']}"]
    lines += [f"  - {textsafe.one_line(reason)}" for reason in report["reasons"]]
    return "\n".join(lines) + "\n\n" + str(report["briefing"]).rstrip("\n")
