"""Merge two branches' copies of one run's ledger by id (the `shiftgit merge-driver`). No I/O.

Inputs are validated ledger documents (`Ledger.to_dict()` form); the result is a document and the
list of real conflicts. The rules, each deterministic and independent of which side is "ours":

- records with an id (constraints, amendments, pending checks) or a key (effects, approvals) are
  unioned; a record on both sides is merged 3-way: a lifted constraint beats an active one (a lift is
  final), a text change is a conflict; effects keep the furthest state (EFFECT_RANK) and the union of
  their histories; approvals keep the most restrictive decision (APPROVAL_RANK);
- the checkpoint with the higher (seq, at, id) stays `checkpoint`; the other becomes a one-line
  `history` entry; history is unioned by id, sorted by (seq, at, id) and capped like the ledger caps it;
- contract and other plain fields merge 3-way: changed on one side takes that side, changed to
  different values on both sides is a conflict (the result keeps our value);
- spend adds up: base + (ours - base) + (theirs - base);
- list order: each side's own order is kept, the two are interleaved by time then id.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shiftgit.ledger.model import EFFECT_RANK, HISTORY_CAP

Doc = dict[str, Any]
_MISSING: Any = object()

# Any decision beats a request; when two sides decided differently the more restrictive one stands
# (a human can grant again; nothing runs on a grant that was also denied).
APPROVAL_RANK = {"requested": 0, "granted": 1, "expired": 2, "denied": 3}
STATUS_RANK = {"active": 0, "stopped": 1, "completed": 2, "blocked": 2, "abandoned": 2}
AMEND_OPTIONS = {
    "goal": "--goal", "stop_when": "--stop-when", "owner": "--owner", "allow": "--allow", "forbid": "--forbid",
    "artifacts": "--artifact", "accept": "--accept", "scope": "--scope", "budgets.minutes": "--time-budget",
    "budgets.tokens": "--token-budget", "budgets.cost": "--cost-budget",
}


@dataclass(frozen=True)
class Conflict:
    """A field both sides changed differently; the merged result holds our value."""

    field: str
    ours: Any
    theirs: Any
    fix: str

    def line(self, where: str) -> str:
        return (f"{where}: {self.field} changed on both sides: ours {_short(self.ours)}, theirs "
                f"{_short(self.theirs)}; kept ours. Resolve with {self.fix}, then `git add {where}`")


@dataclass(frozen=True)
class MergeResult:
    document: Doc
    conflicts: tuple[Conflict, ...]


def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _short(value: Any) -> str:
    text = canon(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Merger:
    def __init__(self, run: str) -> None:
        self.run = run
        self.conflicts: list[Conflict] = []

    def conflict(self, field: str, ours: Any, theirs: Any, fix: str | None = None) -> None:
        how = fix or f"`shiftgit show {self.run} --json` and a fresh record of the right value"
        self.conflicts.append(Conflict(field, ours, theirs, how))

    def three_way(self, path: str, base: Any, ours: Any, theirs: Any, fix: str | None = None) -> Any:
        """Changed on one side: that side. Changed on both the same way: it. Else a conflict (ours kept)."""
        if ours == theirs or theirs == base:
            return ours
        if ours == base:
            return theirs
        if isinstance(ours, dict) and isinstance(theirs, dict):
            old = base if isinstance(base, dict) else {}
            out = {}
            for key in _union_keys(ours, theirs):
                value = self.three_way(f"{path}.{key}", old.get(key, _MISSING), ours.get(key, _MISSING),
                                       theirs.get(key, _MISSING), fix)
                if value is not _MISSING:
                    out[key] = value
            return out
        ident = _keyed_by(ours, theirs) if isinstance(ours, list) and isinstance(theirs, list) else None
        if ident is not None:
            return self.records(path, base if isinstance(base, list) else [], ours, theirs, ident,
                                lambda b, o, t: self.three_way(f"{path}[{o[ident]}]", b, o, t, fix))
        self.conflict(path, None if ours is _MISSING else ours, None if theirs is _MISSING else theirs, fix)
        return ours

    def records(self, path: str, base: Sequence[Doc], ours: Sequence[Doc], theirs: Sequence[Doc], key: str,
                merge_one: Callable[[Any, Doc, Doc], Doc], time: str = "") -> list[Doc]:
        """Union by `key`; a record on both sides goes through merge_one(base, ours, theirs)."""
        old = {r[key]: r for r in base}
        mine = {r[key]: r for r in ours}
        other = {r[key]: r for r in theirs}
        merged = {k: merge_one(old.get(k, _MISSING), mine[k], other[k]) if k in mine and k in other
                  else mine[k] if k in mine else other[k] for k in _union_keys(mine, other)}
        order = _interleave([r[key] for r in ours], [r[key] for r in theirs],
                            lambda k: (str(merged[k].get(time, "")) if time else "", k))
        return [merged[k] for k in order]


def _union_keys(a: Iterable[str], b: Iterable[str]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))


def _keyed_by(*lists: Sequence[Any]) -> str | None:
    for key in ("id", "key"):
        if all(isinstance(r, dict) and isinstance(r.get(key), str) for items in lists for r in items):
            return key
    return None


def _interleave(a: Sequence[str], b: Sequence[str], sort_key: Callable[[str], Any]) -> list[str]:
    """Keep each side's order; at each step take the smaller head. Symmetric in a and b."""
    out: list[str] = []
    seen: set[str] = set()
    i = j = 0
    while True:
        while i < len(a) and a[i] in seen:
            i += 1
        while j < len(b) and b[j] in seen:
            j += 1
        if i == len(a) and j == len(b):
            return out
        if j == len(b) or (i < len(a) and sort_key(a[i]) <= sort_key(b[j])):
            pick = a[i]
        else:
            pick = b[j]
        out.append(pick)
        seen.add(pick)


def _pick(records: Iterable[Doc], rank: Callable[[Doc], Any]) -> Doc:
    """The highest by rank, ties broken by the canonical text: the same answer from either side."""
    return max(records, key=lambda r: (rank(r), canon(r)))


# -- record rules --------------------------------------------------------------------------------

def _constraint(m: _Merger, base: Any, ours: Doc, theirs: Doc) -> Doc:
    if ours == theirs:
        return ours
    lifted = [c for c in (ours, theirs) if c.get("status") == "lifted"]
    if lifted:  # a lift is final; two lifts: the earlier one is the record
        result = min(lifted, key=lambda c: (str(c.get("lifted_at") or ""), canon(c)))
    else:
        result = m.three_way(f"constraints[{ours['id']}]", base, ours, theirs)
    if ours.get("text") != theirs.get("text"):
        cid = ours["id"]
        m.conflict(f"constraints[{cid}].text", ours.get("text"), theirs.get("text"),
                   f"`shiftgit constraint lift {cid} --run {m.run} --reason ...` and `shiftgit constraint add "
                   f"TEXT --run {m.run}`")
        result = {**result, "text": ours.get("text")}
    return result


def _effect(m: _Merger, base: Any, ours: Doc, theirs: Doc) -> Doc:
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    best = _pick((ours, theirs), lambda e: (EFFECT_RANK.get(e.get("state", ""), -1), str(e.get("updated_at") or "")))
    history = {canon(h): h for h in [*ours.get("history", []), *theirs.get("history", [])]}
    events = sorted(history.values(), key=lambda h: (str(h.get("at", "")), canon(h)))
    return {**best, "history": events, "attempts": max(ours.get("attempts", 0), theirs.get("attempts", 0))}


def _approval(m: _Merger, base: Any, ours: Doc, theirs: Doc) -> Doc:
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return _pick((ours, theirs), lambda a: (APPROVAL_RANK.get(a.get("state", ""), -1), str(a.get("decided_at") or "")))


def _checkpoints(ours: Doc, theirs: Doc) -> tuple[Doc | None, list[Doc]]:
    """The winning checkpoint and the merged, capped history (the loser summarised in one line)."""
    points = [p for p in (ours.get("checkpoint"), theirs.get("checkpoint")) if p]
    winner = _pick(points, lambda p: (p["seq"], p["at"])) if points else None
    entries: dict[str, Doc] = {}
    for entry in sorted([*ours.get("history", []), *theirs.get("history", [])], key=canon):
        entries[entry["id"]] = entry  # one id twice (never in practice): the same pick from either side
    for point in points:
        if point is not winner and point["id"] not in entries:
            entries[point["id"]] = {k: point.get(k) for k in ("id", "seq", "at", "step", "base")}
    if winner is not None:
        entries.pop(winner["id"], None)
    history = sorted(entries.values(), key=lambda h: (h["seq"], h["at"], h["id"]))
    return winner, history[-HISTORY_CAP:]


def _spend(base: Any, ours: Doc, theirs: Doc) -> Doc:
    """base + (ours - base) + (theirs - base) per number; without a base, the larger."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    out = dict(theirs)
    out.update(ours)
    for key in ("tokens", "cost", "minutes"):
        o, t = ours.get(key, 0), theirs.get(key, 0)
        if not isinstance(base, dict):
            out[key] = max(o, t)
            continue
        total = (o + t) - base.get(key, 0)
        out[key] = max(round(total, 6), 0) if isinstance(total, float) else max(total, 0)
    return out


def _ending(m: _Merger, base: Doc | None, ours: Doc, theirs: Doc) -> Doc:
    """status, stop and receipt move together: the side that got further, else the later record."""
    fields = ("status", "stop", "receipt")
    sides = [{f: side.get(f) for f in fields} for side in (ours, theirs)]
    old = {f: base.get(f) for f in fields} if base else None
    if sides[0] == sides[1] or sides[1] == old:
        return sides[0]
    if sides[0] == old:
        return sides[1]
    finals = {str(side["status"]) for side in sides if STATUS_RANK.get(str(side["status"])) == 2}
    if len(finals) == 2:
        m.conflict("status", sides[0]["status"], sides[1]["status"],
                   f"`shiftgit finish --run {m.run} --status STATUS`")
        return sides[0]

    def rank(side: Doc) -> Any:
        stamps = [str((side.get(f) or {}).get("at") or "") for f in ("stop", "receipt")]
        return STATUS_RANK.get(str(side["status"]), 0), max(stamps)

    return _pick(sides, rank)


# -- the whole ledger ----------------------------------------------------------------------------

def merge_ledgers(base: Mapping[str, Any] | None, ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> MergeResult:
    """Merge two validated ledger documents of the same run against their common ancestor (or None)."""
    b: Doc | None = dict(base) if base is not None else None
    o, t = dict(ours), dict(theirs)
    m = _Merger(str(o.get("run")))
    old: Doc = b or {}
    out: Doc = {}
    for key in _union_keys(o, t):
        if key in _RECORD_RULES:
            ident, time, rule = _RECORD_RULES[key]
            out[key] = m.records(key, old.get(key, []), o.get(key, []), t.get(key, []), ident,
                                 functools.partial(rule, m), time)
        elif key in ("created_at", "updated_at") and key in o and key in t and o[key] != t[key] != old.get(key):
            out[key] = min(o[key], t[key]) if key == "created_at" else max(o[key], t[key])
        elif key not in _SPECIAL:
            value = m.three_way(key, old.get(key, _MISSING), o.get(key, _MISSING), t.get(key, _MISSING))
            if value is not _MISSING:
                out[key] = value
    out["contract"] = _contract(m, old.get("contract"), o["contract"], t["contract"])
    out.update(_ending(m, b, o, t))
    out["checkpoint"], out["history"] = _checkpoints(o, t)
    out["pending_checks"] = _pending(m, old.get("pending_checks", []), o, t, out["checkpoint"])
    out["spend"] = _spend(old.get("spend") if b is not None else None, o.get("spend", {}), t.get("spend", {}))
    if "lease" in o or "lease" in t:
        out["lease"] = _lease(o.get("lease"), t.get("lease"))
    return MergeResult(out, tuple(m.conflicts))


_SPECIAL = ("checkpoint", "history", "pending_checks", "spend", "status", "stop", "receipt", "contract", "lease")


def _lease(ours: Any, theirs: Any) -> Any:
    """The owner lease: the newer epoch's (then the later renewal), with every epoch either side recorded."""
    sides = [side for side in (ours, theirs) if isinstance(side, dict)]
    if len(sides) < 2:
        return sides[0] if sides else None
    winner = max(sides, key=lambda side: (side.get("epoch") or 0, str(side.get("renewed_at") or "")))
    epochs = {e.get("epoch"): e for side in sides for e in side.get("epochs") or [] if isinstance(e, dict)}
    return {**winner, "epochs": [epochs[k] for k in sorted(epochs, key=lambda k: k or 0)]}


def _pending(m: _Merger, base: Sequence[Doc], ours: Doc, theirs: Doc, winner: Doc | None) -> list[Doc]:
    """Checks since the last checkpoint: a base check gone from one side was consumed by a checkpoint there."""
    sides = [{c["id"] for c in side.get("pending_checks", [])} for side in (ours, theirs)]
    consumed = {c["id"] for c in base if not (c["id"] in sides[0] and c["id"] in sides[1])}
    consumed |= {c["id"] for c in (winner or {}).get("checks", [])}
    pending = m.records("pending_checks", base, ours.get("pending_checks", []), theirs.get("pending_checks", []),
                        "id", lambda b, o, t: m.three_way(f"pending_checks[{o['id']}]", b, o, t), "started_at")
    return [c for c in pending if c["id"] not in consumed]


def _contract(m: _Merger, base: Any, ours: Doc, theirs: Doc, prefix: str = "") -> Doc:
    old = base if isinstance(base, dict) else {}
    out: Doc = {}
    for key in _union_keys(ours, theirs):
        if key == "budgets" and not prefix:
            out[key] = _contract(m, old.get(key), ours.get(key, {}), theirs.get(key, {}), "budgets.")
            continue
        path = prefix + key
        option = AMEND_OPTIONS.get(path, f"--{key.replace('_', '-')}")
        fix = f"`shiftgit amend --run {m.run} {option} VALUE --reason ...`"
        value = m.three_way(f"contract.{path}", old.get(key, _MISSING), ours.get(key, _MISSING),
                            theirs.get(key, _MISSING), fix)
        if value is not _MISSING:
            out[key] = value
    return out


def _amendment(m: _Merger, base: Any, ours: Doc, theirs: Doc) -> Doc:
    result: Doc = m.three_way(f"amendments[{ours['id']}]", base, ours, theirs)
    return result


_RecordRule = Callable[[_Merger, Any, Doc, Doc], Doc]
_RECORD_RULES: dict[str, tuple[str, str, _RecordRule]] = {
    "constraints": ("id", "added_at", _constraint),
    "amendments": ("id", "at", _amendment),
    "effects": ("key", "created_at", _effect),
    "approvals": ("key", "requested_at", _approval),
}
