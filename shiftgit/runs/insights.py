"""Friction insights: what went wrong again and again across runs, and the change to the next contract.

Read from every run here and in the archive: recurring stop reasons (with their details), approvals
effects waited for, effects that ended unknown, constraints added mid-run (the contract lacked them),
amendments by field, checks that flipped between pass and fail, budgets overrun, reviewer actions and
review feedback. Each cluster names its kind, how many runs, which, and one suggested change;
`insights --suggest NAME` turns the suggestions into a template diff, written only with `--apply`.
"""

from __future__ import annotations

import copy
import difflib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from shiftgit import textsafe
from shiftgit.ledger.store import Store
from shiftgit.runs import templates
from shiftgit.runs.archive import documents

Doc = Mapping[str, Any]
ADVICE = {
    "blocked_external": "settle the outside dependency before the run starts and write it into the contract",
    "waiting_for_approval": "request the approvals up front (`shiftgit approval request KEY`) or allow the kind",
    "budget_exhausted": "raise the budget in the template, or cut the goal",
    "failed_after_retries": "add an acceptance check that catches the failure earlier",
    "context_limit": "split the goal into smaller runs",
    "crashed": "checkpoint more often, and let the agent hooks save the conversation",
    "user_paused": "agree on milestones to confirm (`checkpoint --milestone --confirm`)",
}
BUDGET_FLAGS = {"minutes": ("--time-budget", "time_budget"), "tokens": ("--token-budget", "token_budget"),
                "cost": ("--cost-budget", "cost_budget")}
TEMPLATE_FIELDS = {"owner": "owner", "scope": "scope", "allow": "allow", "forbid": "forbid", "accept": "accept",
                   "artifacts": "artifacts", "minutes": "time_budget", "tokens": "token_budget", "cost": "cost_budget"}


def _list(doc: Doc, key: str) -> list[Mapping[str, Any]]:
    value = doc.get(key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _map(doc: Doc, key: str) -> Mapping[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, Mapping) else {}


def _group(docs: Iterable[Doc], keys: Callable[[Doc], Iterable[tuple[str, Any]]]) -> dict[str, dict[str, Any]]:
    """key -> {"runs": [...], "values": [...]}: each run counted once per key."""
    groups: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for key, value in keys(doc):
            group = groups.setdefault(key, {"runs": [], "values": []})
            if doc.get("run") not in group["runs"]:
                group["runs"].append(doc.get("run"))
            group["values"].append(value)
    return groups


def _mid_run(doc: Doc) -> list[tuple[str, Any]]:
    started = str(doc.get("created_at") or "")
    return [(str(c.get("text")), c.get("text")) for c in _list(doc, "constraints") if c.get("text") and (
        c.get("source") == "added" or ("source" not in c and str(c.get("added_at") or "") > started))]


OLD_STOPS = {"failed_after_retry_budget": "failed_after_retries", "cancelled": "user_paused",
             "context_exhausted": "context_limit"}  # schema 1 names, counted with their schema 2 ones


def _stops(doc: Doc) -> list[tuple[str, Any]]:
    stop = _map(doc, "stop")
    reason = OLD_STOPS.get(str(stop.get("reason")), stop.get("reason"))
    return [(str(reason), stop.get("detail"))] if reason and reason != "completed" else []


def _unknown_effects(doc: Doc) -> list[tuple[str, Any]]:
    return [(str(e.get("kind")), e.get("key")) for e in _list(doc, "effects") if e.get("state") in ("unknown",
                                                                                                     "attempted")]


def _approvals(doc: Doc) -> list[tuple[str, Any]]:
    kinds = {e.get("key"): e.get("kind") for e in _list(doc, "effects")}
    return [(str(kinds.get(a.get("key")) or a.get("key")), a.get("key")) for a in _list(doc, "approvals")]


def _amendments(doc: Doc) -> list[tuple[str, Any]]:
    return [(str(a.get("field")), a.get("new")) for a in _list(doc, "amendments")]


def _flaky(doc: Doc) -> list[tuple[str, Any]]:
    point = _map(doc, "checkpoint")
    checks = [*_list(point, "checks"), *_list(doc, "pending_checks")]
    results: dict[str, set[bool]] = {}
    for check in checks:
        results.setdefault(str(check.get("name")), set()).add(check.get("exit_code") == 0)
    states = _list(point, "check_states") or _list(doc, "check_states")  # check states (issue 9), when recorded
    for state in states:
        if state.get("flipped") or state.get("state") == "flaky":
            results.setdefault(str(state.get("name")), set()).update({True, False})
    return [(name, None) for name, seen in results.items() if len(seen) > 1]


def _overruns(doc: Doc) -> list[tuple[str, Any]]:
    budgets, spend = _map(_map(doc, "contract"), "budgets"), _map(doc, "spend")
    return [(kind, spend.get(kind)) for kind in BUDGET_FLAGS
            if isinstance(budgets.get(kind), int | float) and isinstance(spend.get(kind), int | float)
            and spend[kind] > budgets[kind]]


def _reviewer(doc: Doc) -> list[tuple[str, Any]]:
    action = _map(doc, "receipt").get("reviewer_action")
    found = [(" ".join(str(action).lower().split()), action)] if action else []
    found += [(f"review on {r.get('file')}", r.get("text")) for r in _list(doc, "reviews") if r.get("file")]
    return found


def clusters(store: Store, since: str | None = None, minimum: int = 2) -> list[dict[str, Any]]:
    docs = [doc for doc, _ in documents(store) if since is None or str(doc.get("updated_at") or "") >= since]
    mid = _group(docs, _mid_run)
    out: list[dict[str, Any]] = []
    kinds = (("stop_reason", _stops, _stop_advice(mid)), ("constraint_added", _mid_run, _constraint),
             ("approval_wait", _approvals, _approval), ("effect_unknown", _unknown_effects, _unknown),
             ("amendment", _amendments, _amendment), ("flaky_check", _flaky, _flaky_advice),
             ("budget_overrun", _overruns, _overrun), ("reviewer_action", _reviewer, _review))
    for kind, keys, suggest in kinds:
        for key, group in _group(docs, keys).items():
            runs = sorted(str(r) for r in group["runs"])
            if len(runs) < minimum:
                continue
            text, change = suggest(key, group, len(runs))
            out.append({"kind": kind, "key": key, "count": len(runs), "runs": runs, "suggestion": text,
                        "template": change})
    return sorted(out, key=lambda c: (-c["count"], c["kind"], c["key"]))


def _stop_advice(mid: Mapping[str, Mapping[str, Any]]) -> Callable[..., tuple[str, dict[str, Any]]]:
    def advise(reason: str, group: Mapping[str, Any], n: int) -> tuple[str, dict[str, Any]]:
        details = Counter(str(d) for d in group["values"] if d)
        detail = f" ({details.most_common(1)[0][0]})" if details else ""
        added = [text for text, g in mid.items() if set(group["runs"]) <= set(g["runs"])]
        if added:
            flags = " ".join(f"--constraint {_shell(t)}" for t in added)
            return (f"{n} runs stopped {reason}{detail} after adding the same rule mid-run: add `{flags}` to the "
                    "template", {"constraints": added})
        return f"{n} runs stopped {reason}{detail}: {ADVICE.get(reason, 'look at what they have in common')}", {}
    return advise


def _constraint(text: str, group: Mapping[str, Any], n: int) -> tuple[str, dict[str, Any]]:
    return (f"{n} runs added the constraint {_shell(text)} mid-run (the contract lacked it): add "
            f"`--constraint {_shell(text)}` to the template", {"constraints": [text]})


def _approval(kind: str, group: Mapping[str, Any], n: int) -> tuple[str, dict[str, Any]]:
    return (f"{n} runs waited for an approval of a {kind} effect: request it when the run starts, or decide "
            f"in the contract (`--allow {kind}` / `--forbid {kind}`)", {})


def _unknown(kind: str, group: Mapping[str, Any], n: int) -> tuple[str, dict[str, Any]]:
    return (f"{n} runs left a {kind} effect with an unknown outcome: record a probe (`effect run --probe CMD`) "
            "so its outcome can be checked", {})


def _amendment(field: str, group: Mapping[str, Any], n: int) -> tuple[str, dict[str, Any]]:
    values = [json.dumps(v, sort_keys=True) for v in group["values"]]
    common = json.loads(Counter(values).most_common(1)[0][0]) if values else None
    target = TEMPLATE_FIELDS.get(field)
    if target is None or common is None:
        return f"{n} runs amended {field}: agree on it before the run starts", {}
    return (f"{n} runs amended {field} (most often to {json.dumps(common)}): make it the template's default",
            {"contract": {target: common}})


def _flaky_advice(name: str, group: Mapping[str, Any], n: int) -> tuple[str, dict[str, Any]]:
    return (f"check {name!r} flipped between pass and fail in {n} runs: fix or quarantine it before it is an "
            "acceptance check", {})


def _overrun(kind: str, group: Mapping[str, Any], n: int) -> tuple[str, dict[str, Any]]:
    flag, field = BUDGET_FLAGS[kind]
    most = max(v for v in group["values"] if isinstance(v, int | float))
    value: float | int = int(most * 1.2) + 1 if kind == "tokens" else round(most * 1.2, 2)
    return f"{n} runs overran their {kind} budget (up to {most}): set `{flag} {value}` in the template", \
        {"contract": {field: value}}


def _review(key: str, group: Mapping[str, Any], n: int) -> tuple[str, dict[str, Any]]:
    return (f"{n} runs ended with the same review ({key}): turn it into an acceptance check (`--accept`) so the "
            "run checks it itself", {})


def _shell(text: str) -> str:
    import shlex

    return shlex.quote(text)


def text(found: list[dict[str, Any]]) -> str:
    if not found:
        return "no recurring friction found"
    return "\n".join(f"{c['count']}x {c['kind']} {textsafe.one_line(c['key'], 80)} ({', '.join(c['runs'][:6])}):"
                     f"\n  {textsafe.one_line(c['suggestion'], 400)}" for c in found)


def suggest(store: Store, name: str, found: list[dict[str, Any]], *, apply: bool) -> dict[str, Any]:
    """The template the clusters suggest (the current one changed), as a diff; written only with `apply`."""
    existing = templates.read_optional(store, name)
    current = existing or {"schema_version": templates.TEMPLATE_VERSION}
    proposed = copy.deepcopy(current)
    used = []
    for cluster in found:
        change = cluster["template"]
        if not change:
            continue
        for rule in change.get("constraints", []):
            if rule not in proposed.setdefault("constraints", []):
                proposed["constraints"].append(rule)
        for field, value in (change.get("contract") or {}).items():
            proposed.setdefault("contract", {}).setdefault(field, value)
        used.append({"kind": cluster["kind"], "key": cluster["key"], "runs": cluster["runs"]})
    if used and proposed != current:
        proposed["suggested_by"] = used
    before = json.dumps(existing, indent=2, sort_keys=True).splitlines() if existing else []
    after = json.dumps(proposed, indent=2, sort_keys=True).splitlines()
    where = store.rel(templates.path(store, name))
    diff = "\n".join(difflib.unified_diff(before, after, f"a/{where}" if existing else "/dev/null", f"b/{where}",
                                           lineterm="")) if proposed != current else ""
    written = False
    if apply and diff:
        templates.write(store, name, proposed)
        written = True
    return {"template": name, "path": where, "diff": diff, "proposed": proposed, "written": written,
            "clusters": used}
