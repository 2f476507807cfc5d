"""How each real CLI is pointed at the fake model, configured in a temporary HOME, trusted and run.

One `Driver` per CLI. `prepare` writes the user-level config (capture hooks, no telemetry or update
checks) and performs the trust steps a user performs; `argv`/`env` start one headless session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, ClassVar

from ._fakemodel import AnthropicApi, Api, GeminiApi, ResponsesApi, ToolCall, Turn
from ._harness import CLAUDE, CODEX, GEMINI, CliSpec, Sandbox

CAPTURE_HOOK = Path(__file__).with_name("_capture_hook.py")
APP_SERVER_TIMEOUT = 60.0


def capture_command(event: str) -> str:
    return f"{sys.executable} {CAPTURE_HOOK} {event}"


def capture_hooks(events: tuple[str, ...], *, named: bool = False) -> dict[str, Any]:
    """A `hooks` object (event -> matcher groups -> handlers) running the capture hook for `events`."""
    def handler(event: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "command", "command": capture_command(event)}
        if named:
            entry["name"] = f"capture-{event}"
        return entry

    return {event: [{"hooks": [handler(event)]}] for event in events}


class Driver:
    """One agent CLI under test."""

    spec: ClassVar[CliSpec]
    captured: ClassVar[tuple[str, ...]]  # the hook events the capture hook records
    end_of_turn: ClassVar[tuple[str, str]]  # the CLI's end-of-turn event and shiftgit's name for it

    def __init__(self, binary: Path) -> None:
        self.binary = binary

    def api(self) -> Api:
        raise NotImplementedError

    def prepare(self, box: Sandbox) -> None:
        raise NotImplementedError

    def argv(self, box: Sandbox, prompt: str, url: str, *, resume: bool = False, extra: tuple[str, ...] = ()
             ) -> list[str]:
        """One headless session with `prompt`; `resume`: continue the latest session of the workspace;
        `extra`: Codex `-c key=value` overrides, other CLIs' extra arguments."""
        raise NotImplementedError

    def env(self, box: Sandbox, url: str) -> dict[str, str]:
        return {**box.env, "SHIFTGIT_CAPTURE_LOG": str(box.capture_log), **box.extra_env}

    # -- the scripted tool calls, in this CLI's own tool names --

    def edit(self, box: Sandbox, rel: str, content: str, *, tokens: int | None = None) -> Turn:
        """A call of the CLI's own file-writing tool that creates `rel` with `content`; the answer
        reports `tokens` as the prompt size (see `_fakemodel.Text`)."""
        raise NotImplementedError

    def shell(self, command: str) -> Turn:
        """A call of the CLI's own shell tool (Aider: a shell block in its answer)."""
        raise NotImplementedError


# -- Claude Code ---------------------------------------------------------------------------------

class ClaudeDriver(Driver):
    """Claude Code: ANTHROPIC_BASE_URL + ANTHROPIC_API_KEY; `claude -p` loads `.claude/settings.json`
    hooks without a trust prompt (the workspace trust dialog is interactive-only)."""

    spec = CLAUDE
    end_of_turn = ("Stop", "stop")
    captured = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PreCompact",
                "PostCompact", "SessionEnd")

    def api(self) -> Api:
        return AnthropicApi()

    def prepare(self, box: Sandbox) -> None:
        config = box.home / ".claude"
        config.mkdir(parents=True, exist_ok=True)
        (config / "settings.json").write_text(json.dumps({"hooks": capture_hooks(self.captured)}, indent=1))

    def argv(self, box: Sandbox, prompt: str, url: str, *, resume: bool = False, extra: tuple[str, ...] = ()
             ) -> list[str]:
        return [str(self.binary), "-p", prompt, *(["--continue"] if resume else []),
                "--permission-mode", "bypassPermissions", "--output-format", "stream-json", "--verbose",
                "--include-hook-events", *extra]

    def env(self, box: Sandbox, url: str) -> dict[str, str]:
        env = super().env(box, url)
        env.update({
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-for-tests",
            "CLAUDE_CONFIG_DIR": str(box.home / ".claude"),
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        })
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # bypassPermissions is refused to root unless the CLI is told it is sandboxed
        return env

    def edit(self, box: Sandbox, rel: str, content: str, *, tokens: int | None = None) -> ToolCall:
        return ToolCall("Write", {"file_path": str(box.ws.path / rel), "content": content}, tokens=tokens)

    def shell(self, command: str) -> ToolCall:
        return ToolCall("Bash", {"command": command, "description": "run a command"})


# -- Codex -----------------------------------------------------------------------------------------

PROVIDER = "shiftgit_fake"
CODEX_MODEL = "gpt-5.5"  # a model Codex knows, so it offers its usual tools (apply_patch, exec_command)


class CodexDriver(Driver):
    """Codex: a custom model provider (`wire_api = "responses"`) in $CODEX_HOME/config.toml; the
    project and each hook trusted through the app server, the way the TUI's trust prompts do it."""

    spec = CODEX
    end_of_turn = ("Stop", "stop")
    captured = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PreCompact",
                "PostCompact", "SessionEnd")

    def api(self) -> Api:
        return ResponsesApi()

    def codex_home(self, box: Sandbox) -> Path:
        return box.home / ".codex"

    def prepare(self, box: Sandbox, *, trust: bool = True, profile: bool = True) -> None:
        """`profile`: put shiftgit on the login PATH in ~/.profile, as a pipx / `pip --user` user has it."""
        home = self.codex_home(box)
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(self._config_toml())
        (home / "hooks.json").write_text(json.dumps({"hooks": capture_hooks(self.captured)}, indent=1))
        # `bash -lc` (how Codex runs the model's commands) rebuilds PATH from /etc/profile; a user puts
        # their own bin directories back in ~/.profile, which is what pipx/pip --user installs rely on.
        if profile:
            (box.home / ".profile").write_text(f'export PATH="{box.shiftgit_dir}:$PATH"\n')
        if trust:
            self.trust(box)

    @staticmethod
    def _config_toml() -> str:
        return (f'model = "{CODEX_MODEL}"\n'
                f'model_provider = "{PROVIDER}"\n'
                "check_for_update_on_startup = false\n\n"
                "[analytics]\nenabled = false\n\n"
                f"[model_providers.{PROVIDER}]\n"
                'name = "shiftgit fake model"\n'
                'base_url = "http://127.0.0.1:9/v1"\n'  # replaced per run with -c
                'env_key = "SHIFTGIT_FAKE_API_KEY"\n'
                'wire_api = "responses"\n'
                "request_max_retries = 0\n"
                "stream_max_retries = 0\n")

    def trust(self, box: Sandbox) -> None:
        """Trust the project, then every hook Codex lists for it (shiftgit's and the capture hooks),
        through `codex app-server`: `config/batchWrite` and `hooks/list`, the calls the TUI makes."""
        with AppServer(self.binary, box.ws.path, self.env(box, "")) as server:
            server.write_config("projects", {str(box.ws.path): {"trust_level": "trusted"}})
            hooks = server.hooks(box.ws.path)
            server.write_config("hooks.state", {h["key"]: {"trusted_hash": h["currentHash"]} for h in hooks})
            untrusted = [h["key"] for h in server.hooks(box.ws.path) if h["trustStatus"] != "trusted"]
        if untrusted:
            raise AssertionError(f"codex still lists untrusted hooks after the trust steps: {untrusted}")

    def argv(self, box: Sandbox, prompt: str, url: str, *, resume: bool = False, extra: tuple[str, ...] = ()
             ) -> list[str]:
        overrides = [f'model_providers.{PROVIDER}.base_url="{url}/v1"', *extra]
        head = [str(self.binary), "exec", *(["resume", "--last"] if resume else [])]
        return [*head, "--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check",
                *(arg for o in overrides for arg in ("-c", o)), prompt]

    def env(self, box: Sandbox, url: str) -> dict[str, str]:
        env = super().env(box, url)
        env.update({"CODEX_HOME": str(self.codex_home(box)), "SHIFTGIT_FAKE_API_KEY": "sk-fake-for-tests"})
        return env

    def edit(self, box: Sandbox, rel: str, content: str, *, tokens: int | None = None) -> ToolCall:
        """`apply_patch` is a freeform tool: its input is a patch in Codex's own format."""
        lines = "".join(f"+{line}\n" for line in content.splitlines())
        return ToolCall("apply_patch", raw_input=f"*** Begin Patch\n*** Add File: {rel}\n{lines}*** End Patch\n",
                        tokens=tokens)

    def shell(self, command: str) -> ToolCall:
        return ToolCall("exec_command", {"cmd": command})


class AppServer:
    """A minimal JSON-RPC client for `codex app-server` over stdio (one JSON object per line)."""

    def __init__(self, binary: Path, cwd: Path, env: dict[str, str]) -> None:
        self._proc = subprocess.Popen([str(binary), "app-server"], cwd=cwd, env=env, text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      start_new_session=True)
        self._ids = 0
        self._watchdog = threading.Timer(APP_SERVER_TIMEOUT, self._proc.kill)  # never hang a test run
        self._watchdog.daemon = True
        self._watchdog.start()

    def __enter__(self) -> AppServer:
        self.call("initialize", {"clientInfo": {"name": "shiftgit-tests", "version": "1"}})
        self._send({"method": "initialized"})
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._watchdog.cancel()

    def _send(self, message: dict[str, Any]) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(message) + "\n")
        self._proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self._ids += 1
        self._send({"id": self._ids, "method": method, "params": params})
        assert self._proc.stdout is not None
        for line in self._proc.stdout:  # notifications come in between; skip them
            message = json.loads(line)
            if message.get("id") != self._ids:
                continue
            if "error" in message:
                raise AssertionError(f"codex app-server {method}: {message['error']}")
            return message.get("result")
        raise AssertionError(f"codex app-server exited before answering {method}")

    def write_config(self, key_path: str, value: Any) -> None:
        self.call("config/batchWrite", {"edits": [{"keyPath": key_path, "value": value, "mergeStrategy": "upsert"}]})

    def hooks(self, cwd: Path) -> list[dict[str, Any]]:
        result = self.call("hooks/list", {"cwds": [str(cwd)]})
        return [h for entry in result["data"] for h in entry["hooks"]]


# -- Gemini CLI ------------------------------------------------------------------------------------

class GeminiDriver(Driver):
    """Gemini CLI: GOOGLE_GEMINI_BASE_URL with the API-key auth type selected in settings; project
    hooks load only in a trusted folder (~/.gemini/trustedFolders.json, what the trust dialog writes)."""

    spec = GEMINI
    end_of_turn = ("AfterAgent", "after-agent")
    captured = ("SessionStart", "BeforeAgent", "AfterAgent", "BeforeTool", "AfterTool", "PreCompress",
                "SessionEnd")

    def api(self) -> Api:
        return GeminiApi()

    def prepare(self, box: Sandbox) -> None:
        config = box.home / ".gemini"
        config.mkdir(parents=True, exist_ok=True)
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "hooks": capture_hooks(self.captured, named=True),
        }
        (config / "settings.json").write_text(json.dumps(settings, indent=1))
        (config / "trustedFolders.json").write_text(json.dumps({str(box.ws.path): "TRUST_FOLDER"}, indent=1))

    def argv(self, box: Sandbox, prompt: str, url: str, *, resume: bool = False, extra: tuple[str, ...] = ()
             ) -> list[str]:
        return [str(self.binary), "-p", prompt, *(["--resume", "latest"] if resume else []), "--yolo",
                "--output-format", "stream-json", *extra]

    def env(self, box: Sandbox, url: str) -> dict[str, str]:
        env = super().env(box, url)
        env.update({"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "fake-key-for-tests",
                    "GEMINI_CLI_NO_RELAUNCH": "true"})
        return env

    def edit(self, box: Sandbox, rel: str, content: str, *, tokens: int | None = None) -> ToolCall:
        return ToolCall("write_file", {"file_path": str(box.ws.path / rel), "content": content}, tokens=tokens)

    def shell(self, command: str) -> ToolCall:
        return ToolCall("run_shell_command", {"command": command, "description": "run a command"})
