"""`init --agent opencode|aider`: the agents that take no JSON hook config.

- OpenCode runs JavaScript plugins from `.opencode/plugin/`: shiftgit writes its own plugin file there,
  which calls `shiftgit hook opencode ...` at the first model request of a session (the briefing goes into
  the system prompt), when the session goes idle (end of turn: a hold is sent back as a prompt, once) and
  before a compaction. The file carries a version line: an older one is replaced, a foreign one refused.
- Aider has no hook events, but it runs git's commit hooks on its own commits when `git-commit-verify`
  is on: shiftgit sets it in `.aider.conf.yml` (merged line by line, every other line kept), so the
  commit gate refuses a commit whose ledger is stale. Aider shows a refused commit to the user only; what
  it shows the model is a failed test command. So when no `test-cmd` is configured, shiftgit sets
  `test-cmd: shiftgit hook aider after-edit` and `auto-test: true`: after each edit that hook fails, once
  per staleness, with the end-of-turn reason, which Aider hands the model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from shiftgit.agents import launcher
from shiftgit.errors import UsageError
from shiftgit.ledger.store import write_atomic

OPENCODE_PLUGIN = ".opencode/plugin/shiftgit.js"
AIDER_CONF = ".aider.conf.yml"
AGENTS: dict[str, str] = {"opencode": OPENCODE_PLUGIN, "aider": AIDER_CONF}
PLUGIN_VERSION = 2  # 2: runs this clone's hook launcher (agents/launcher.py) through sh, else `shiftgit` from PATH
PLUGIN_MARK = "// shiftgit plugin for OpenCode, version "
VERIFY_KEY = re.compile(r"^git-commit-verify\s*:\s*(?P<value>[^#\n]*?)\s*(#.*)?$", re.MULTILINE)
VERIFY_LINE = "git-commit-verify: true  # shiftgit: run git's commit hooks (the commit gate) on Aider's commits"
TEST_KEY = re.compile(r"^(test-cmd|auto-test)\s*:", re.MULTILINE)
TEST_LINES = ("test-cmd: shiftgit hook aider after-edit  # shiftgit: tells the model when its work is not recorded\n"
              "auto-test: true\n")
TRUE = ("true", "yes", "on", "y")

TRUST_STEPS: dict[str, tuple[str, ...]] = {
    "opencode": ("OpenCode loads every plugin in .opencode/plugin/ without asking: review "
                 f"{OPENCODE_PLUGIN} like any code you commit. It runs this clone's hook launcher (`shiftgit init` "
                 "writes it), else `shiftgit` from OpenCode's PATH.",),
    "aider": ("Aider needs no trust step; it reads .aider.conf.yml from the repository root (and your home). "
              "Its commits now go through the commit gate: record the work with `shiftgit checkpoint` "
              "before Aider commits, or the commit is refused with the reason.",),
}

PLUGIN = PLUGIN_MARK + str(PLUGIN_VERSION) + """ (written by `shiftgit init --agent opencode`; rerun it to update).
// Each call runs `shiftgit hook opencode EVENT` (this clone's launcher) with a JSON payload on stdin, reads its answer;
// shiftgit's hooks fail open, and so does this plugin: any error leaves OpenCode as it was.
import { spawn } from "node:child_process";

const TIMEOUT_MS = 30000;
// this clone's hook launcher (written by `shiftgit init`, never committed), else `shiftgit` from PATH
const LAUNCH = """ + json.dumps(launcher.command("opencode", '"$1"')) + """;

function hook(directory, event, payload) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn("sh", ["-c", LAUNCH, "sh", event], { cwd: directory, stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      resolve({});
      return;
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUT_MS);
    child.on("error", () => { clearTimeout(timer); resolve({}); });
    child.stdout.on("data", (chunk) => { out += chunk; });
    child.on("close", () => {
      clearTimeout(timer);
      try { resolve(out.trim() ? JSON.parse(out) : {}); } catch { resolve({}); }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify({ cwd: directory, ...payload }));
  });
}

export const Shiftgit = async ({ client, directory }) => {
  const briefings = new Map();  // session id -> the briefing shiftgit gave at its first request
  const held = new Set();       // sessions continuing because shiftgit held their last turn
  return {
    "experimental.chat.system.transform": async (input, output) => {
      const id = input?.sessionID;
      if (!id) return;
      if (!briefings.has(id)) {
        const answer = await hook(directory, "session-start", { session_id: id, hook_event_name: "SessionStart" });
        briefings.set(id, answer?.hookSpecificOutput?.additionalContext || "");
      }
      const text = briefings.get(id);
      if (text) output.system.push(text);
    },
    "experimental.session.compacting": async (input) => {
      await hook(directory, "pre-compact", { session_id: input?.sessionID, hook_event_name: "PreCompact" });
    },
    event: async ({ event }) => {
      if (event?.type !== "session.idle") return;
      const id = event.properties?.sessionID;
      if (!id) return;
      const active = held.has(id);
      held.delete(id);
      const answer = await hook(directory, "session-idle",
                                { session_id: id, hook_event_name: "Stop", stop_hook_active: active });
      if (answer?.decision !== "block" || !answer.reason) return;
      held.add(id);
      await client.session.prompt({ path: { id }, body: { parts: [{ type: "text", text: answer.reason }] } });
    },
  };
};
"""


def preflight(root: Path, agent: str) -> None:
    """Raise the error `install` would raise, writing nothing."""
    if agent == "opencode":
        _plugin_state(root)
    else:
        _aider_text(root)


def install(root: Path, agent: str) -> list[str]:
    return _install_plugin(root) if agent == "opencode" else _install_aider(root)


def plugin_version(text: str) -> int | None:
    """The version line of a plugin shiftgit wrote, or None for any other file."""
    first = text.split("\n", 1)[0]
    if not first.startswith(PLUGIN_MARK):
        return None
    number = first[len(PLUGIN_MARK):].split(" ", 1)[0]
    return int(number) if number.isdigit() else None


def _plugin_state(root: Path) -> str | None:
    """The plugin file's text (None: absent); a file shiftgit did not write is refused."""
    try:
        text = (root / OPENCODE_PLUGIN).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{OPENCODE_PLUGIN}: cannot be read ({exc}); move it away, then rerun "
                         "`shiftgit init --agent opencode`") from None
    if plugin_version(text) is None:
        raise UsageError(f"{OPENCODE_PLUGIN}: not a plugin shiftgit wrote; move it away (or rename it), then rerun "
                         "`shiftgit init --agent opencode`")
    return text


def _install_plugin(root: Path) -> list[str]:
    text = _plugin_state(root)
    if text == PLUGIN:
        return [f"opencode: plugin already in {OPENCODE_PLUGIN}"]
    (root / OPENCODE_PLUGIN).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(root / OPENCODE_PLUGIN, PLUGIN.encode())
    verb = "wrote" if text is None else "updated"
    return [f"opencode: {verb} the plugin {OPENCODE_PLUGIN} (commit it)"]


def _aider_text(root: Path) -> str | None:
    try:
        return (root / AIDER_CONF).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{AIDER_CONF}: cannot be read ({exc}); fix it, then rerun "
                         "`shiftgit init --agent aider`") from None


def aider_verifies(text: str | None) -> bool:
    """Whether the config turns Aider's `git-commit-verify` on."""
    found = VERIFY_KEY.findall(text or "")
    return bool(found) and found[-1][0].strip().strip("'\"").lower() in TRUE


def _install_aider(root: Path) -> list[str]:
    text = _aider_text(root) or ""
    lines = []
    if aider_verifies(text):
        lines.append(f"aider: git-commit-verify already on in {AIDER_CONF}")
    elif VERIFY_KEY.search(text):
        text = VERIFY_KEY.sub(VERIFY_LINE, text)
        lines.append(f"aider: turned git-commit-verify on in {AIDER_CONF} (it was off; commit it)")
    else:
        text = _append(text, VERIFY_LINE + "\n")
        lines.append(f"aider: added git-commit-verify: true to {AIDER_CONF} (commit it)")
    keys = set(TEST_KEY.findall(text))
    if not keys:
        text = _append(text, TEST_LINES)
        lines.append(f"aider: added test-cmd: shiftgit hook aider after-edit and auto-test: true to {AIDER_CONF}")
    elif "shiftgit hook aider" not in text:
        lines.append(f"aider: kept your {' and '.join(sorted(keys))} in {AIDER_CONF}; a refused commit is then shown "
                     "to you, not to the model (see README, 'Agent integrations')")
    if any("added" in line or "turned" in line for line in lines):
        write_atomic(root / AIDER_CONF, text.encode())
    return lines


def _append(text: str, lines: str) -> str:
    return text + ("" if not text or text.endswith("\n") else "\n") + lines
