"""`shiftgit init --agent claude|codex|gemini`: wire an agent's own hooks to `shiftgit hook ...`.

Each agent's config is merged, never replaced: every other key and every other hook stays, and
running it twice adds nothing. AGENTS.md gets one marked section pointing at shiftgit.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shiftgit.errors import UsageError
from shiftgit.ledger.store import write_atomic
from shiftgit.repo import Repo


@dataclass(frozen=True)
class AgentConfig:
    path: str  # repo-relative config file
    events: Mapping[str, str]  # the agent's event name -> `shiftgit hook <agent> <event>`
    timeout: int  # in the agent's unit (Claude, Codex: seconds; Gemini: milliseconds)


AGENTS: dict[str, AgentConfig] = {
    "claude": AgentConfig(".claude/settings.json", {"SessionStart": "session-start", "Stop": "stop",
                                                    "PreCompact": "pre-compact", "SessionEnd": "session-end"}, 30),
    "codex": AgentConfig(".codex/hooks.json", {"SessionStart": "session-start", "Stop": "stop"}, 30),
    "gemini": AgentConfig(".gemini/settings.json", {"SessionStart": "session-start", "AfterAgent": "after-agent",
                                                    "PreCompress": "pre-compress", "SessionEnd": "session-end"},
                          30_000),
}
AGENTS_MD = "AGENTS.md"
MARK_BEGIN = "<!-- shiftgit:begin -->"
MARK_END = "<!-- shiftgit:end -->"
POINTER = f"""{MARK_BEGIN}
## Work state: shiftgit

This repository records coding-agent work with shiftgit: each run's contract, constraints, checkpoints
and evidence live in `.shift/runs/<run>/ledger.json`, committed with the code.

- `shiftgit status` lists the runs; `shiftgit resume --no-run` shows the active run's briefing.
- `shiftgit check -- CMD` runs a command and records its real result as evidence.
- `shiftgit checkpoint --step TEXT --next TEXT` records the state before each commit; the commit hook
  refuses a commit whose ledger is stale. Commit the ledger together with the change.
{MARK_END}
"""


def command(agent: str, event: str) -> str:
    return f"shiftgit hook {agent} {event}"


def preflight(repo: Repo, agents: Sequence[str]) -> None:
    """Raise the error `install` would raise for any of `agents`, writing nothing."""
    for agent in agents:
        if agent not in AGENTS:
            raise UsageError(f"unknown agent {agent!r}; use one of: {', '.join(AGENTS)}")
        config = AGENTS[agent]
        merge_hooks(read_config(repo.root / config.path, config.path), agent, config)


def install(repo: Repo, agent: str) -> list[str]:
    """Merge shiftgit's hooks into the agent's config and point AGENTS.md at shiftgit. Idempotent."""
    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r}; use one of: {', '.join(AGENTS)}")
    config = AGENTS[agent]
    path = repo.root / config.path
    document = read_config(path, config.path)
    added = merge_hooks(document, agent, config)
    lines = []
    if added:
        write_atomic(path, (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode())
        lines.append(f"{agent}: added hooks {', '.join(added)} to {config.path} (commit it)")
    else:
        lines.append(f"{agent}: hooks already in {config.path}")
    if agent == "codex" and "$schema" in document:
        lines.append(f"{agent}: warning: {config.path} has a $schema key, which Codex rejects; remove it")
    return lines + add_pointer(repo.root)


def path_note() -> list[str]:
    """Agents run `shiftgit hook ...` from their PATH: say so when it is not there."""
    if shutil.which("shiftgit") is not None:
        return []
    return ["note: `shiftgit` is not on PATH here; agents run `shiftgit hook ...` from their PATH "
            "(install shiftgit, or see README, 'Agent integrations')"]


def read_config(path: Path, rel: str) -> dict[str, Any]:
    """The existing config (an object), or an empty one; anything else is refused, nothing written."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        document = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise UsageError(f"{rel}: not valid JSON ({exc}); fix it, then rerun `shiftgit init --agent ...`") from None
    if not isinstance(document, dict):
        raise UsageError(f"{rel}: expected a JSON object at the top; fix it, then rerun `shiftgit init --agent ...`")
    return document


def merge_hooks(document: dict[str, Any], agent: str, config: AgentConfig) -> list[str]:
    """Add one matcher group per missing shiftgit handler; returns the events that gained one."""
    hooks = document.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError(f"{config.path}: \"hooks\" is not an object; fix it, then rerun "
                         f"`shiftgit init --agent {agent}`")
    added = []
    for event, name in config.events.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise UsageError(f"{config.path}: hooks.{event} is not a list; fix it, then rerun "
                             f"`shiftgit init --agent {agent}`")
        if any(_has_command(group, command(agent, name)) for group in groups):
            continue
        groups.append({"hooks": [handler(agent, name, config)]})
        added.append(event)
    return added


def handler(agent: str, event: str, config: AgentConfig) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "command", "command": command(agent, event), "timeout": config.timeout}
    if agent == "gemini":
        entry["name"] = f"shiftgit-{event}"
    return entry


def _has_command(group: Any, text: str) -> bool:
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return False
    return any(isinstance(h, dict) and isinstance(h.get("command"), str) and text in h["command"]
               for h in group["hooks"])


def add_pointer(root: Path) -> list[str]:
    """Create AGENTS.md or append the marked shiftgit section, once."""
    path = root / AGENTS_MD
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = None
    if text is not None and MARK_BEGIN in text:
        return []
    if text is None:
        write_atomic(path, ("# Agent notes\n\n" + POINTER).encode())
        return [f"created {AGENTS_MD} with a pointer to shiftgit (commit it)"]
    separator = "" if text.endswith("\n\n") or not text else ("\n" if text.endswith("\n") else "\n\n")
    write_atomic(path, (text + separator + POINTER).encode())
    return [f"added a shiftgit section to {AGENTS_MD} (commit it)"]


def config_snippet(agent: str) -> dict[str, Any]:
    """The hooks shiftgit installs for `agent`, as a standalone config (the files under hooks/)."""
    document: dict[str, Any] = {}
    merge_hooks(document, agent, AGENTS[agent])
    return document
