"""A run's end: its final ledger leaves the work tree for `refs/shift/archive`; `runs` lists both kinds.

`finish` archives the run it ends; `shiftgit archive RUN` does it for a stopped run or one finished
before archives existed. The archive commit is made first, then `.shift/runs/<run>/` is removed, so
a crash between the two leaves the ledger in both places (archiving again is harmless), never in
neither. The next commit carries the removal; the commit gate accepts it because the archive holds
the ledger (git/gate.py). `show`, `report` and `resume` still read the run by name (ledger/store.py).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from shiftgit import rawjson
from shiftgit.errors import UsageError
from shiftgit.git import archive as archive_ref
from shiftgit.ledger.model import Ledger, dumps
from shiftgit.ledger.store import Store
from shiftgit.runs.render import markdown


class Archived(NamedTuple):
    run: str
    commit: str
    status: str


def archive_run(store: Store, run: str) -> Archived:
    """Move a run that is no longer active into the archive; an active run is refused, nothing written."""
    with store.lock(run):
        if not store.exists(run):
            if store.archived_bytes(run) is not None:
                raise UsageError(f"run {run!r} is already archived; read it with `shiftgit show {run}`")
            store.read(run)  # the unknown-run error, naming the runs here
        ledger = store.read(run)
        if ledger.status == "active":
            raise UsageError(f"run {run!r} is active; end it first (`shiftgit finish --run {run} --status "
                             f"completed|blocked|abandoned`, or `shiftgit stop --run {run} --reason R`), then "
                             "archive it; nothing was changed")
        from shiftgit.runs.lease import guard

        guard(store, run)  # a fenced process archives nothing (exit 4)
        commit = save(store, ledger)
        _remove(store, run)
    _publish(store)
    pointer = store.repo.private("active")
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if pointer.read_text("utf-8").strip() == run:
            store.set_active(None)
    return Archived(run, commit, ledger.status)


def _publish(store: Store) -> None:
    """With `"publish"` configured, the archive goes out like a checkpoint: a detached, bounded sync."""
    from shiftgit.git.publish import start_configured

    start_configured(store)


def save(store: Store, ledger: Ledger) -> str:
    files = {"ledger.json": store.ledger_path(ledger.run).read_bytes() if store.exists(ledger.run) else dumps(ledger),
             "receipt.md": markdown(ledger).encode()}
    reason = ledger.stop.reason if ledger.stop else ledger.status
    return archive_ref.save_run(store.repo, ledger.run, files, f"shiftgit archive: {ledger.run} ({reason})")


def _remove(store: Store, run: str) -> None:
    directory = store.ledger_path(run).parent
    shutil.rmtree(directory)
    runs = directory.parent
    with contextlib.suppress(OSError):
        runs.mkdir(exist_ok=True)  # `.shift/runs/` itself stays
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(store.repo.git_dir, "shift", "snapshots", run))  # its effects cache: ledger/snapshot.py


# -- listing ----------------------------------------------------------------------------------------

class Filters(NamedTuple):
    status: str | None = None
    stop_reason: str | None = None
    since: str | None = None  # an ISO date or time: runs updated at or after it
    archived: bool = False  # include the archived runs


def parse_since(text: str | None, flag: str = "--since") -> str | None:
    """`--since 2026-11-01` (or a full ISO time) -> a comparable UTC ISO string; bad input refused (FLAG: the
    option it came from, for the message)."""
    if text is None:
        return None
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        return when.astimezone(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    except (ValueError, OverflowError):  # OverflowError: a time zone that moves it out of years 1-9999
        raise UsageError(f"{flag} {text!r} is not a date; give YYYY-MM-DD or an ISO time, e.g. {flag} "
                         "2026-11-01") from None


def documents(store: Store, *, archived: bool = True) -> list[tuple[dict[str, Any], bool]]:
    """(ledger JSON, is archived) for every run here, then every archived run not here; unreadable ones skipped."""
    found: list[tuple[dict[str, Any], bool]] = []
    current = store.run_ids()
    for run in current:
        with contextlib.suppress(Exception):
            found.append((store.document(run), False))
    if archived:
        for run, data in sorted(archive_ref.read_ledgers(store.repo).items()):
            if run in current:
                continue
            with contextlib.suppress(ValueError):
                document = rawjson.loads(data)
                if isinstance(document, dict):
                    found.append((document, True))
    return found


def list_runs(store: Store, filters: Filters) -> list[dict[str, Any]]:
    rows = [row(doc, archived) for doc, archived in documents(store, archived=filters.archived)]
    return [r for r in rows if _matches(r, filters)]


def row(doc: Mapping[str, Any], archived: bool) -> dict[str, Any]:
    found = {key: doc.get(key) for key in ("stop", "contract", "checkpoint")}
    stop: Mapping[str, Any] = found["stop"] if isinstance(found["stop"], Mapping) else {}
    contract: Mapping[str, Any] = found["contract"] if isinstance(found["contract"], Mapping) else {}
    point: Mapping[str, Any] = found["checkpoint"] if isinstance(found["checkpoint"], Mapping) else {}
    return {"id": doc.get("run"), "status": doc.get("status"), "archived": archived,
            "stop_reason": stop.get("reason") if stop else None, "goal": contract.get("goal"),
            "created_at": doc.get("created_at"), "updated_at": doc.get("updated_at"),
            "checkpoint": point.get("seq")}


def _matches(r: Mapping[str, Any], f: Filters) -> bool:
    return ((f.status is None or r["status"] == f.status)
            and (f.stop_reason is None or r["stop_reason"] == f.stop_reason)
            and (f.since is None or str(r["updated_at"] or "") >= f.since))


def table(rows: Iterable[Mapping[str, Any]]) -> str:
    from shiftgit import textsafe

    lines = [f"{r['id']:<24} {r['status'] or '?':<10} {r['stop_reason'] or '-':<22} "
             f"{'archived' if r['archived'] else 'here':<8} {textsafe.one_line(str(r['goal'] or ''), 60)}"
             for r in rows]
    return "\n".join(lines) if lines else "no runs"
