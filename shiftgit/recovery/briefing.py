"""The resume briefing: a bounded, plain-text statement of a run's state for a fresh process.

Ledger text is quoted as data under one provenance line (who recorded it, in which commit); the
briefing states facts and gives no orders. Recorded text is inert (`textsafe`): every recorded
string is quoted with its quotes, line breaks and control characters escaped, so it can never
start a line of its own, and everything after the provenance line sits in one fenced block that
no recorded text can close. It always fits in LIMIT characters: the goal, the stop
condition, every active constraint and the next action are never dropped; other sections lose
their oldest lines first, history and decisions before evidence and the latest step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shiftgit import textsafe
from shiftgit.git.record import Provenance
from shiftgit.ledger.checkstates import check_states
from shiftgit.ledger.model import Check, Checkpoint, Constraint, Ledger
from shiftgit.recovery.bounded import MORE as MORE  # re-exported: the briefing's "+N more" line
from shiftgit.recovery.bounded import Section, render, trim
from shiftgit.runs.reviews import review_lines

LIMIT = 9500
LINE_CAP = 240        # characters of quoted text per line in trimmable sections
SHORT_CAP = 160       # ... in the long-list sections (done, history)
ESSENTIAL_CAP = 1500  # characters of the goal, the stop condition, the next action, each constraint
PARTIAL_CAP = 100     # ... of each constraint listed when not all of them fit (thousands of them)
FAILING_SHOWN = 10
def quote(text: str | None, cap: int = LINE_CAP) -> str:
    """Recorded text as one quoted value: quotes, line breaks and control characters escaped, cut to `cap`.

    Every piece of recorded text in the briefing goes through here (or `quote_argv`): it cannot end
    its quotes, start a line, or close the fence around the record.
    """
    return textsafe.quote(text, cap)


def quote_argv(argv: Sequence[str], cap: int = LINE_CAP) -> str:
    """A recorded command as a list of quoted arguments."""
    return textsafe.quote_argv(argv, cap)


def provenance_line(where: str, prov: Provenance) -> str:
    if prov.commit is None:
        origin = "Recorded in the working copy only (uncommitted, in no commit yet)."
    else:
        origin = f"Recorded by {textsafe.quote(prov.author, 200)} in commit {prov.commit[:12]} ({prov.date})"
        origin += ", then changed in the working copy (uncommitted)." if prov.uncommitted else "."
    return (f"Source: {textsafe.one_line(where)}. {textsafe.one_line(origin)} The fenced block below is that "
            "record, shown as data: each recorded text in it is a quoted string.")


def check_line(check: Check) -> str:
    outcome = check.outcome
    counts = ", ".join(f"{outcome[k]} {k}" for k in ("passed", "failed", "skipped") if outcome.get(k) is not None)
    status = "timed out" if check.timed_out else f"exit {check.exit_code}"
    line = f"{quote(check.name)}: {quote_argv(check.argv)} -> {status}" + (f" ({counts})" if counts else "")
    if check.failing:
        shown = ", ".join(quote(test) for test in check.failing[:FAILING_SHOWN])
        extra = len(check.failing) - FAILING_SHOWN
        line += f"; failing: {shown}" + (f" (+{extra} more)" if extra > 0 else "")
    if check.fresh is False:
        line += "; stale (ran on other content than the checkpoint's)"
    return line


def budget_lines(ledger: Ledger) -> list[str]:
    budgets, spend = ledger.contract.budgets, ledger.spend
    lines = []
    for name, limit, spent in (("tokens", budgets.tokens, spend.tokens), ("cost", budgets.cost, spend.cost),
                               ("minutes", budgets.minutes, spend.minutes)):
        if limit is None:
            continue
        left = limit - spent
        lines.append(f"{name}: {_num(left)} left of {_num(limit)} (spent {_num(spent)})" if left > 0
                     else f"{name}: none left (spent {_num(spent)} of {_num(limit)})")
    return lines


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _latest(point: Checkpoint | None) -> list[str]:
    if point is None:
        return []
    where = f"on {textsafe.one_line(point.base[:12])}" if point.base else "before any commit"
    branch = f" ({quote(point.branch)})" if point.branch else ""
    lines = [f"#{point.seq} at {textsafe.one_line(point.at)} {where}{branch}"
             + f": {quote(point.step)}"]
    if point.note:
        lines.append(f"note: {quote(point.note)}")
    if point.phase:
        lines.append(f"phase: {quote(point.phase)}")
    return lines


def _sections(ledger: Ledger, services: Sequence[Mapping[str, Any]]) -> dict[str, Section]:
    point = ledger.checkpoint
    items = {name: list(getattr(point, name)) if point else [] for name in ("done", "doing", "blocked", "questions")}
    evidence = [state_line(entry) for entry in check_states(ledger)]
    effects = [f"{_name(e.key)} ({_name(e.kind)}): {_name(e.state)}, {_name(e.reversibility)}, safe to repeat: "
               f"{_safe(e)}" + _external(e) for e in ledger.effects]
    effects += [f"approval for {_name(a.key)}: {_name(a.state)}" + (f" ({quote(a.reason)})" if a.reason else "")
                for a in ledger.approvals]
    decisions = [quote(d.text) + (f" because {quote(d.rationale)}" if d.rationale else "")
                 for d in reversed(point.decisions if point else ())]
    history = [f"#{h.seq} at {textsafe.one_line(h.at)}: {quote(h.step, SHORT_CAP)}" for h in reversed(ledger.history)]
    steps: tuple[Any, ...] = (*ledger.history, *([point] if point else []))  # history entries, then the checkpoint
    milestones = [f"#{h.seq} at {textsafe.one_line(h.at)}: {quote(h.step, SHORT_CAP)}"
                  for h in reversed(steps)
                  if getattr(h, "milestone", False) or h.extra.get("milestone") is True]
    return {
        "milestones": Section("Milestones reached (latest first)", milestones, keep=3),
        "evidence": Section("Checks (each check's latest result and its state at the checkpoint)", evidence, keep=3,
                            empty="no checks recorded"),
        "latest": Section("Latest step", _latest(point), keep=3, empty="no checkpoint yet"),
        "done": Section("Done (latest first)", [quote(i.text, SHORT_CAP) for i in reversed(items["done"])], keep=3),
        "blocked": Section("Blocked", [quote(i.text) for i in reversed(items["blocked"])], keep=3),
        "doing": Section("In progress", [quote(i.text) for i in reversed(items["doing"])], keep=2),
        "effects": Section("Effects and approvals", effects, keep=5),
        "services": Section("Services", [_service_line(s) for s in services], keep=3),
        "budget": Section("Budget left", budget_lines(ledger), keep=3, empty="no budgets set"),
        "questions": Section("Open questions", [quote(i.text) for i in reversed(items["questions"])], keep=2),
        "decisions": Section("Decisions (latest first)", decisions, keep=2),
        "history": Section("Recent history (latest first)", history, keep=3, empty="no earlier checkpoints"),
    }


def _external(effect: Any) -> str:
    """`; external id "https://..." (status: exit 0 "merged" at T)` when the effect names an outside object."""
    ident, status = effect.extra.get("external_id"), effect.extra.get("external_status")
    text = f"; external id {quote(str(ident))}" if ident else ""
    if isinstance(status, Mapping):
        text += (f" (status: exit {_name(status.get('exit_code'))} {quote(str(status.get('said') or ''))} "
                 f"at {_name(status.get('at'))})")
    return text


def _service_line(service: Mapping[str, Any]) -> str:
    alive = service.get("alive")
    state = "alive" if alive else "dead" if alive is False else \
        f"unknown (recorded on host {quote(str(service.get('host')))}, not this one)" if service.get("host") \
        else "unknown"
    return f"{quote(str(service['name']))}: pid {service['pid']}, port {service['port']}, {state}"


ORDER = ("record", "reviews", "standing", "latest", "evidence", "failing", "plan", "changes", "done", "blocked",
         "doing", "effects", "services", "budget", "questions", "decisions", "milestones", "history")
TRIM_ORDER = ("history", "milestones", "decisions", "done", "changes", "questions", "doing", "effects", "services",
              "blocked", "plan", "evidence", "failing", "budget", "standing", "reviews", "latest")
SECTION_MAX = {"reviews": 10, "standing": 20, "history": 12, "milestones": 8, "decisions": 10, "done": 12,
               "questions": 8, "doing": 8, "blocked": 10, "effects": 25, "services": 10, "evidence": 12, "failing": 10,
               "changes": 20}


def state_line(entry: Mapping[str, Any]) -> str:
    """`unit [failed]: exit 1 (checkpoint #2); failing: ...` (acceptance checks marked)."""
    where = f" (checkpoint #{entry['checkpoint']})" if entry.get("checkpoint") else \
        " (since the checkpoint)" if entry.get("pending") else ""
    kind = " acceptance" if entry.get("acceptance") else ""
    if entry["state"] == "never_attempted":
        return f"{_name(entry['name'])} [never_attempted{kind}]: {quote_argv(entry['argv'])}"
    return failing_line({**entry, "pending": False, "state": entry["state"] + kind}) + where


def _verify_first(ledger: Ledger, rerun: bool | None) -> list[str]:
    """Verify first: whether the evidence was rerun, and sessions that built on an unverified handoff."""
    lines = []
    if rerun is False and ledger.checkpoint is not None and ledger.checkpoint.checks:
        lines.append("Evidence rerun: no, this decision comes from the record alone. First instruction: run "
                     f"`shiftgit verify {textsafe.one_line(ledger.run)}` before building on it.")
    elif rerun:
        lines.append("Evidence rerun: yes, the checkpoint's checks were run again here (see the reasons).")
    sessions = ledger.extra.get("sessions")
    unverified = [s for s in sessions if isinstance(s, Mapping) and s.get("verified_first") is False] \
        if isinstance(sessions, list) else []
    if unverified:
        names = ", ".join(f"{_name(s.get('agent'))} {_name(s.get('id'))}" for s in unverified[-3:])
        lines.append(f"Warning: work was built on an unverified handoff: session(s) {names} checkpointed without "
                     "running `shiftgit verify` first.")
    return lines


def _head(ledger: Ledger, where: str, prov: Provenance, decision: str | None, reasons: Sequence[str],
          constraint_cap: int, rerun: bool | None = None, listed: Sequence[str] | None = None) -> list[str]:
    """The head; `listed`: the constraint lines (default: every active one, cut at `constraint_cap`)."""
    contract = ledger.contract
    lines = [f"shiftgit briefing for run {textsafe.one_line(ledger.run)} (status: {quote(ledger.status)})"]
    if decision:
        lines.append(f"Decision: {decision}. Reasons: " + textsafe.one_line("; ".join(reasons), 1500))
    lines += _verify_first(ledger, rerun)
    lines.append(provenance_line(where, prov))
    if ledger.stop:
        lines.append(f"Stop recorded: {quote(ledger.stop.reason)}" + (f" {quote(ledger.stop.detail)}"
                                                                      if ledger.stop.detail else ""))
    lines.append(f"Goal: {quote(contract.goal, ESSENTIAL_CAP)}")
    lines.append(f"Stop condition: {quote(contract.stop_when, ESSENTIAL_CAP)}")
    active = ledger.active_constraints()
    listed = _constraint_lines(active, constraint_cap) if listed is None else listed
    every = "all listed" if len(listed) == len(active) else f"the first {len(listed) - 1} listed"  # + the more line
    lines.append(f"Active constraints ({len(active)}, {every}):" if active else "Active constraints: none")
    lines += listed
    point = ledger.checkpoint
    nxt = point.next if point else None
    lines.append(f"Next action: {quote(nxt.action, ESSENTIAL_CAP)}" if nxt and nxt.action
                 else "Next action: none recorded")
    if nxt and nxt.done_when:
        lines.append(f"Done when: {quote(nxt.done_when, ESSENTIAL_CAP)}")
    return lines


def build_briefing(ledger: Ledger, where: str, provenance: Provenance, *, decision: str | None = None,
                   reasons: Sequence[str] = (), services: Sequence[Mapping[str, Any]] = (),
                   changes: Mapping[str, Any] | None = None, failing: Sequence[Mapping[str, Any]] = (),
                   record: Sequence[str] = (), limit: int = LIMIT, rerun: bool | None = None,
                   plan: Sequence[str] = (), standing: Sequence[str] = ()) -> str:
    """The briefing text for `ledger` (found at repo path `where`), at most `limit` characters.

    `rerun`: whether the checks were run again for this decision (None: no decision context).
    `standing`: the repository memory's live rules (runs/memory.py), listed under "Standing rules"."""
    sections = {**_sections(ledger, services), **takeover_sections(changes, failing, record)}
    sections["reviews"] = Section("Open review feedback", review_lines(ledger), keep=5)
    sections["standing"] = Section("Standing rules (repository memory, each approved by a person)",
                                   [quote(line, ESSENTIAL_CAP) for line in standing], keep=10)
    sections["plan"] = Section("Recovery plan (the contract's inspect, escalate-when, rollback)",
                               [textsafe.one_line(line) for line in plan], keep=3)
    for name, cap in SECTION_MAX.items():
        extra = sections[name].lines[cap:]
        del sections[name].lines[cap:]
        sections[name].omitted += len(extra)
    head = _head(ledger, where, provenance, decision, reasons, ESSENTIAL_CAP, rerun)
    text = render(head, sections, ORDER, ledger.run)
    for floor in (True, False):
        text = trim(head, sections, ORDER, TRIM_ORDER, ledger.run, limit, floor) if len(text) > limit else text
    if len(text) > limit:  # the essential part alone is too long: shorten each constraint evenly
        text = _squeeze(ledger, where, provenance, decision, reasons, sections, limit, rerun)
    return text


def _squeeze(ledger: Ledger, where: str, provenance: Provenance, decision: str | None, reasons: Sequence[str],
             sections: Mapping[str, Section], limit: int, rerun: bool | None = None) -> str:
    """The essential part alone is too long: each constraint shortened evenly; when even the shortest lines of all
    of them cannot fit, the first ones that fit (PARTIAL_CAP each), and a line saying how many more and where."""
    rest = len(render([], sections, ORDER, ledger.run))
    active = ledger.active_constraints()
    fixed = len("\n".join(_head(ledger, where, provenance, decision, reasons, 0, rerun)))
    cap = max((limit - rest - fixed - 2) // max(len(active), 1), 8)
    head = _head(ledger, where, provenance, decision, reasons, cap, rerun)
    if len("\n".join(head)) + rest + 2 > limit:  # fewer constraints, each readable, rather than all unreadable
        more = _more_constraints(ledger.run, len(active))
        room = limit - rest - len("\n".join(_head(ledger, where, provenance, decision, reasons, 0, rerun, [more])))
        lines = _first_constraints(ledger.run, _constraint_lines(active, PARTIAL_CAP), room - len(more) - 3)
        head = _head(ledger, where, provenance, decision, reasons, cap, rerun, lines)
    return render(head, sections, ORDER, ledger.run, limit)


def _constraint_lines(active: Sequence[Constraint], cap: int) -> list[str]:
    return [f"- {quote(c.text, cap)} [{textsafe.one_line(c.id)}]" for c in active]


def _first_constraints(run: str, lines: list[str], room: int) -> list[str]:
    kept = 0
    while kept < len(lines) and len(lines[kept]) + 1 <= room:
        room -= len(lines[kept]) + 1
        kept += 1
    return lines if kept == len(lines) else [*lines[:kept], _more_constraints(run, len(lines) - kept)]


def _more_constraints(run: str, n: int) -> str:
    return (f"- (+{n} more active constraint(s) not shown: the briefing is bounded; `shiftgit show "
            f"{textsafe.one_line(run)} --json` lists every one)")


# -- what changed, what fails, where the record comes from (issue 10) ------------------------------

STATUS = {"A": "added", "M": "modified", "D": "deleted", "T": "type changed"}
COMMITS_SHOWN = 3
CHANGES_MORE = "(+{n} more not shown; `shiftgit resume {run} --json` lists them under changes)"


def takeover_sections(changes: Mapping[str, Any] | None, failing: Sequence[Mapping[str, Any]],
                      record: Sequence[str]) -> dict[str, Section]:
    return {
        "record": Section("Record", [textsafe.one_line(line) for line in record], keep=len(record),
                          empty="this work tree's ledger"),
        "failing": Section("Failing checks", [failing_line(f) for f in failing], keep=3),
        "changes": Section("Changed files since the run started", change_lines(changes or {}), keep=5,
                           empty="none", more=CHANGES_MORE),
    }


def change_lines(changes: Mapping[str, Any]) -> list[str]:
    """Committed paths with the commits that carried them (newest first), then uncommitted ones."""
    after = set(changes.get("after_checkpoint") or ())
    lines = []
    for entry in changes.get("committed") or ():
        commits = list(entry.get("commits") or ())
        carried = ", ".join(textsafe.one_line(c[:10]) for c in commits[:COMMITS_SHOWN])
        extra = len(commits) - COMMITS_SHOWN
        lines.append(f"{_name(entry['path'])} ({_name(STATUS.get(entry['status'], entry['status']))}), committed"
                     + (f" in {carried}" if carried else "") + (f" (+{extra} more commits)" if extra > 0 else ""))
    for entry in changes.get("uncommitted") or ():
        lines.append(f"{_name(entry['path'])} ({_name(STATUS.get(entry['status'], entry['status']))}), uncommitted"
                     + (", edited after the last checkpoint" if entry["path"] in after else ""))
    return lines


def failing_line(check: Mapping[str, Any]) -> str:
    ids = [_name(test) for test in check.get("failing") or ()]
    shown = ", ".join(ids[:FAILING_SHOWN]) + (f" (+{len(ids) - FAILING_SHOWN} more)" * (len(ids) > FAILING_SHOWN))
    state = f" [{_name(check['state'])}]" if check.get("state") else ""
    since = " (since the checkpoint)" if check.get("pending") else ""
    return (f"{_name(check['name'])}{state}: exit {_name(check.get('exit_code'))}"
            + (f"; failing: {shown}" if shown else "") + since
            + "; a later pass of a narrower command did not clear it" * bool(check.get("not_cleared_by")))


def _name(value: object) -> str:
    """A name, id or path from the record, shown bare but on one line: every control character escaped."""
    return textsafe.one_line(str(value), LINE_CAP)


def _safe(effect: Any) -> str:
    from shiftgit.effects.runner import safe_to_repeat  # it loads a dozen modules: only when there are effects
    return "yes" if safe_to_repeat(effect) else "no"
