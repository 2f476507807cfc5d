"""Drivers for the agents added in issue 20: Qwen Code, GitHub Copilot CLI, OpenCode and Aider.

Same contract as `_clis.Driver`: `prepare` writes the user-level config in the temporary HOME (capture
hooks, no telemetry or updates) and performs the trust steps a user performs; `argv`/`env` start one
headless session against the fake model.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._clis import Driver, capture_hooks
from ._fakemodel import AnthropicApi, Api, ToolCall
from ._harness import QWEN, Sandbox

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


def binary_path(root: Path) -> Path:
    return root
