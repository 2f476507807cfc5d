"""Drivers for the agents added in issue 20: Qwen Code, GitHub Copilot CLI, OpenCode and Aider.

Same contract as `_clis.Driver`: `prepare` writes the user-level config in the temporary HOME (capture
hooks, no telemetry or updates) and performs the trust steps a user performs; `argv`/`env` start one
headless session against the fake model.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from ._clis import Driver, capture_command, capture_hooks
from ._fakemodel import MODEL, AnthropicApi, Api, Text, ToolCall, Turn, send_json, send_sse
from ._harness import COPILOT, INSTALL_TIMEOUT, QWEN, CliSpec, Sandbox, Unavailable

QWEN_MODEL = "claude-sonnet-4-5"


class QwenDriver(Driver):
    """Qwen Code: the Anthropic protocol (`security.auth.selectedType`) at ANTHROPIC_BASE_URL; Claude Code's
    hook events and answers in `.qwen/settings.json`; folder trust is off unless the user turns it on."""

    spec = QWEN
    end_of_turn = ("Stop", "stop")
    captured = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PreCompact",
                "PostCompact", "SessionEnd")

    def api(self) -> Api:
        return AnthropicApi()

    def prepare(self, box: Sandbox, *, folder_trust: bool = False) -> None:
        config = box.home / ".qwen"
        config.mkdir(parents=True, exist_ok=True)
        settings = {
            "security": {"auth": {"selectedType": "anthropic"}, "folderTrust": {"enabled": folder_trust}},
            "model": {"name": QWEN_MODEL},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False},
            "hooks": capture_hooks(self.captured),
        }
        (config / "settings.json").write_text(json.dumps(settings, indent=1))
        if folder_trust:
            (config / "trustedFolders.json").write_text(json.dumps({str(box.ws.path): "TRUST_FOLDER"}))

    def argv(self, box: Sandbox, prompt: str, url: str, *, resume: bool = False, extra: tuple[str, ...] = ()
             ) -> list[str]:
        return [str(self.binary), "-p", prompt, *(["--continue"] if resume else []), "--yolo",
                "--output-format", "stream-json", *extra]

    def env(self, box: Sandbox, url: str) -> dict[str, str]:
        env = super().env(box, url)
        env.update({"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-fake-for-tests",
                    "ANTHROPIC_MODEL": QWEN_MODEL})
        return env

    def edit(self, box: Sandbox, rel: str, content: str, *, tokens: int | None = None) -> ToolCall:
        return ToolCall("write_file", {"file_path": str(box.ws.path / rel), "content": content}, tokens=tokens)

    def shell(self, command: str) -> ToolCall:
        return ToolCall("run_shell_command", {"command": command, "description": "run a command"})


# -- GitHub Copilot CLI --------------------------------------------------------------------------------

COPILOT_MODEL = "claude-sonnet-4.5"


class CopilotDriver(Driver):
    """Copilot CLI in BYOK mode (COPILOT_PROVIDER_BASE_URL, the Anthropic protocol: no GitHub sign-in);
    repository hooks from `.github/hooks/*.json`, which run only in a trusted folder: trustedFolders in
    ~/.copilot/config.json, or `--trust-folder` for one `copilot -p`. The capture hooks are a second
    repository hooks file kept out of git (`.git/info/exclude`)."""

    spec = COPILOT
    end_of_turn = ("agentStop", "agent-stop")
    captured = ("sessionStart", "userPromptSubmitted", "preToolUse", "postToolUse", "agentStop", "sessionEnd")

    def api(self) -> Api:
        return AnthropicApi()

    def prepare(self, box: Sandbox, *, trust: bool = True) -> None:
        config = box.home / ".copilot"
        config.mkdir(parents=True, exist_ok=True)
        (config / "config.json").write_text(json.dumps({"trustedFolders": [str(box.ws.path)] if trust else []}))
        hooks = {event: [{"type": "command", "bash": capture_command(event), "timeoutSec": 30}]
                 for event in self.captured}
        (box.ws.path / ".github" / "hooks" / "capture.json").write_text(json.dumps({"version": 1, "hooks": hooks}))
        with open(box.ws.path / ".git" / "info" / "exclude", "a") as exclude:
            exclude.write(".github/hooks/capture.json\n")

    def argv(self, box: Sandbox, prompt: str, url: str, *, resume: bool = False, extra: tuple[str, ...] = ()
             ) -> list[str]:
        return [str(self.binary), "-p", prompt, *(["--continue"] if resume else []), "--allow-all",
                "--disable-client-telemetry", "--output-format", "json", *extra]

    def env(self, box: Sandbox, url: str) -> dict[str, str]:
        env = super().env(box, url)
        env.update({"COPILOT_PROVIDER_BASE_URL": url, "COPILOT_PROVIDER_TYPE": "anthropic",
                    "COPILOT_PROVIDER_API_KEY": "sk-ant-fake-for-tests", "COPILOT_MODEL": COPILOT_MODEL})
        return env

    def edit(self, box: Sandbox, rel: str, content: str, *, tokens: int | None = None) -> ToolCall:
        return ToolCall("create", {"path": str(box.ws.path / rel), "file_text": content}, tokens=tokens)

    def shell(self, command: str) -> ToolCall:
        return ToolCall("bash", {"command": command, "description": "run a command"})


# -- Aider (PyPI) ------------------------------------------------------------------------------------

AIDER_VERSION = "0.86.2"
AIDER = CliSpec("aider", "aider-chat", AIDER_VERSION, "aider")  # from PyPI, not npm: `install_aider`


class ChatCompletionsApi(Api):
    """OpenAI chat completions (`POST /v1/chat/completions`), as litellm sends them for Aider. Aider offers
    no tools: a main request is one of the conversation; its commit-message and summary requests are side
    requests (their system prompt says so)."""

    name = "chat"
    SIDE_MARKS = ("commit message", "summarize")

    def is_main(self, path: str, body: Any) -> bool:
        if not path.endswith("/chat/completions") or not isinstance(body, dict):
            return False
        system = " ".join(s for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "system"
                          for s in [str(m.get("content"))])
        return not any(mark in system.lower() for mark in self.SIDE_MARKS)

    def side_answer(self, handler: BaseHTTPRequestHandler, path: str, body: Any, seq: int) -> None:
        self.answer(handler, path, body, Text("shiftgit test: add notes"), seq)

    def answer(self, handler: BaseHTTPRequestHandler, path: str, body: Any, turn: Turn, seq: int) -> None:
        text = turn.text if isinstance(turn, Text) else turn.say
        tokens = self.tokens(turn)
        usage = {"prompt_tokens": tokens, "completion_tokens": 10, "total_tokens": tokens + 10}
        base = {"id": f"chatcmpl-fake{seq:04d}", "created": int(time.time()), "model": MODEL}
        if isinstance(body, dict) and body.get("stream"):
            chunks = [{**base, "object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                    "finish_reason": None}]},
                      {**base, "object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage}]
            send_sse(handler, iter([(None, c) for c in chunks]))
        else:
            send_json(handler, {**base, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})


class AiderDriver(Driver):
    """Aider from PyPI in its own virtualenv: `--message` runs one request and its reflections, headless.
    Its model is `openai/<name>` at `--openai-api-base`; history files go to HOME so the tree stays clean;
    `.aider.conf.yml` from `shiftgit init --agent aider` turns the commit hooks and the test command on."""

    spec = AIDER
    end_of_turn = ("after-edit", "after-edit")
    captured = ()

    def api(self) -> Api:
        return ChatCompletionsApi()

    def prepare(self, box: Sandbox) -> None:
        pass

    def argv(self, box: Sandbox, prompt: str, url: str, *, resume: bool = False, extra: tuple[str, ...] = ()
             ) -> list[str]:
        keep = box.home / "aider"
        keep.mkdir(exist_ok=True)
        return [str(self.binary), "--message", prompt, "--model", f"openai/{MODEL}", "--openai-api-base", f"{url}/v1",
                "--openai-api-key", "sk-fake-for-tests", "--edit-format", "diff", "--yes-always", "--no-stream",
                "--no-pretty", "--no-gitignore", "--no-check-update", "--no-show-release-notes", "--analytics-disable",
                "--no-show-model-warnings", "--map-tokens", "0", "--no-auto-lint",
                "--chat-history-file", str(keep / "chat.md"), "--input-history-file", str(keep / "input"),
                *extra]

    def edit(self, box: Sandbox, rel: str, content: str, *, tokens: int | None = None) -> Turn:
        """A SEARCH/REPLACE block with an empty SEARCH: Aider's way to create a file in the `diff` format (in
        which a ```bash block is a shell command, not a file)."""
        return Text(f"{rel}\n```\n<<<<<<< SEARCH\n=======\n{content}>>>>>>> REPLACE\n```\n", tokens=tokens)

    def shell(self, command: str) -> Turn:
        return Text(f"```bash\n{command}\n```\n")


def install_aider(root: Path) -> Path:
    """Aider's `aider` script, installed with pip into a virtualenv under `root` once per version."""
    venv = root / f"aider-chat-{AIDER_VERSION}" / "venv"
    binary = venv / "bin" / "aider"
    if binary.exists():
        return binary
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
        proc = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"aider-chat=={AIDER_VERSION}"],
                              capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    except (OSError, subprocess.SubprocessError) as exc:
        raise Unavailable(f"cannot make a virtualenv for aider-chat=={AIDER_VERSION}: {exc}") from None
    if proc.returncode != 0 or not binary.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise Unavailable(f"`pip install aider-chat=={AIDER_VERSION}` failed (exit {proc.returncode}): "
                          + " | ".join(tail))
    return binary
