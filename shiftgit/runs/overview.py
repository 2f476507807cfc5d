"""A run's line in `status`, from its ledger's JSON: no model is built for a read-only glance.

`status` reads every run; at 1,000 runs building the model was most of its time. The JSON is the
schema-checked document (`Store.document`), so every value has the type the schema says; what a
record leaves out takes the model's default (ledger/model.py), and the row is what the model gave.
"""

from __future__ import annotations

from shiftgit.ledger.budgets import exhausted_in

TYPE_CHECKING = False  # typing costs ~4 ms to import (`status`): annotations only
if TYPE_CHECKING:
    from typing import Any

SPEND = {"tokens": 0, "cost": 0.0, "minutes": 0.0}  # model.Spend's defaults
STOP = {"detail": None, "closed": None}  # model.Stop's defaults


def row(document: dict[str, Any]) -> dict[str, Any]:
    """The run's status row (render.status_report adds where its newest record is)."""
    point = document.get("checkpoint")
    stop = document.get("stop")
    spend = {**SPEND, **(document.get("spend") or {})}
    limits = {k: v for k, v in (document["contract"].get("budgets") or {}).items() if v is not None}
    return {
        "id": document["run"], "status": document.get("status", "active"), "goal": document["contract"]["goal"],
        "stop": {**STOP, **stop} if stop else None,
        "checkpoint": point["seq"] if point else None, "step": point.get("step") if point else None,
        "next": (point.get("next") or {}).get("action") if point else None, "updated_at": document["updated_at"],
        "pending_checks": len(document.get("pending_checks") or ()),
        "spend": spend, "budgets": limits, "budget_exhausted": exhausted_in(limits, spend),
        "unknown_effects": unknown_effects(document.get("effects") or ()),
        "pending_approvals": [a["key"] for a in document.get("approvals") or () if a.get("state", "requested")
                              == "requested"],
    }


def unknown_effects(effects: Any) -> list[str]:
    """effects.runner.unknown on the JSON: attempted by a process that is gone (or elsewhere)."""
    return unknown([(e["key"], e.get("state", "planned"), e.get("runner")) for e in effects])


def unknown(states: list[tuple[str, str, Any]]) -> list[str]:
    """The keys of (key, state, runner) whose outcome nobody knows (effects.runner.state_of is `unknown`)."""
    if not any(state == "attempted" for _, state, _ in states):
        return [key for key, state, _ in states if state == "unknown"]
    from shiftgit import procs

    return [key for key, state, runner in states
            if state == "unknown" or (state == "attempted" and procs.is_alive(runner) is not True)]
