"""The agent hook events shiftgit answers, and what each does: brief, gate or save. Stdlib only."""

from __future__ import annotations

# brief: session start, the run's briefing as context; gate: end of turn, hold once when stale;
# save: pre-compact / session end, record a checkpoint when something changed.
EVENTS: dict[str, dict[str, str]] = {
    "claude": {"session-start": "brief", "stop": "gate", "pre-compact": "save", "session-end": "save"},
    "codex": {"session-start": "brief", "stop": "gate", "pre-compact": "save"},
    "gemini": {"session-start": "brief", "after-agent": "gate", "pre-compress": "save", "session-end": "save"},
}
AGENTS = tuple(EVENTS)
