"""`shiftgit hook <agent> <event>`: coding-agent hooks (Claude Code, Codex, Gemini CLI).

Each reads the agent's JSON on stdin and answers in that agent's format. Three kinds of event:
- brief (session start): the run's briefing, as data with provenance, injected as context;
- gate (stop / after-agent): hold the agent once when the ledger is stale (uncheckpointed edits
  or HEAD moved), never when the agent is already continuing because of a stop hook;
- save (pre-compact / session-end): record a checkpoint when something changed.
They fail open: any error exits 0 with nothing blocking, and is logged to <git-dir>/shift/hooks.log.
They never run a recorded command.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from shiftgit.agents.events import EVENTS
from shiftgit.ledger.discovery import Pick
from shiftgit.repo import Repo

LOG_LIMIT = 512 * 1024
BLOCKS_KEPT = 100


@dataclass(frozen=True)
class Payload:
    """The fields shiftgit uses from an agent's hook input (defaults for garbage)."""

    session: str = "unknown"
    cwd: str | None = None
    stop_hook_active: bool | None = None  # None: absent or not a boolean, so never block on it


@dataclass(frozen=True)
class Answer:
    """What a hook says: context to inject, a block with its reason, or a note for the human."""

    context: str | None = None
    block: str | None = None
    note: str | None = None


def main(agent: str, args: list[str], *, stdin: IO[bytes] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None, cwd: str | None = None) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    event = args[0] if len(args) == 1 else None
    if agent not in EVENTS or event not in EVENTS[agent]:
        known = "; ".join(f"{a}: {', '.join(e)}" for a, e in EVENTS.items())
        err.write(f"shiftgit: unknown agent hook {' '.join([agent, *args])!r} (known: {known})\n")
        return 1
    payload, problem = parse_payload(_read(stdin))
    where = _workdir(payload, cwd)
    repo = _open_repo(where)
    if problem and repo is not None:
        log(repo, agent, event, f"ignored unreadable hook input: {problem}")
    try:
        answer = handle(agent, event, payload, where, repo)
    except Exception as exc:  # fail open: never block an agent because shiftgit broke
        if repo is not None:
            log(repo, agent, event, f"{exc!r}\n{traceback.format_exc()}")
        answer = None
    _write(out, render(agent, EVENTS[agent][event], answer))
    return 0


def parse_payload(raw: bytes) -> tuple[Payload, str | None]:
    """Lenient: a field of the wrong type is ignored; non-JSON or non-object input is unreadable."""
    try:
        data = json.loads(raw.decode("utf-8", "replace")) if raw.strip() else None
    except ValueError as exc:
        return Payload(), f"not JSON ({exc})"
    if not isinstance(data, dict):
        return Payload(), f"expected a JSON object, got {type(data).__name__}"
    session = data.get("session_id")
    cwd = data.get("cwd")
    return Payload(
        session=session[:64] if isinstance(session, str) and session else "unknown",
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        stop_hook_active=active if isinstance(active := data.get("stop_hook_active"), bool) else None,
    ), None


def handle(agent: str, event: str, payload: Payload, where: str, repo: Repo | None) -> Answer | None:
    if repo is None:
        return None
    from shiftgit.ledger.store import Store

    store = Store(repo)
    if not (store.root / "config.json").exists():
        return None
    kind = EVENTS[agent][event]
    pick = _discover(store, kind)
    if not isinstance(pick, Pick):
        return pick
    run = pick.run
    if kind == "brief":
        from shiftgit.agents.brief import session_context

        return Answer(context=session_context(store, run, log=lambda m: log(repo, agent, event, m),
                                              picked=pick.note))
    if kind == "gate":
        return gate(store, run, payload, key=f"{agent}:{payload.session}")
    return save(store, run, payload, event)


def _discover(store: Any, kind: str) -> Pick | Answer | None:
    """The run by the one discovery rule; when none fits, a session start is told which runs there are."""
    from shiftgit.errors import UsageError
    from shiftgit.ledger.discovery import discover

    try:
        return discover(store)
    except UsageError as exc:
        return Answer(context=f"shiftgit: {exc}") if kind == "brief" and store.run_ids() else None


def gate(store: Any, run: str, payload: Payload, *, key: str) -> Answer | None:
    """Block once per staleness, only when the agent said `stop_hook_active: false`; else a note at most."""
    from shiftgit.recovery.freshness import assess

    ledger = store.read(run)
    if ledger.status != "active":
        return None
    state = assess(store, run, ledger)
    blocks = _read_blocks(store.repo)
    if not state.stale:
        if blocks.pop(key, None) is not None:
            _write_blocks(store.repo, blocks)
        return None
    reason = state.describe()
    if payload.stop_hook_active is not False or blocks.get(key) == state.signature:
        return Answer(note=reason)
    blocks.pop(key, None)
    blocks[key] = state.signature
    _write_blocks(store.repo, blocks)
    return Answer(block=reason)


def save(store: Any, run: str, payload: Payload, event: str) -> Answer | None:
    """Record a checkpoint when the tree, HEAD or the evidence changed since the last one."""
    from shiftgit.recovery.freshness import assess
    from shiftgit.runs import checkpoints

    ledger = store.read(run)
    if ledger.status != "active":
        return None
    state = assess(store, run, ledger)
    if not state.stale and not ledger.pending_checks:
        return None
    note = f"auto: {event} (session {payload.session})"
    point = checkpoints.checkpoint(store, run, checkpoints.CheckpointInput(note=note))
    return Answer(note=f"shiftgit: recorded checkpoint #{point.seq} of run {run} ({note})")


def render(agent: str, kind: str, answer: Answer | None) -> str:
    """The agent's own output format; empty (Gemini: `{}`) when there is nothing to say."""
    body: dict[str, Any] = {}
    if answer is not None and answer.context is not None:
        body = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": answer.context}}
    elif answer is not None and answer.block is not None:
        body = {"decision": "deny" if agent == "gemini" else "block", "reason": answer.block}
    elif answer is not None and answer.note is not None:
        body = {"systemMessage": answer.note}
    if not body and agent != "gemini":
        return ""
    return json.dumps(body, ensure_ascii=False) + "\n"


# -- plumbing -------------------------------------------------------------------------------

def _read(stdin: IO[bytes] | None) -> bytes:
    stream = stdin if stdin is not None else sys.stdin.buffer
    try:
        if stream.isatty():
            return b""
        return stream.read()
    except (OSError, ValueError):
        return b""


def _write(out: IO[str], text: str) -> None:
    try:
        out.write(text)
        out.flush()
    except (OSError, ValueError):  # the agent closed the pipe: nothing left to tell it
        pass


def _workdir(payload: Payload, cwd: str | None) -> str:
    if payload.cwd and os.path.isdir(payload.cwd):
        return payload.cwd
    return cwd or os.getcwd()


def _open_repo(where: str) -> Repo | None:
    from shiftgit.errors import ShiftError

    try:
        return Repo.open(where)
    except (ShiftError, OSError):
        return None


def log(repo: Repo, agent: str, event: str, message: str) -> None:
    """Append to <git-dir>/shift/hooks.log (rotated at 512 KiB); logging itself never fails a hook."""
    try:
        path = repo.private("hooks.log")
        if path.exists() and path.stat().st_size > LOG_LIMIT:
            path.replace(path.with_name("hooks.log.1"))
        at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{at} hook {agent} {event}: {message.rstrip()}\n")
    except OSError:
        pass


def _blocks_path(repo: Repo) -> Path:
    return repo.private("agents", "stop-blocks.json")


def _read_blocks(repo: Repo) -> dict[str, str]:
    try:
        data = json.loads(_blocks_path(repo).read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def _write_blocks(repo: Repo, blocks: Mapping[str, str]) -> None:
    from shiftgit.ledger.store import write_atomic

    kept = dict(list(blocks.items())[-BLOCKS_KEPT:])
    write_atomic(_blocks_path(repo), json.dumps(kept, indent=1, sort_keys=False).encode())
