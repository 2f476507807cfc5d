"""Approvals: requested -> granted | denied | expired, bound to one effect key, never to a position.

A grant answers a request: granting a key nobody asked for is a usage error (ask first with
`approval request`), so every grant has a recorded reason. A grant may expire (`expires_in`
minutes); an expired grant authorises nothing and is shown as `expired`. Denying a granted key
revokes it. Each change keeps the previous decision in the approval's `history`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from shiftgit.errors import UsageError
from shiftgit.ledger.model import Approval, Ledger
from shiftgit.ledger.record import replace
from shiftgit.ledger.secrets import find_secrets
from shiftgit.ledger.store import Store

KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,127}$"
HISTORY_CAP = 20
AGENT_MARKERS = ("CLAUDECODE",)  # set in the environment an agent's own commands run in
_KEY = re.compile(KEY_PATTERN)
_KIND = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")


def now_iso(now: dt.datetime | None = None) -> str:
    at = now or dt.datetime.now(dt.timezone.utc)
    return at.isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def validate_key(key: str) -> str:
    if not _KEY.match(key):
        raise UsageError(f"bad effect key {key!r}: use 1-128 of A-Z a-z 0-9 . _ : / @ + = -, starting with a "
                         "letter or digit (e.g. migrate-0042)")
    if find_secrets(key):  # it would be stored redacted, and the key would no longer find its record
        raise UsageError(f"effect key {key!r} looks like a secret; use a descriptive key (e.g. migrate-0042)")
    return key


def valid_kind(kind: str) -> bool:
    """An effect kind: a label shown in refusals and reports (a secret there would be published with the ledger)."""
    return bool(_KIND.match(kind)) and not find_secrets(kind)


def state_of(approval: Approval, now: dt.datetime | None = None) -> str:
    """The state as it stands now: a grant past its expiry is `expired`."""
    if approval.state == "granted" and approval.expires_at:
        if parse_time(approval.expires_at) <= (now or dt.datetime.now(dt.timezone.utc)):
            return "expired"
    return approval.state


def is_granted(ledger: Ledger, key: str, now: dt.datetime | None = None) -> bool:
    approval = ledger.approval(key)
    return approval is not None and state_of(approval, now) == "granted"


def pending(ledger: Ledger) -> list[str]:
    """Keys whose approval was requested and not yet decided."""
    return [a.key for a in ledger.approvals if a.state == "requested"]


def view(approval: Approval, now: dt.datetime | None = None) -> dict[str, Any]:
    return {**approval.to_dict(), "state": state_of(approval, now)}


def _past(approval: Approval) -> dict[str, Any]:
    keep = ("state", "reason", "requested_at", "decided_at", "by", "expires_at", "decision_reason")
    return {k: v for k, v in approval.to_dict().items() if k in keep and v is not None}


def _put(ledger: Ledger, new: Approval, at: str) -> Ledger:
    old = ledger.approval(new.key)
    if old is None:
        return replace(ledger, approvals=(*ledger.approvals, new), updated_at=at)
    history = (*old.history, _past(old))[-HISTORY_CAP:]
    new = replace(new, history=history)
    return replace(ledger, approvals=tuple(new if a.key == new.key else a for a in ledger.approvals), updated_at=at)


def request(store: Store, run: str, key: str, reason: str) -> Approval:
    """Ask for an approval; asking again while one is pending or granted changes nothing."""
    validate_key(key)
    if not reason.strip():
        raise UsageError("an approval request needs a reason: --reason TEXT")
    made: list[Approval] = []

    def change(ledger: Ledger) -> Ledger:
        old = ledger.approval(key)
        if old is not None and state_of(old) in ("requested", "granted"):
            made.append(old)
            return ledger
        at = now_iso()
        new = Approval(key=key, state="requested", reason=reason, requested_at=at)
        made.append(new)
        return _put(ledger, new, at)

    store.update(run, change)
    return made[0]


def grant(store: Store, run: str, key: str, by: str, expires_in: float | None = None,
          environ: Mapping[str, str] | None = None) -> Approval:
    """A human grants a requested approval (optionally for `expires_in` minutes)."""
    validate_key(key)
    _refuse_inside_agent(environ or {}, "grant")
    if not by.strip():
        raise UsageError("say who grants it: --by WHO")
    if expires_in is not None and expires_in <= 0:
        raise UsageError("--expires-in takes a positive number of minutes")
    return _decide(store, run, key, by, "granted", None, expires_in)


def _expiry(now: dt.datetime, minutes: float) -> str:
    try:
        return now_iso(now + dt.timedelta(minutes=minutes))
    except OverflowError:  # past the year 9999: no date holds it
        raise UsageError(f"--expires-in {minutes:g} minutes ends after the year 9999; give fewer minutes "
                         "(e.g. --expires-in 1440 for a day); nothing was written") from None


def deny(store: Store, run: str, key: str, by: str, reason: str,
         environ: Mapping[str, str] | None = None) -> Approval:
    """A human denies a request, or revokes a grant."""
    validate_key(key)
    _refuse_inside_agent(environ or {}, "deny")
    if not by.strip() or not reason.strip():
        raise UsageError("a denial needs --by WHO and --reason TEXT")
    return _decide(store, run, key, by, "denied", reason, None)


def _decide(store: Store, run: str, key: str, by: str, state: str, reason: str | None,
            expires_in: float | None) -> Approval:
    made: list[Approval] = []

    def change(ledger: Ledger) -> Ledger:
        old = ledger.approval(key)
        current = state_of(old) if old else None
        if old is None or current not in ("requested", "granted"):
            raise UsageError(_no_request(run, key, current))
        now = dt.datetime.now(dt.timezone.utc)
        at = now_iso(now)
        expires = _expiry(now, expires_in) if expires_in else None
        new = replace(old, state=state, by=by, decided_at=at, expires_at=expires, decision_reason=reason)
        made.append(new)
        return _put(ledger, new, at)

    store.update(run, change)
    return made[0]


def _no_request(run: str, key: str, current: str | None) -> str:
    where = f"no pending request for {key!r} on run {run!r}"
    if current is not None:
        where = f"the approval for {key!r} on run {run!r} is {current}"
    return f"{where}; ask first with `shiftgit approval request {key} --reason TEXT`"


def _refuse_inside_agent(environ: Mapping[str, str], verb: str) -> None:
    """A speed bump, not a security boundary: an agent should not approve its own effects."""
    marker = next((m for m in AGENT_MARKERS if environ.get(m)), None)
    if marker:
        raise UsageError(f"refusing to {verb} an approval from inside an agent session ({marker} is set); "
                         "a human runs `shiftgit approval " + verb + "` from their own shell")


def require_confirmed(ledger: Ledger, key: str) -> None:
    """An irreversible effect waits while a milestone awaits its owner's confirmation (`shiftgit confirm`)."""
    waiting = ledger.awaiting_confirmation()
    if waiting:
        from shiftgit.errors import CheckFailed

        raise CheckFailed(f"effect {key!r} is irreversible and milestone #{waiting[-1].seq} of run {ledger.run!r} "
                          "awaits its owner's confirmation; nothing ran. The owner confirms with "
                          f"`shiftgit confirm {ledger.run} --by WHO` (or corrects with `--correct TEXT`)")
