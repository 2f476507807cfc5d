"""Which agent, at which version, is running this hook. Stdlib only (the agent hooks' budget).

No agent puts its version in the hook input, so the hook looks at the processes above it (Linux
`/proc`): the CLIs whose hooks shiftgit wires are npm packages, and the agent's process runs a file
inside `node_modules/<package>`, whose `package.json` says the version (Aider has no agent hooks: its
commits meet the git hooks). Not found (another OS, another install): the version is "not detected" and the
hooks work as usual. A version whose major number shiftgit does not know gets the hooks to fail open
(no end-of-turn hold) with one line in the hook log, which `shiftgit doctor` shows.
"""

from __future__ import annotations

import os
from pathlib import Path

from shiftgit import rawjson

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from shiftgit.tuples import NamedTuple

NAMES = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "qwen": "Qwen Code",
         "copilot": "GitHub Copilot CLI", "opencode": "OpenCode", "aider": "Aider"}
PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "gemini": "@google/gemini-cli",
            "qwen": "@qwen-code/qwen-code", "copilot": "@github/copilot", "opencode": "opencode"}
# The major versions whose hook input and output shiftgit knows, and the versions proven with the real CLI
# (tests/agents_real; README, "Agent integrations").
KNOWN_MAJORS = {"claude": ("2",), "codex": ("0",), "gemini": ("0",), "qwen": ("0",), "copilot": ("1",),
                "opencode": ("1",), "aider": ("0",)}
TESTED = {"claude": "2.1.332", "codex": "0.171.0", "gemini": "0.61.0", "qwen": "0.24.4", "copilot": "1.0.102",
          "opencode": "1.18.33", "aider": "0.86.2"}
UNKNOWN_MARK = "unknown agent version:"
ANCESTORS = 8


class AgentVersion(NamedTuple):
    agent: str
    version: str | None  # None: not detected

    @property
    def known(self) -> bool:
        """False only for a detected version of a major number shiftgit does not know."""
        return self.version is None or self.version.split(".", 1)[0] in KNOWN_MAJORS.get(self.agent, ())

    def label(self) -> str:
        name = NAMES.get(self.agent, self.agent)
        return f"{name} {self.version}" if self.version else f"{name} (version not detected)"

    def unknown_line(self) -> str:
        majors = ", ".join(f"{m}.x" for m in KNOWN_MAJORS.get(self.agent, ()))
        return (f"{UNKNOWN_MARK} {self.label()}; this shiftgit knows {majors} (tested with "
                f"{TESTED.get(self.agent, '?')}): the hooks fail open (briefing only, no end-of-turn hold); "
                "upgrade shiftgit (`pip install -U shiftgit`), then run `shiftgit doctor`")


def detect(agent: str, pid: int | None = None) -> AgentVersion:
    """The agent's version from the processes above `pid` (default: this hook's parent)."""
    start = os.getppid() if pid is None else pid
    for proc in _ancestors(start):
        for text in _paths(proc):
            version = _version_in(agent, text)
            if version is not None:
                return AgentVersion(agent, version)
    return AgentVersion(agent, None)


def _ancestors(pid: int) -> list[int]:
    found: list[int] = []
    while pid > 1 and len(found) < ANCESTORS:
        found.append(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


def _paths(pid: int) -> list[str]:
    texts = []
    try:
        texts.append(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        pass
    try:
        texts += Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")[:4]
    except OSError:
        pass
    return [t for t in texts if "node_modules" in t]


def _version_in(agent: str, text: str) -> str | None:
    package = PACKAGES.get(agent)
    if package is None:
        return None
    marker = f"node_modules/{package}"
    at = text.find(marker)
    if at < 0:
        return None
    end = text.find("/", at + len(marker))  # the package directory, or a platform variant (codex-linux-x64)
    folder = text[:end] if end >= 0 else text
    try:
        data = rawjson.loads(Path(folder, "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return leading_version(version) if isinstance(version, str) else None


def leading_version(text: str) -> str | None:
    """What `re.match(r"\\d+(\\.\\d+)*", text)` matches (None: no digit first), without re: a hook's process need
    not import it (see `__main__._defer_imports`)."""
    end = 0
    while True:
        start = end
        while end < len(text) and text[end].isdecimal():  # `\d`: a Unicode decimal digit
            end += 1
        if end == start:  # no digit after the dot (or at all): the match ends before it
            return text[:start - 1] if start else None
        if not text.startswith(".", end):
            return text[:end]
        end += 1

