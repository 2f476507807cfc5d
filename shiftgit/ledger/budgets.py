"""Budgets: what the contract lets a run spend (minutes, tokens, cost) against what it spent.

Tokens and cost are added by `checkpoint --tokens --cost`. Wall minutes accrue at every ledger
write, from the time since the previous write; a gap longer than IDLE_GAP_MINUTES (the session
was gone, nobody worked) counts as IDLE_GAP_MINUTES. Since each write starts the next gap, the
minutes of many sessions add up and no stretch is counted twice.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~4 ms to import (`status`): annotations only
if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Mapping
    from typing import Any

    from shiftgit.ledger.model import Ledger

IDLE_GAP_MINUTES = 30.0  # a longer gap between writes counts as idle, not as spend
KINDS = ("minutes", "tokens", "cost")


def _parse(text: str) -> dt.datetime:
    import datetime as dt  # here: `status` uses this module for `number` alone

    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def gap_minutes(since: str, at: str) -> float:
    """Minutes from one write to the next, capped; 0 for a clock that went backwards."""
    try:
        gap = (_parse(at) - _parse(since)).total_seconds() / 60
    except ValueError:
        return 0.0
    return min(max(gap, 0.0), IDLE_GAP_MINUTES)


def accrue(before: Ledger, after: Ledger) -> Ledger:
    """`after` with the wall minutes since `before` was written, unless its writer counted them already."""
    if after.updated_at == before.updated_at or after.spend.minutes != before.spend.minutes:
        return after
    gap = gap_minutes(before.updated_at, after.updated_at)
    if gap <= 0:
        return after
    from shiftgit.ledger.record import replace  # here: `status` uses this module and never builds a record

    return replace(after, spend=replace(after.spend, minutes=round(before.spend.minutes + gap, 3)))


def exhausted(ledger: Ledger) -> list[str]:
    """Each budget the run has used up, as `tokens: spent 1500 of 1000`."""
    return exhausted_in(ledger.contract.budgets.to_dict(), ledger.spend.to_dict())


def exhausted_in(limits: Mapping[str, Any], spend: Mapping[str, Any]) -> list[str]:
    """`exhausted` on the JSON: a contract's budgets (kind -> limit or None) and the run's spend."""
    return [f"{kind}: spent {number(spend[kind])} of {number(limits[kind])}"
            for kind in KINDS if limits.get(kind) is not None and spend[kind] >= limits[kind]]


def report(ledger: Ledger) -> dict[str, Any]:
    """Budgets, spend, what is left of each budget, and which are exhausted."""
    limits = ledger.contract.budgets
    left = {k: round(max(getattr(limits, k) - getattr(ledger.spend, k), 0), 3)
            for k in KINDS if getattr(limits, k) is not None}
    return {"budgets": {k: v for k, v in limits.to_dict().items() if v is not None},
            "spend": ledger.spend.to_dict(), "left": left, "exhausted": exhausted(ledger)}


FLAGS = {"minutes": "--time-budget", "tokens": "--token-budget", "cost": "--cost-budget"}


def require_budget(ledger: Ledger, what: str) -> None:
    """Once a budget is spent, nothing new runs until `amend` raises it (exit 4, with the spent figures)."""
    from shiftgit.errors import BudgetSpent

    spent = exhausted(ledger)
    if spent:
        flag = FLAGS[spent[0].partition(":")[0]]
        raise BudgetSpent(f"{what} was not run: the run's budget is spent ({'; '.join(spent)}); the owner raises it "
                          f"with `shiftgit amend {flag} N --reason R`, or stop with "
                          "`shiftgit stop --reason budget_exhausted`")


def number(value: float | int) -> str:
    """A budget or spend as a person writes it: `2000000`, `1.25`, never `2e+06`."""
    value = float(value)
    if value.is_integer():
        return str(int(value))
    return f"{value:.4f}".rstrip("0").rstrip(".")
