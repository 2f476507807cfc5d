"""Drivers for the agents added in issue 20: Qwen Code, GitHub Copilot CLI, OpenCode and Aider.

Same contract as `_clis.Driver`: `prepare` writes the user-level config in the temporary HOME (capture
hooks, no telemetry or updates) and performs the trust steps a user performs; `argv`/`env` start one
headless session against the fake model.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from ._clis import Driver, capture_command, capture_hooks
from ._fakemodel import MODEL, AnthropicApi, Api, FakeModel, Request, Text, ToolCall, Turn, send_json, send_sse
from ._harness import COPILOT, INSTALL_TIMEOUT, OPENCODE, QWEN, CliSpec, Finished, Sandbox, Unavailable

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


# -- OpenCode --------------------------------------------------------------------------------------------

OPENCODE_MODEL = "anthropic/claude-sonnet-4-5"


class OpenCodeDriver(Driver):
    """OpenCode: its built-in Anthropic provider with `baseURL` at the fake model (~/.config/opencode/opencode.json,
    rewritten per run), models.dev and updates off; `opencode run` headless. It takes the project directory
    from $PWD, not from its working directory. shiftgit's plugin (`.opencode/plugin/shiftgit.js`) is the only
    hook; there is no capture hook."""

    spec = OPENCODE
    end_of_turn = ("session.idle", "session-idle")
    captured = ()

    def api(self) -> Api:
        return AnthropicApi()

    def prepare(self, box: Sandbox) -> None:
        (box.home / ".config" / "opencode").mkdir(parents=True, exist_ok=True)

    def argv(self, box: Sandbox, prompt: str, url: str, *, resume: bool = False, extra: tuple[str, ...] = ()
             ) -> list[str]:
        return [str(self.binary), "run", prompt, *(["--continue"] if resume else []), "--print-logs", *extra]

    def env(self, box: Sandbox, url: str) -> dict[str, str]:
        config = {"provider": {"anthropic": {"options": {"baseURL": f"{url}/v1", "apiKey": "sk-ant-fake-for-tests"}}},
                  "model": OPENCODE_MODEL, "autoupdate": False, "share": "disabled",
                  "permission": {"edit": "allow", "bash": "allow"}}
        (box.home / ".config" / "opencode" / "opencode.json").write_text(json.dumps(config))
        env = super().env(box, url)
        env.update({"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
                    "PWD": str(box.ws.path)})
        return env

    def edit(self, box: Sandbox, rel: str, content: str, *, tokens: int | None = None) -> ToolCall:
        return ToolCall("write", {"filePath": str(box.ws.path / rel), "content": content}, tokens=tokens)

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


def run_served(driver: OpenCodeDriver, box: Sandbox, script: Sequence[Turn], *, prompt: str,
               settle: float = 4.0, bound: float = 150.0, ready: float = 180.0) -> tuple[Finished, list[Request]]:
    """One OpenCode session the way its TUI runs one: `opencode serve` (the server the TUI talks to), a
    session created and prompted over its HTTP API; over when no model request came for `settle` seconds
    after the prompt's reply. (`opencode run` exits as soon as the session goes idle, before a plugin can
    answer session.idle.) `ready`: how long the server may take to start (a first start on a loaded
    machine took over a minute); the session's own time, from the prompt on, is what `Finished` reports."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = box.home / "opencode-serve.log"
    started = time.monotonic()
    with FakeModel(driver.api(), script, lifetime=ready + bound + 30) as model, open(log, "w") as out:
        argv = [str(driver.binary), "serve", "--port", str(port), "--hostname", "127.0.0.1", "--print-logs"]
        proc = subprocess.Popen(argv, cwd=box.ws.path, env=driver.env(box, model.url), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        timed_out = False
        try:
            api = f"http://127.0.0.1:{port}"
            _wait_ready(api, started + ready)
            started = time.monotonic()
            session = _call(api, "POST", "/session", {})
            _call(api, "POST", f"/session/{session['id']}/message", {"parts": [{"type": "text", "text": prompt}]},
                  timeout=bound)
            seen, quiet_since = -1, time.monotonic()
            while time.monotonic() - quiet_since < settle:
                if time.monotonic() - started > bound:
                    timed_out = True
                    break
                count = len(model.requests)
                if count != seen:
                    seen, quiet_since = count, time.monotonic()
                time.sleep(0.2)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        requests = list(model.requests)
    text = log.read_text(errors="replace")
    return Finished(argv, 0, text, "", time.monotonic() - started - settle, timed_out), requests


def _call(api: str, method: str, path: str, body: Any = None, timeout: float = 30.0) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(api + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        raw = answer.read()
    return json.loads(raw) if raw else None


def _wait_ready(api: str, deadline: float) -> None:
    while True:
        try:
            _call(api, "GET", "/session", timeout=5)
            return
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                raise AssertionError(f"opencode serve did not answer on {api}") from None
            time.sleep(0.2)
