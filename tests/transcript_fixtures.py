"""Agent transcripts in the shapes the real CLIs write (Claude Code 2.1, Codex 0.171, Gemini CLI 0.61).

Each builder writes a conversation: a system prompt, the user's request, then `turns` rounds of a
tool call and its result, a user message stating a rule at `rule_at`, and a final answer. The
marker strings let a test find each part in the compacted text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SYSTEM = "You are a coding agent working in the calc repository (SYSTEM-MARK-51e0)."
REQUEST = "Fix sub() so that the tests pass (REQUEST-MARK-83c2)."
RULE = "do not touch the release branch (RULE-MARK-6a1f)"
FINAL = "Everything passes (FINAL-MARK-7d21)."


def said(i: int) -> str:
    return f"Turn {i}: running check {i} (TURN-MARK-{i:03d})."


def output(i: int, lines: int = 60, secret: str | None = None) -> str:
    body = "".join(f"tests/test_{i:03d}.py::test_case_{k:03d} PASSED [{k:3d}%]\n" for k in range(lines))
    leak = f"export GH_TOKEN={secret}\n" if secret else ""
    return leak + body + f"{lines} passed in 0.{i % 100:02d}s (RESULT-MARK-{i:03d})\n"


def command(i: int) -> str:
    return f"python -m pytest -q tests/test_{i:03d}.py"


def claude(path: Path, turns: int = 30, *, rule_at: int = 10, lines: int = 60, secret_at: int | None = None,
           secret: str | None = None) -> None:
    """Claude Code JSONL: attachment lines, user/assistant messages with content blocks, meta hook lines."""
    entries: list[dict[str, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        entries.append({"parentUuid": None, "isSidechain": False, "type": kind, "sessionId": "claude-session-1",
                        "uuid": f"u-{len(entries):05d}", "timestamp": "2026-03-02T10:00:00.000Z", **fields})

    add("queue-operation", operation="enqueue", content=REQUEST)
    add("attachment", attachment={"type": "prompt_snapshot", "systemPrompt": ["", SYSTEM]})
    add("user", message={"role": "user", "content": REQUEST})
    for i in range(1, turns + 1):
        call = f"toolu_{i:05d}"
        add("assistant", message={"role": "assistant", "content": [
            {"type": "text", "text": said(i)},
            {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command(i)}}]})
        add("user", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "is_error": False,
             "content": output(i, lines, secret if i == secret_at else None)}]})
        if i == rule_at:
            add("user", message={"role": "user", "content": f"Please {RULE}."})
            add("user", isMeta=True, message={"role": "user", "content": "Stop hook feedback: (not a user message)"})
    add("assistant", message={"role": "assistant", "content": [{"type": "text", "text": FINAL}]})
    add("system", subtype="stop_hook_summary", content="hook summary, not a system prompt")
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))


def codex(path: Path, turns: int = 30, *, rule_at: int = 10, lines: int = 60) -> None:
    """A Codex rollout: session_meta (base instructions), response_item messages, calls and outputs."""
    items: list[dict[str, Any]] = [{"type": "session_meta", "payload": {
        "id": "codex-session-1", "cwd": "/work", "base_instructions": {"text": SYSTEM}}}]

    def item(payload: dict[str, Any]) -> None:
        items.append({"timestamp": "2026-03-02T10:00:00.000Z", "type": "response_item", "payload": payload})

    def text(role: str, value: str) -> None:
        kind = "output_text" if role == "assistant" else "input_text"
        item({"type": "message", "role": role, "content": [{"type": kind, "text": value}]})

    text("developer", "<skills_instructions>skills</skills_instructions>")
    text("user", "# AGENTS.md instructions for /work\n\n<INSTRUCTIONS>...</INSTRUCTIONS>")
    text("user", REQUEST)
    items.append({"type": "event_msg", "payload": {"type": "task_started"}})
    for i in range(1, turns + 1):
        text("assistant", said(i))
        item({"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": command(i)}),
              "call_id": f"call_{i}"})
        header = "Chunk ID: a1\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\n"
        item({"type": "function_call_output", "call_id": f"call_{i}", "output": header + output(i, lines)})
        if i == rule_at:
            text("user", f"Please {RULE}.")
    item({"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_patch",
          "input": "*** Begin Patch\n*** Add File: notes.txt\n+note\n*** End Patch\n"})
    item({"type": "custom_tool_call_output", "call_id": "call_patch", "output": "Exit code: 0\nOutput:\nA notes.txt\n"})
    text("assistant", FINAL)
    path.write_text("".join(json.dumps(i) + "\n" for i in items))


def gemini(path: Path, turns: int = 30, *, rule_at: int = 10, lines: int = 60) -> None:
    """Gemini CLI JSONL: a header, message records (a later record of an id replaces it), `$set` lines."""
    records: list[dict[str, Any]] = [{"sessionId": "gemini-session-1", "projectHash": "f00d", "kind": "main"}]
    records.append({"$set": {"messages": [{"id": "m0", "type": "user", "content": [
        {"text": f"<session_context>\n{SYSTEM}\n</session_context>"}]}]}})
    records.append({"id": "m1", "type": "user", "content": [
        {"text": f"<hook_context>shiftgit ledger ... briefing</hook_context>\n\n{REQUEST}"}]})
    for i in range(1, turns + 1):
        reply = {"id": f"g{i}", "type": "gemini", "content": said(i), "model": "gemini"}
        records.append(reply)  # first without its tool call, then the same id again with it
        records.append({**reply, "toolCalls": [{"id": f"run_{i}", "name": "run_shell_command",
                                                "args": {"command": command(i)}, "status": "success",
                                                "result": [{"functionResponse": {"id": f"run_{i}", "response": {
                                                    "output": f"Output: {output(i, lines)}"}}}]}]})
        records.append({"$set": {"lastUpdated": "2026-03-02T10:00:00.000Z"}})
        if i == rule_at:
            records.append({"id": f"u{i}", "type": "user", "content": [{"text": f"Please {RULE}."}]})
    records.append({"id": "final", "type": "gemini", "content": FINAL})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def big_claude(path: Path, megabytes: float) -> int:
    """A Claude Code transcript of at least `megabytes`, the user's rule half way; returns its turns."""
    turns = 100
    while True:
        claude(path, turns, rule_at=turns // 2)
        size = path.stat().st_size
        if size >= megabytes * 1024 * 1024:
            return turns
        turns = int(turns * megabytes * 1024 * 1024 / size) + 1
