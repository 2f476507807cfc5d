"""Long-term memory: `.shift/memory.json` (schema `schema/memory.schema.json`), kept apart from working state.

A run's constraints and notes are working state: they end with the run (its archive). A rule worth
keeping for every later run enters memory only through `constraint promote ID --by WHO [--until
DATE]`: each entry has its text, origin run (and constraint), creation time, the named approver and
its expiry. Every new run's briefing lists the live entries under "Standing rules"; `memory expire`
ends one now; `gc` drops expired ones. The file is committed like the config.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from typing import Any

from shiftgit import rawjson
from shiftgit.errors import LedgerError, UsageError
from shiftgit.ledger.canonical import canonical_bytes
from shiftgit.ledger.files import write_atomic
from shiftgit.ledger.store import Store
from shiftgit.runs.contract import now_iso

MEMORY_VERSION = 1
FILE = "memory.json"


def read(store: Store) -> dict[str, Any]:
    """The memory document (empty when there is none); a broken one is one clear error."""
    from shiftgit.ledger.schema import schema_errors

    where = store.inside(FILE)
    try:
        document = rawjson.loads(where.read_bytes())
    except FileNotFoundError:
        return {"schema_version": MEMORY_VERSION, "entries": []}
    except ValueError as exc:
        raise LedgerError(f"{store.rel(where)}: corrupt JSON ({exc}); fix it or restore it with "
                          f"`git checkout -- {store.rel(where)}`") from None
    problems = schema_errors(document, "memory.schema.json")
    if problems:
        raise LedgerError(f"{store.rel(where)}: invalid: {'; '.join(problems[:3])}")
    if document["schema_version"] > MEMORY_VERSION:
        raise LedgerError(f"{store.rel(where)} is newer than this shiftgit knows; upgrade: pip install -U shiftgit")
    return dict(document)


def live(store: Store, now: str | None = None) -> list[dict[str, Any]]:
    """The entries not expired: what every briefing lists as standing rules."""
    moment = now or now_iso()
    return [e for e in read(store)["entries"] if not _expired(e, moment)]


def _expired(entry: Mapping[str, Any], now: str) -> bool:
    until = entry.get("expires_at")
    return isinstance(until, str) and until <= now


def promote(store: Store, which: str, by: str | None, until: str | None = None,
            run: str | None = None) -> dict[str, Any]:
    """Copy one constraint (by id, or exact text) into memory, approved by a named person."""
    if not by or not by.strip():
        raise UsageError("nothing enters memory without a named approver: add --by WHO; nothing was written")
    from shiftgit.runs.archive import parse_since  # archive loads shutil and the renderer: a write needs it

    expires = parse_since(until, "--until") if until else None
    if expires is not None and expires <= now_iso():
        raise UsageError(f"--until {until} is already past; give a future date; nothing was written")
    origin, constraint = _find(store, which, run)
    from shiftgit.runs.lease import guard

    guard(store, origin)  # a fenced process promotes nothing (exit 4)
    with store.lock("memory"):
        document = read(store)
        same = next((e for e in document["entries"] if e["text"] == constraint["text"]
                     and not _expired(e, now_iso())), None)
        if same is not None:
            raise UsageError(f"memory already holds this rule as {same['id']} (approved by {same['approved_by']}); "
                             "nothing was written")
        entry = {"id": f"m-{os.urandom(6).hex()}", "text": constraint["text"],
                 "origin": {"run": origin, "constraint": constraint.get("id")}, "created_at": now_iso(),
                 "approved_by": by.strip(), "expires_at": expires}
        document["entries"] = [*document["entries"], entry]
        _write_unlocked(store, document)
    return dict(entry)


def _write_unlocked(store: Store, document: Mapping[str, Any]) -> None:
    from shiftgit.ledger.secrets import redact_obj

    redacted = redact_obj(dict(document))
    assert isinstance(redacted, dict)
    write_atomic(store.inside(FILE), canonical_bytes(redacted), is_json=True)


def _find(store: Store, which: str, run: str | None) -> tuple[str, Mapping[str, Any]]:
    runs = [run] if run else store.run_ids()
    for name in runs:
        try:
            document = store.document(name)
        except Exception:  # an unreadable neighbour is reported by its own commands
            if run:
                raise
            continue
        for c in document.get("constraints") or []:
            if isinstance(c, Mapping) and which in (c.get("id"), c.get("text")):
                if c.get("status") != "active":
                    raise UsageError(f"constraint {which} of run {name} was lifted ({c.get('reason')}); only an "
                                     "active rule can become a standing one; nothing was written")
                return name, c
    raise UsageError(f"no constraint {which!r} in the runs here; `shiftgit show RUN --json` lists a run's "
                     "constraints with their ids; nothing was written")


def expire(store: Store, entry_id: str, by: str | None = None) -> dict[str, Any]:
    """End an entry now: it leaves every later briefing; `gc` drops it."""
    with store.lock("memory"):
        document = read(store)
        entry = next((e for e in document["entries"] if e["id"] == entry_id), None)
        if entry is None:
            known = ", ".join(e["id"] for e in document["entries"]) or "none"
            raise UsageError(f"no memory entry {entry_id!r} (entries: {known}); nothing was changed")
        entry["expires_at"] = now_iso()
        if by:
            entry["expired_by"] = by
        _write_unlocked(store, document)
    return dict(entry)


def drop_expired(store: Store, *, dry_run: bool = False, now: str | None = None) -> list[dict[str, Any]]:
    """`gc`: remove the expired entries from the file; returns them."""
    if not store.inside(FILE).exists():
        return []
    moment = now or now_iso()
    with store.lock("memory"):
        document = read(store)
        gone = [e for e in document["entries"] if _expired(e, moment)]
        if gone and not dry_run:
            document["entries"] = [e for e in document["entries"] if not _expired(e, moment)]
            _write_unlocked(store, document)
    return gone


def days_ago(days: int, now: dt.datetime | None = None) -> str:
    moment = (now or dt.datetime.now(dt.timezone.utc)) - dt.timedelta(days=days)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def standing_rules(store: Store) -> list[str]:
    """The live rules as every briefing lists them, each with who approved it; a broken memory file says so."""
    from shiftgit import textsafe
    from shiftgit.errors import ShiftError

    try:
        entries = live(store)
    except ShiftError as exc:
        return [f"(the repository memory cannot be read: {textsafe.one_line(str(exc), 300)})"]
    return [f"{e['text']} (from run {e['origin'].get('run')}, approved by {e['approved_by']}"
            + (f", until {e['expires_at']})" if e.get("expires_at") else ")") for e in entries]
