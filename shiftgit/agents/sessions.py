"""The ledger's `sessions` list: which agent sessions worked on a run, where, when, and for how many turns.

An entry (SPEC §8): `id`, `agent`, `host`, `started_at`, `ended_at`, `turns`, `verified_first`.
Session start adds it (a session that starts again, after a compaction or a resume, keeps its entry),
session end closes it. Turns are counted at each end of turn the gate lets through, in the private
`<git-dir>/shift/agents/sessions.json` (a ledger write per turn would keep `.shift/` dirty), and
written into the ledger when the session ends, or when any session of the run starts. That private
file also keeps each session's transcript path, for `shiftgit context save` without `--from`.

Writes go through `Store.patch` (the ledger's JSON, no model): the entries are built here from checked
values only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from shiftgit.agents import private
from shiftgit.ledger.store import Store
from shiftgit.repo import Repo

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any

SESSIONS_KEPT = 50  # ledger entries per run
STATES_KEPT = 200  # private counters, all runs
# An id kept as is: up to 64 of these, an ASCII letter or digit first (checked without re: see `__main__`)
ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@-")
ID_LONGEST = 64


def now_iso() -> str:
    """UTC now, as `datetime.now(timezone.utc).isoformat(timespec="seconds")` writes it (without importing
    datetime: the end-of-turn hook calls this every turn)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())


def session_id(raw: str) -> str:
    """The agent's session id as the ledger keeps it: as is when it looks like an id, else a digest."""
    if 0 < len(raw) <= ID_LONGEST and ID_CHARS.issuperset(raw) and raw[0].isascii() and raw[0].isalnum():
        return raw
    import hashlib

    return "sha256-" + hashlib.sha256(raw.encode("utf-8", "surrogateescape")).hexdigest()[:16]


# -- the private state: turns and transcripts per agent session ------------------------------------

def read_state(repo: Repo) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in private.read(private.path(repo, "sessions.json")).items() if isinstance(v, dict)}


def _write_state(repo: Repo, state: Mapping[str, Mapping[str, Any]]) -> None:
    kept = dict(sorted(state.items(), key=lambda item: str(item[1].get("at", "")))[-STATES_KEPT:])
    private.write(private.path(repo, "sessions.json"), kept)


def _key(agent: str, session: str) -> str:
    return f"{agent}:{session}"


def note(repo: Repo, run: str, agent: str, session: str, *, transcript: str | None = None,
         turn: bool = False) -> int:
    """Remember this session's run and transcript; count one finished turn when `turn`. Returns the turns."""
    state = read_state(repo)
    entry = dict(state.get(_key(agent, session)) or {})
    entry.update(run=run, agent=agent, session=session, at=now_iso())
    if transcript:
        entry["transcript"] = transcript
    entry["turns"] = _int(entry.get("turns")) + (1 if turn else 0)
    state[_key(agent, session)] = entry
    _write_state(repo, state)
    return int(entry["turns"])


def turns(repo: Repo, agent: str, session: str) -> int:
    return _int((read_state(repo).get(_key(agent, session)) or {}).get("turns"))


def latest_transcript(repo: Repo, run: str) -> str | None:
    """The transcript of the run's most recent agent session seen here, when it still exists."""
    mine = [e for e in read_state(repo).values() if e.get("run") == run and isinstance(e.get("transcript"), str)]
    seen = sorted(mine, key=lambda e: str(e.get("at", "")))
    for entry in reversed(seen):
        if Path(entry["transcript"]).is_file():
            return str(entry["transcript"])
    return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


# -- the ledger's list ------------------------------------------------------------------------------

def start(store: Store, run: str, agent: str, session: str) -> None:
    """Add this session to the run's `sessions` (or reopen it); bring other sessions' turn counts up to date."""
    counts = _counts(store.repo, run)
    entry = {"id": session, "agent": agent, "host": _host(), "started_at": now_iso(),
             "ended_at": None, "turns": counts.get((agent, session), 0), "verified_first": None}

    def change(document: dict[str, Any]) -> dict[str, Any] | None:
        from shiftgit.agents.published import held_elsewhere  # a pre-compact or stop hook needs none of it

        if held_elsewhere(store, document):  # another place owns the run: this clone's copy is not its record
            return None
        sessions = _entries(document)
        found = _find(sessions, agent, session)
        if found is not None and found.get("ended_at") is None and not _stale_counts(sessions, counts):
            return None  # the same session started again (compaction, resume): nothing new to say
        if found is None:
            sessions.append(entry)
        else:
            found["ended_at"] = None
        _apply_counts(sessions, counts)
        document["sessions"] = sessions[-SESSIONS_KEPT:]
        return document

    store.patch(run, change)


def end(store: Store, run: str, agent: str, session: str) -> None:
    """Close this session's entry with its turn count (added first when its start was never seen)."""
    counts = _counts(store.repo, run)
    at = now_iso()

    def change(document: dict[str, Any]) -> dict[str, Any] | None:
        from shiftgit.agents.published import held_elsewhere

        if held_elsewhere(store, document):
            return None
        sessions = _entries(document)
        found = _find(sessions, agent, session)
        if found is None:
            found = {"id": session, "agent": agent, "host": _host(), "started_at": None,
                     "verified_first": None}
            sessions.append(found)
        found["ended_at"] = at
        _apply_counts(sessions, counts)
        found["turns"] = counts.get((agent, session), _int(found.get("turns")))
        document["sessions"] = sessions[-SESSIONS_KEPT:]
        return document

    store.patch(run, change)


def _host() -> str:
    return os.uname().nodename or "unknown"  # as socket.gethostname(), without importing socket


def _counts(repo: Repo, run: str) -> dict[tuple[str, str], int]:
    return {(str(e.get("agent")), str(e.get("session"))): _int(e.get("turns"))
            for e in read_state(repo).values() if e.get("run") == run}


def _entries(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(s) for s in document.get("sessions") or () if isinstance(s, Mapping)]


def _find(sessions: list[dict[str, Any]], agent: str, session: str) -> dict[str, Any] | None:
    return next((s for s in sessions if s.get("id") == session and s.get("agent") == agent), None)


def _stale_counts(sessions: list[dict[str, Any]], counts: Mapping[tuple[str, str], int]) -> bool:
    return any(_int(s.get("turns")) < counts.get((str(s.get("agent")), str(s.get("id"))), 0) for s in sessions)


def _apply_counts(sessions: list[dict[str, Any]], counts: Mapping[tuple[str, str], int]) -> None:
    for entry in sessions:
        seen = counts.get((str(entry.get("agent")), str(entry.get("id"))))
        if seen is not None and seen > _int(entry.get("turns")):
            entry["turns"] = seen


def verified(store: Store, run: str) -> None:
    """A verify ran (its checks rerun here): open sessions that have not checkpointed yet verified first."""
    def change(document: dict[str, Any]) -> dict[str, Any] | None:
        sessions = _entries(document)
        open_ = [s for s in sessions if s.get("ended_at") is None and s.get("verified_first") is None]
        if not open_:
            return None
        for entry in open_:
            entry["verified_first"] = True
        document["sessions"] = sessions
        return document

    store.patch(run, change)
