"""What people tell a run after the fact: review feedback, and confirmation at milestones.

Review feedback follows the job: `review add` records it on the run's ledger; an open review on a run
that ended (finished, or archived) reopens it, status `active` and the reopening recorded, so the next
session's briefing carries it; `review resolve` closes it with a reason. A milestone checkpointed with
`--confirm` awaits its owner: until `confirm` records agreement (or a correction, kept as an amendment),
`resume` escalates and `effect run` refuses irreversible effects.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from shiftgit.errors import UsageError
from shiftgit.ledger.model import Amendment, Confirmation, Ledger, Reopening, Review
from shiftgit.ledger.record import replace
from shiftgit.ledger.store import Store
from shiftgit.runs.contract import new_id, now_iso

ENDED = ("completed", "blocked", "abandoned")


class Added(NamedTuple):
    review: Review
    reopened: bool


def add_review(store: Store, run: str, text: str, *, file: str | None = None, line: int | None = None,
               by: str | None = None) -> Added:
    if not text.strip():
        raise UsageError('a review needs text, e.g. `shiftgit review add demo "rename sub()" --by rita@example.com`')
    if line is not None and not file:
        raise UsageError("--line needs --file: the line of which file? nothing was recorded")
    at = now_iso()
    review = Review(id=new_id("r"), text=text, by=by, file=file, line=line, created_at=at)
    if store.is_archived(run):
        ledger = store.read(run)
        reopened = _reopen(ledger, review, at)
        with store.lock(run):
            if store.exists(run):  # someone reopened it meanwhile: add to theirs
                store.update(run, lambda current: _with_review(current, review, at))
                return Added(review, False)
            store.write(reopened)
        return Added(review, True)
    made: list[bool] = []

    def change(ledger: Ledger) -> Ledger:
        made.append(ledger.status in ENDED)
        return _reopen(ledger, review, at) if ledger.status in ENDED else _with_review(ledger, review, at)

    store.update(run, change)
    return Added(review, made[0])


def _with_review(ledger: Ledger, review: Review, at: str) -> Ledger:
    return replace(ledger, reviews=(*ledger.reviews, review), updated_at=at)


def _reopen(ledger: Ledger, review: Review, at: str) -> Ledger:
    why = Reopening(at=at, reason=f"open review {review.id}", by=review.by, from_status=ledger.status)
    return replace(ledger, status="active", reviews=(*ledger.reviews, review), reopened=(*ledger.reopened, why),
                   updated_at=at)


def resolve_review(store: Store, review_id: str, reason: str, run: str | None = None) -> tuple[str, Review]:
    if not reason.strip():
        raise UsageError("resolving a review needs a reason: --reason TEXT")
    owner = run or _run_of(store, review_id)
    done: list[Review] = []

    def change(ledger: Ledger) -> Ledger:
        target = next((r for r in ledger.reviews if r.id == review_id), None)
        if target is None:
            raise UsageError(f"no review {review_id!r} on run {ledger.run!r}; list them with `shiftgit show "
                             f"{ledger.run}`")
        if target.status != "open":
            raise UsageError(f"review {review_id} is already resolved ({target.reason}); nothing was changed")
        at = now_iso()
        new = replace(target, status="resolved", resolved_at=at, reason=reason)
        done.append(new)
        return replace(ledger, reviews=tuple(new if r is target else r for r in ledger.reviews), updated_at=at)

    store.update(owner, change)
    return owner, done[0]


def _run_of(store: Store, review_id: str) -> str:
    for run in store.run_ids():
        try:
            document = store.document(run)
        except Exception:  # an unreadable neighbour is reported by its own commands
            continue
        if any(isinstance(r, dict) and r.get("id") == review_id for r in document.get("reviews") or []):
            return run
    raise UsageError(f"no review {review_id!r} in the runs here; `shiftgit show RUN --json` lists a run's reviews")


# -- milestones awaiting confirmation -----------------------------------------------------------------

def request(ledger: Ledger, seq: int, step: str | None, at: str) -> Ledger:
    """The ledger with checkpoint `seq` awaiting its owner's confirmation."""
    wait = Confirmation(id=f"m-{os.urandom(6).hex()}", seq=seq, step=step, requested_at=at)
    return replace(ledger, confirmations=(*ledger.confirmations, wait))


def confirm(store: Store, run: str, by: str | None, correction: str | None) -> Confirmation:
    if not by or not by.strip():
        raise UsageError("a confirmation needs the person who gives it: --by WHO; nothing was recorded")
    if correction is not None and not correction.strip():
        raise UsageError("--correct needs the corrected text; nothing was recorded")
    done: list[Confirmation] = []

    def change(ledger: Ledger) -> Ledger:
        waiting = ledger.awaiting_confirmation()
        if not waiting:
            raise UsageError(f"nothing in run {run!r} awaits confirmation (a milestone asks for it with "
                             "`shiftgit checkpoint --milestone --confirm`); nothing was recorded")
        at = now_iso()
        state = "corrected" if correction else "confirmed"
        settled = {w.id: replace(w, state=state, by=by, at=at, correction=correction) for w in waiting}
        done.extend(settled.values())
        amendments = ledger.amendments
        if correction:
            last = waiting[-1]
            amendments = (*amendments, Amendment(id=new_id("a"), at=at, field="milestone", old=last.step,
                                                 new=correction, reason=f"correction by {by} at milestone "
                                                                        f"#{last.seq}"))
        return replace(ledger, confirmations=tuple(settled.get(c.id, c) for c in ledger.confirmations),
                       amendments=amendments, updated_at=at)

    store.update(run, change)
    return done[-1]


def awaiting_reasons(ledger: Ledger) -> list[str]:
    """Why resume escalates: milestones whose owner has not confirmed them yet."""
    return [f"milestone #{c.seq}" + (f" ({c.step})" if c.step else "") + " awaits its owner's confirmation: "
            f"`shiftgit confirm {ledger.run} --by WHO` (or `--correct TEXT`)" for c in ledger.awaiting_confirmation()]


def review_lines(ledger: Ledger) -> list[str]:
    """The open reviews as the briefing lists them: quoted text, where, who, and the command that resolves each."""
    from shiftgit import textsafe

    return [textsafe.quote(r.text, 400) + (f" at {textsafe.one_line(r.file)}" + (f":{r.line}" if r.line else "")
                                          if r.file else "") + (f" by {textsafe.one_line(r.by)}" if r.by else "")
            + f" [{textsafe.one_line(r.id)}; `shiftgit review resolve {textsafe.one_line(r.id)} --reason R`]"
            for r in ledger.open_reviews()]
