"""Do the agent's own trust settings let it run this repository's hooks? (for `shiftgit doctor`)

Read from the user's files, never changed here:
- Codex: the project trusted (`[projects."<root>"]` in $CODEX_HOME/config.toml) and each shiftgit hook
  trusted (`[hooks.state."<root>/.codex/hooks.json:<event>:<group>:<handler>"]`); Codex keeps a hash per
  hook and asks again when hooks.json changes, which only Codex itself can tell;
- Gemini CLI and Qwen Code: the folder (or a parent) in `~/.gemini|.qwen/trustedFolders.json` (Qwen: only
  when its folder trust is on, `security.folderTrust.enabled`, off by default);
- Copilot CLI: the folder (or a parent) in `trustedFolders` of `~/.copilot/config.json`.
Claude Code (`claude -p`), OpenCode and Aider have no trust step for hooks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from shiftgit.agents import install


class Check(NamedTuple):
    """One thing `shiftgit doctor` checked: fine, or a finding with the command that fixes it."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    agent: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "agent": self.agent, "detail": self.detail, "fix": self.fix}


def checks(root: Path, agent: str, env: dict[str, str]) -> list[Check]:
    home = Path(env.get("HOME") or Path.home())
    if agent == "codex":
        return codex(root, Path(env.get("CODEX_HOME") or home / ".codex"))
    if agent == "gemini":
        if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
            return [Check("trust", True, "GEMINI_CLI_TRUST_WORKSPACE=true")]
        return [folders(root, home / ".gemini" / "trustedFolders.json", "gemini")]
    if agent == "qwen":
        settings = _json(home / ".qwen" / "settings.json")
        trust = ((settings or {}).get("security") or {}).get("folderTrust") if isinstance(settings, dict) else None
        if not (isinstance(trust, dict) and trust.get("enabled") is True):
            return [Check("trust", True, "folder trust is off (security.folderTrust.enabled): project hooks load")]
        return [folders(root, home / ".qwen" / "trustedFolders.json", "qwen")]
    if agent == "copilot":
        return [copilot(root, home / ".copilot")]
    return []


def _under(root: Path, folder: str) -> bool:
    try:
        return root.resolve() == Path(folder).resolve() or Path(folder).resolve() in root.resolve().parents
    except (OSError, RuntimeError):
        return False


def folders(root: Path, path: Path, agent: str) -> Check:
    """Gemini's format (Qwen's is the same): {"<path>": "TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST"}."""
    data = _json(path)
    levels = [level for folder, level in (data.items() if isinstance(data, dict) else [])
              if _under(root, str(Path(folder).parent) if level == "TRUST_PARENT" else folder)]
    if levels and "DO_NOT_TRUST" not in levels:
        return Check("trust", True, f"{root} is trusted ({path})")
    return Check("trust", False, f"{root} is not a trusted folder in {path}: {agent} loads no project hooks here",
                   f"{agent}  # run it here once and trust the folder")


def copilot(root: Path, home: Path) -> Check:
    """`trustedFolders` in ~/.copilot/config.json (Copilot manages it; `//` comments; seen with 1.0.102)."""
    for path in (home / "config.json",):
        data = _json(path, comments=True)
        trusted = (data.get("trustedFolders") or data.get("trusted_folders")) if isinstance(data, dict) else None
        if isinstance(trusted, list) and any(isinstance(f, str) and _under(root, f) for f in trusted):
            return Check("trust", True, f"{root} is trusted ({path})")
    return Check("trust", False, f"{root} is not in trustedFolders of {home / 'config.json'}: Copilot runs no "
                 "repository hooks here", "copilot  # run it here once and trust the folder (copilot -p: "
                 "--trust-folder)")


def codex(root: Path, home: Path) -> list[Check]:
    config = home / "config.toml"
    try:
        text = config.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    project = next((str(p) for p in (root, *root.parents) if _table(text, f'projects."{p}"', "trust_level",
                                                                      '"trusted"')), None)
    found = [Check("trust", project is not None,
                     f"project {project} trusted in {config}" if project else f"{root} is not a trusted project in "
                     f"{config}: Codex loads no project hooks here",
                     None if project else "codex  # run it here, accept \"trust this folder\"")]
    hooks = root / install.AGENTS["codex"].path
    untrusted = [event for event, key in _codex_keys(hooks) if not _table(text, f'hooks.state."{key}"',
                                                                          "trusted_hash", None)]
    found.append(Check("hook trust", not untrusted, f"untrusted in Codex: {', '.join(untrusted)} (`codex exec` "
                         "skips them without a word)" if untrusted else "each shiftgit hook is trusted (Codex asks "
                         "again whenever .codex/hooks.json changes)",
                         "codex  # then type /hooks and trust each shiftgit hook" if untrusted else None))
    return found


def _codex_keys(hooks: Path) -> list[tuple[str, str]]:
    """(event, Codex's key) for each shiftgit handler in hooks.json: `<path>:<snake_event>:<group>:<handler>`."""
    data = _json(hooks)
    keys = []
    table = data.get("hooks") if isinstance(data, dict) else None
    for event, groups in (table.items() if isinstance(table, dict) else []):
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if isinstance(handler, dict) and "shiftgit hook codex " in str(handler.get("command", "")):
                    keys.append((event, f"{hooks}:{snake}:{g}:{h}"))
    return keys


def _table(text: str, name: str, key: str, value: str | None) -> bool:
    """Whether TOML `text` has the table `[name]` with `key` (= `value`, when given) before the next table."""
    at = text.find(f"[{name}]")
    if at < 0:
        return False
    body = text[at + len(name) + 2:]
    body = body[:body.find("\n[")] if "\n[" in body else body
    for line in body.splitlines():
        left, _, right = line.partition("=")
        if left.strip() == key and (value is None or right.strip() == value):
            return True
    return False


def _json(path: Path, *, comments: bool = False) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
        if comments:
            text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
        return json.loads(text)
    except (OSError, ValueError):
        return None
