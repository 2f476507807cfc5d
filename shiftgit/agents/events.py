"""The agent hook events shiftgit answers, and what each does. Stdlib only.

- brief (session start): the run's briefing as context; the session is added to the ledger's `sessions`;
- gate (end of turn): hold the agent once while its work is not recorded; count the turn;
- save (pre-compact): record a checkpoint when something changed, and the compacted conversation;
- end (session end): the same, then close the session's entry;
- ignore: accepted and answered with nothing. Gemini CLI fires PreCompress before every model request
  (it checks the token threshold afterwards), so it says nothing about a compaction; `init` no longer
  wires it, and configs written by an older shiftgit keep working.
"""

from __future__ import annotations

EVENTS: dict[str, dict[str, str]] = {
    "claude": {"session-start": "brief", "stop": "gate", "pre-compact": "save", "session-end": "end"},
    "codex": {"session-start": "brief", "stop": "gate", "pre-compact": "save", "session-end": "end"},
    "gemini": {"session-start": "brief", "after-agent": "gate", "pre-compress": "ignore", "session-end": "end"},
    "qwen": {"session-start": "brief", "stop": "gate", "pre-compact": "save", "session-end": "end"},
    "copilot": {"session-start": "brief", "agent-stop": "gate", "session-end": "end"},
    # OpenCode's plugin (agents/wiring.py): first model request, session.idle, session compacting
    "opencode": {"session-start": "brief", "session-idle": "gate", "pre-compact": "save"},
    # Aider's test command after each edit (agents/wiring.py): fails once per staleness with the reason
    "aider": {"after-edit": "gate"},
}
AGENTS = tuple(EVENTS)
