"""`shiftgit init --agent NAME`: wire an agent's own hooks to `shiftgit hook ...`.

Claude Code, Codex, Gemini CLI, Qwen Code and GitHub Copilot CLI take JSON hook configs (this module);
OpenCode takes a plugin file and Aider the `.aider.conf.yml` lines that keep git's commit hooks on
(agents/wiring.py). Each agent's config is merged, never replaced: every other key and every other hook
stays, and running it twice adds nothing. AGENTS.md gets one marked section pointing at shiftgit.
Nothing is written through a symbolic link (a hostile clone may commit `.claude -> /elsewhere`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shiftgit import textsafe
from shiftgit.agents import launcher, wiring
from shiftgit.errors import UsageError
from shiftgit.ledger import written
from shiftgit.ledger.store import write_atomic
from shiftgit.repo import Repo


@dataclass(frozen=True)
class AgentConfig:
    path: str  # repo-relative config file
    events: Mapping[str, str]  # the agent's event name -> `shiftgit hook <agent> <event>`
    timeout: int  # in the agent's unit (Claude, Codex: seconds; Gemini: milliseconds)
    timeouts: Mapping[str, int] = field(default_factory=dict)  # per event, where the agent imposes its own
    retired: tuple[str, ...] = ()  # events an older shiftgit wired and this one removes
    flat: bool = False  # Copilot: event -> handlers (no matcher groups), the command under "bash"
    defaults: Mapping[str, Any] = field(default_factory=dict)  # top-level keys set when absent


AGENTS: dict[str, AgentConfig] = {
    "claude": AgentConfig(".claude/settings.json", {"SessionStart": "session-start", "Stop": "stop",
                                                    "PreCompact": "pre-compact", "SessionEnd": "session-end"}, 30),
    # Codex clamps SessionEnd hooks to 3 s (and says so on every run when asked for more)
    "codex": AgentConfig(".codex/hooks.json", {"SessionStart": "session-start", "Stop": "stop",
                                               "PreCompact": "pre-compact", "SessionEnd": "session-end"}, 30,
                         {"SessionEnd": 3}),
    # Gemini CLI fires PreCompress before every model request, so it is not wired (agents/events.py)
    "gemini": AgentConfig(".gemini/settings.json", {"SessionStart": "session-start", "AfterAgent": "after-agent",
                                                    "SessionEnd": "session-end"}, 30_000,
                          retired=("pre-compress",)),
    # Qwen Code takes Claude Code's events and answers (timeouts in seconds); 0.24 adds "$version": 4 to a
    # settings file without one at every start, which would leave the work tree dirty after each session
    "qwen": AgentConfig(".qwen/settings.json", {"SessionStart": "session-start", "Stop": "stop",
                                                "PreCompact": "pre-compact", "SessionEnd": "session-end"}, 30,
                        defaults={"$version": 4}),
    # Copilot CLI reads every .github/hooks/*.json: shiftgit keeps its own file there
    "copilot": AgentConfig(".github/hooks/shiftgit.json", {"sessionStart": "session-start", "agentStop": "agent-stop",
                                                           "sessionEnd": "session-end"}, 30, flat=True,
                           defaults={"version": 1}),
}
JSON_AGENTS = tuple(AGENTS)
ALL_AGENTS = (*JSON_AGENTS, *wiring.AGENTS)
# What each agent needs before it runs the project's hooks (seen with Codex 0.171 and Gemini CLI 0.61).
TRUST_STEPS: dict[str, tuple[str, ...]] = {
    "claude": ("Claude Code: `claude -p` runs the project's hooks as they are; interactive `claude` asks once "
               "to trust the folder.",),
    "codex": (
        "Codex runs project hooks only after you trust them: run `codex` in this repository, accept "
        "\"trust this folder\", then type /hooks and trust each shiftgit hook (SessionStart, Stop, PreCompact, "
        "SessionEnd). `codex exec` skips untrusted hooks without a word. Trust them again whenever "
        ".codex/hooks.json changes (Codex keeps a hash per hook).",
        "Codex runs the model's commands in `bash -lc`, which rebuilds PATH from your login profile: where a "
        "login shell does not find this shiftgit, its messages to the agent name `<python> -m shiftgit` "
        "instead (or put shiftgit's directory on PATH in ~/.profile).",
    ),
    "gemini": (
        "Gemini CLI loads project hooks only in a trusted folder: run `gemini` here once and trust the folder "
        "(kept in ~/.gemini/trustedFolders.json). Headless `gemini -p` refuses an untrusted folder; "
        "`--skip-trust` runs without the project's hooks, GEMINI_CLI_TRUST_WORKSPACE=true runs with them.",
    ),
    "qwen": (
        "Qwen Code runs project hooks as they are unless folder trust is on (security.folderTrust.enabled); "
        "then run `qwen` here once and trust the folder (kept in ~/.qwen/trustedFolders.json). `--safe-mode` "
        "and `--bare` load no hooks.",
    ),
    "copilot": (
        "Copilot CLI runs a repository's hooks only in a trusted folder: run `copilot` here once and trust "
        "the folder (kept in trustedFolders, ~/.copilot/config.json); `copilot -p` needs `--trust-folder` "
        "(or the folder trusted before).",
    ),
    **wiring.TRUST_STEPS,
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
    """The command a config gets (agents/launcher.py): this clone's launcher, else `shiftgit hook ...` from PATH."""
    return launcher.command(agent, event)


def preflight(repo: Repo, agents: Sequence[str]) -> None:
    """Raise the error `install` would raise for any of `agents`, writing nothing."""
    for agent in agents:
        if agent not in ALL_AGENTS:
            raise UsageError(f"unknown agent {agent!r}; use one of: {', '.join(ALL_AGENTS)}")
        refuse_links(repo.root, AGENTS_MD)
        if agent in wiring.AGENTS:
            refuse_links(repo.root, wiring.AGENTS[agent])
            wiring.preflight(repo.root, agent)
            continue
        config = AGENTS[agent]
        refuse_links(repo.root, config.path)
        merge_hooks(read_config(repo.root / config.path, config.path), agent, config)


def refuse_links(root: Path, rel: str) -> None:
    """Refuse `rel` when it or a directory on its way from the work tree's root is a symbolic link."""
    path = root
    for part in Path(rel).parts:
        path = path / part
        if path.is_symlink():
            shown = path.relative_to(root).as_posix()
            raise UsageError(f"refusing to write {rel}: {shown} is a symbolic link (to "
                             f"{textsafe.quote(os.readlink(path), 120)}) and shiftgit writes agent config only "
                             f"inside the work tree; nothing was written. Replace the link with a real "
                             f"{'file' if path.name == Path(rel).name else 'directory'}, then rerun `shiftgit init`")


def install(repo: Repo, agent: str) -> list[str]:
    """Merge shiftgit's hooks into the agent's config and point AGENTS.md at shiftgit. Idempotent."""
    preflight(repo, [agent])
    if agent in wiring.AGENTS:
        lines = (launcher.install(repo) if agent == "opencode" else []) + wiring.install(repo.root, agent)
        return lines + [f"{agent}: trust: {step}" for step in TRUST_STEPS[agent]] + add_pointer(repo.root)
    config = AGENTS[agent]
    path = repo.root / config.path
    document = read_config(path, config.path)
    removed = retire_hooks(document, agent, config)
    updated = upgrade_hooks(document, agent, config)
    added = merge_hooks(document, agent, config)
    keys = merge_defaults(document, config)
    lines = launcher.install(repo)
    if added or removed or keys or updated:
        write_atomic(path, (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode())
        written.remember(repo, [config.path])
    if added:
        lines.append(f"{agent}: added hooks {', '.join(added)} to {config.path} (commit it)")
    if updated:
        lines.append(f"{agent}: updated the command of hooks {', '.join(updated)} in {config.path} to run this "
                     "clone's launcher (commit it)")
    if removed:
        lines.append(f"{agent}: removed shiftgit's {', '.join(removed)} hook from {config.path}, which this "
                     "shiftgit no longer wires (see README, 'Agent integrations')")
    if keys:
        lines.append(f"{agent}: set {', '.join(json.dumps(k) + ': ' + json.dumps(config.defaults[k]) for k in keys)} "
                     f"in {config.path}, as {agent} would on its first run")
    if not added and not removed and not keys and not updated:
        lines.append(f"{agent}: hooks already in {config.path}")
    if agent == "codex" and "$schema" in document:
        lines.append(f"{agent}: warning: {config.path} has a $schema key, which Codex rejects; remove it")
    lines += [f"{agent}: trust: {step}" for step in TRUST_STEPS[agent]]
    pointer = add_pointer(repo.root)
    if pointer:
        written.remember(repo, [AGENTS_MD])
    return lines + pointer


def path_note(agents: Sequence[str]) -> list[str]:
    """Aider's test command runs `shiftgit hook aider ...` from PATH (the others run this clone's launcher, else PATH):
    say so when it is not there."""
    if "aider" not in agents or shutil.which("shiftgit") is not None:
        return []
    return ["note: `shiftgit` is not on PATH here; Aider runs `shiftgit hook aider after-edit` from its PATH "
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
        if any(_has_command(group, launcher.legacy(agent, name)) for group in groups):
            continue  # ours, or the user's own form of it (`/path/to/python -m shiftgit hook ...`): kept
        entry = handler(agent, name, config)
        groups.append(entry if config.flat else {"hooks": [entry]})
        added.append(event)
    return added


def merge_defaults(document: dict[str, Any], config: AgentConfig) -> list[str]:
    """Set the top-level keys the agent would otherwise add itself; returns the keys set."""
    added = [key for key in config.defaults if key not in document]
    document.update({key: config.defaults[key] for key in added})
    return added


def retire_hooks(document: dict[str, Any], agent: str, config: AgentConfig) -> list[str]:
    """Remove shiftgit's own handlers for retired events (and the groups they leave empty)."""
    hooks = document.get("hooks")
    if not isinstance(hooks, dict):
        return []
    removed = []
    for event, groups in list(hooks.items()):
        if not isinstance(groups, list):
            continue
        for name in config.retired:
            kept = [_without(group, agent, name) for group in groups]
            if kept != groups:
                removed.append(event)
                groups = [g for g in kept if not (isinstance(g, dict) and g.get("hooks") == [])]
        if groups:
            hooks[event] = groups
        else:
            del hooks[event]
    return removed


def _without(group: Any, agent: str, event: str) -> Any:
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return group
    kept = [h for h in group["hooks"] if not (isinstance(h, dict) and isinstance(h.get("command"), str)
                                               and launcher.is_ours(h["command"], agent, event))]
    return group if len(kept) == len(group["hooks"]) else {**group, "hooks": kept}


def upgrade_hooks(document: dict[str, Any], agent: str, config: AgentConfig) -> list[str]:
    """Replace the command of each handler an older shiftgit wrote (`shiftgit hook AGENT EVENT`, an older launcher
    command) with the current one; returns the events changed. A command the user wrote is left as it is."""
    hooks = document.get("hooks")
    if not isinstance(hooks, dict):
        return []
    key = "bash" if config.flat else "command"
    changed = []
    for event, name in config.events.items():
        groups = hooks.get(event)
        handlers = [h for g in groups if isinstance(g, dict) for h in ([g] if config.flat else g.get("hooks") or [])
                    ] if isinstance(groups, list) else []
        for found in handlers:
            text = found.get(key) if isinstance(found, dict) else None
            if isinstance(text, str) and text != command(agent, name) and launcher.is_ours(text, agent, name):
                found[key] = command(agent, name)
                changed.append(event)
    return list(dict.fromkeys(changed))


def handler(agent: str, event: str, config: AgentConfig) -> dict[str, Any]:
    native = next((name for name, ours in config.events.items() if ours == event), "")
    timeout = config.timeouts.get(native, config.timeout)
    if config.flat:
        return {"type": "command", "bash": command(agent, event), "timeoutSec": timeout}
    entry: dict[str, Any] = {"type": "command", "command": command(agent, event), "timeout": timeout}
    if agent == "gemini":
        entry["name"] = f"shiftgit-{event}"
    return entry


def _has_command(group: Any, text: str) -> bool:
    if isinstance(group, dict) and isinstance(group.get("bash"), str):  # Copilot's flat handler
        return text in group["bash"]
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
    merge_defaults(document, AGENTS[agent])
    return document
