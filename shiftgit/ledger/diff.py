"""What a staged ledger dropped or rewrote, compared with the ledger in HEAD (commit gate rule 5).

Pure functions on raw JSON documents, compared by id or key, never by position. A record may
change only the way shiftgit changes it, leaving a trace in the record itself:
- a constraint: only `active` -> `lifted`, with a reason (`constraint lift`);
- a contract field: only with a new amendment whose `new` is the staged value (`amend`);
- an amendment: never (it is the record of a change);
- an effect: never dropped; its key, kind, reversibility and creation never change, and a
  completed effect stays completed or becomes compensated, a compensated one stays so;
- an approval: never dropped; a decision (granted, denied, expired) changes only with the old
  decision kept in the approval's `history`;
- a checkpoint the staged ledger keeps (same id): its evidence (checks, files, tree, base,
  snapshot) never changes;
- a done, in-progress or blocked item, an open question or a decision leaves the latest checkpoint
  only through `checkpoint --resolve TEXT --reason R` (recorded in `resolved`), or as the oldest
  entries a full capped list drops.
"""

from __future__ import annotations

from _collections_abc import Mapping  # = collections.abc's, without the collections package

from shiftgit.ledger.canonical import current

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, NamedTuple

    Doc = Mapping[str, Any]
else:
    from shiftgit.tuples import NamedTuple

BUDGETS = ("minutes", "tokens", "cost")
AMEND_FLAGS = {"goal": "--goal", "stop_when": "--stop-when", "owner": "--owner", "allow": "--allow",
               "forbid": "--forbid", "artifacts": "--artifact", "accept": "--accept", "scope": "--scope",
               "minutes": "--time-budget", "tokens": "--token-budget", "cost": "--cost-budget"}
EVIDENCE = ("checks", "files", "tree", "base", "snapshot")
DECIDED = ("granted", "denied", "expired")
FINAL_EFFECT = {"completed": ("completed", "compensated"), "compensated": ("compensated",)}
_MISSING = object()


class Finding(NamedTuple):
    """One dropped or rewritten record: what happened, and the shiftgit command that changes it properly."""

    kind: str
    what: str
    fix: str


def findings(old: Doc, new: Doc | None, run: str) -> list[Finding]:
    """Everything `new` (the staged ledger; None when deleted) lost or rewrote from `old` (HEAD's)."""
    if new is None:
        return [Finding("ledger", f"the ledger of run {run} is deleted", "restore it: `git checkout HEAD -- "
                        f".shift/runs/{run}/ledger.json`; end a run with `shiftgit finish --run {run}`")]
    old, new = current(old), current(new)
    return [*_constraints(old, new, run), *_contract(old, new, run), *_amendments(old, new),
            *_effects(old, new, run), *_approvals(old, new, run), *_evidence(old, new), *_items(old, new, run)]


def _records(doc: Doc, name: str, key: str) -> dict[Any, Mapping[str, Any]]:
    items = doc.get(name)
    if not isinstance(items, list):
        return {}
    return {item.get(key): item for item in items if isinstance(item, Mapping)}


def _without(record: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in keys}


# -- constraints -----------------------------------------------------------------------------------

def _constraints(old: Doc, new: Doc, run: str) -> Iterator[Finding]:
    now = _records(new, "constraints", "id")
    for cid, was in _records(old, "constraints", "id").items():
        lift = f"constraints end only as lifted: `shiftgit constraint lift {cid} --run {run} --reason \"...\"`"
        text = was.get("text")
        kept = now.get(cid)
        if kept is None:
            yield Finding("constraint", f"constraint {cid} ({text!r}) was dropped", lift)
        elif kept != was and not _is_lift(was, kept):
            changed = sorted(k for k in was.keys() | kept.keys() if was.get(k, _MISSING) != kept.get(k, _MISSING))
            yield Finding("constraint", f"constraint {cid} ({text!r}) was rewritten ({', '.join(changed)})", lift)


def _is_lift(was: Mapping[str, Any], now: Mapping[str, Any]) -> bool:
    reason = now.get("reason")
    return (was.get("status") == "active" and now.get("status") == "lifted" and isinstance(reason, str)
            and bool(reason.strip()) and _without(was, "status", "lifted_at", "reason")
            == _without(now, "status", "lifted_at", "reason"))


# -- the contract and its amendments ---------------------------------------------------------------

def _fields(contract: Any) -> dict[str, Any]:
    """Contract fields by amendment name: budgets flattened to minutes / tokens / cost."""
    if not isinstance(contract, Mapping):
        return {}
    fields = {k: v for k, v in contract.items() if k != "budgets"}
    budgets = contract.get("budgets")
    if isinstance(budgets, Mapping):
        fields.update({k: v for k, v in budgets.items()})
    return fields


def _contract(old: Doc, new: Doc, run: str) -> Iterator[Finding]:
    before, after = _fields(old.get("contract")), _fields(new.get("contract"))
    known = set(_records(old, "amendments", "id"))
    amended: dict[str, Any] = {}
    for aid, record in _records(new, "amendments", "id").items():
        if aid not in known:
            amended[str(record.get("field"))] = record.get("new")  # the latest amendment of a field wins
    for name, value in before.items():
        now = after.get(name, _MISSING)
        if now == value or (name in amended and amended[name] == now):
            continue
        flag = AMEND_FLAGS.get(name, f"--{name.replace('_', '-')}")
        how = "dropped" if now is _MISSING else "changed"
        yield Finding("contract", f"contract field {name} was {how} without an amendment",
                      f"contract fields change only by `shiftgit amend --run {run} {flag} VALUE --reason \"...\"`")


def _amendments(old: Doc, new: Doc) -> Iterator[Finding]:
    now = _records(new, "amendments", "id")
    for aid, was in _records(old, "amendments", "id").items():
        if now.get(aid) != was:
            how = "dropped" if aid not in now else "rewritten"
            yield Finding("amendment", f"amendment {aid} (of {was.get('field')}) was {how}",
                          "amendments are the record of contract changes: keep them as they are")


# -- effects and approvals -------------------------------------------------------------------------

def _effects(old: Doc, new: Doc, run: str) -> Iterator[Finding]:
    now = _records(new, "effects", "key")
    for key, was in _records(old, "effects", "key").items():
        fix = f"effect states change only by `shiftgit effect reconcile {key} --run {run} --state STATE --evidence ...`"
        kept = now.get(key)
        if kept is None:
            yield Finding("effect", f"effect {key} ({was.get('kind')}, {was.get('state')}) was dropped", fix)
            continue
        changed = [k for k in ("kind", "reversibility", "created_at") if kept.get(k) != was.get(k)]
        allowed = FINAL_EFFECT.get(str(was.get("state")))
        if allowed is not None and kept.get("state") not in allowed:
            changed.append(f"state {was.get('state')} -> {kept.get('state')}")
        if changed:
            yield Finding("effect", f"effect {key} was rewritten ({', '.join(changed)})", fix)


def _approvals(old: Doc, new: Doc, run: str) -> Iterator[Finding]:
    now = _records(new, "approvals", "key")
    for key, was in _records(old, "approvals", "key").items():
        fix = f"approvals change only by `shiftgit approval grant|deny {key} --by WHO`"
        kept = now.get(key)
        if kept is None:
            yield Finding("approval", f"the approval of {key} ({was.get('state')}) was dropped", fix)
        elif was.get("state") in DECIDED and _decision(kept) != _decision(was) and not _kept_in_history(was, kept):
            yield Finding("approval", f"the {was.get('state')} approval of {key} was rewritten, its decision "
                          "not kept in its history", fix)


def _decision(record: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    return record.get("state"), record.get("by"), record.get("decided_at")


def _kept_in_history(was: Mapping[str, Any], now: Mapping[str, Any]) -> bool:
    history = now.get("history")
    return isinstance(history, list) and any(
        isinstance(h, Mapping) and _decision(h) == _decision(was) for h in history)


# -- evidence of a checkpoint the staged ledger keeps ----------------------------------------------

def _evidence(old: Doc, new: Doc) -> Iterator[Finding]:
    was, now = old.get("checkpoint"), new.get("checkpoint")
    if not isinstance(was, Mapping) or not isinstance(now, Mapping) or was.get("id") != now.get("id"):
        return
    changed = [k for k in EVIDENCE if was.get(k, _MISSING) != now.get(k, _MISSING)]
    if changed:
        yield Finding("evidence", f"checkpoint #{was.get('seq')} ({was.get('id')}) kept its id but its evidence "
                      f"was rewritten ({', '.join(changed)})",
                      "evidence is what ran: record new evidence with `shiftgit check` and a new `shiftgit checkpoint`")


# -- open items, questions, decisions (no summary drift) ---------------------------------------------

ITEM_KINDS = ("done", "doing", "blocked", "questions", "decisions")
ITEM_CAPS = {"done": 50, "decisions": 50}  # model.DONE_CAP, DECISIONS_CAP: the oldest drop from a full list


def _items(old: Doc, new: Doc, run: str) -> Iterator[Finding]:
    was, now = old.get("checkpoint"), new.get("checkpoint")
    if not isinstance(was, Mapping) or not isinstance(now, Mapping):
        return
    resolved = {(r.get("kind"), r.get("text")) for r in new.get("resolved") or () if isinstance(r, Mapping)}
    for kind in ITEM_KINDS:
        kept = [i for i in now.get(kind) or () if isinstance(i, Mapping)]
        texts = {i.get("text") for i in kept}
        oldest = min((i.get("seq") or 0 for i in kept), default=0)
        full = kind in ITEM_CAPS and len(kept) >= ITEM_CAPS[kind]
        for item in was.get(kind) or ():
            text = item.get("text") if isinstance(item, Mapping) else None
            if text in texts or (kind, text) in resolved or (full and (item.get("seq") or 0) <= oldest):
                continue
            yield Finding("item", f"the {kind} entry {text!r} disappeared from the ledger without a resolution",
                          f"close it with `shiftgit checkpoint --run {run} --resolve {_json_text(text)} --reason "
                          '"..."`, or restore it')


def _json_text(value: Any) -> str:
    import json  # here, for a refusal only: json loads re, which the commit gate does without

    return json.dumps(value)
