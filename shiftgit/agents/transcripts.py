"""Agent transcripts -> one list of entries: Claude Code JSONL, Codex rollout JSONL, Gemini CLI chats.

Each agent writes its own format (checked against Claude Code 2.1, Codex 0.171 and Gemini CLI 0.61):
- Claude Code: one JSON object per line, `type` user / assistant / system / attachment ...; messages in
  `message.content` (text, tool_use, tool_result blocks); its system prompt in a `prompt_snapshot`
  attachment (or a `system` entry with plain `content`); `isMeta` user lines are hook texts, skipped.
- Codex: `{"type", "payload"}` lines: `session_meta` (the base instructions), `response_item`
  (message, function_call / custom_tool_call and their outputs), `compacted`.
- Gemini CLI: a header line (`sessionId`, `projectHash`), then message records (`type` user / gemini,
  `toolCalls` with their results) where a later record with the same id replaces the earlier one, and
  `{"$set": ...}` updates; older versions wrote one JSON document with `messages`.
Anything else is refused with one line (UsageError): nothing is guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from shiftgit import rawjson
from shiftgit.errors import UsageError

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from shiftgit.tuples import NamedTuple

DETECT_LINES = 50
EXIT_CODE = r"(?i)(?:exited with code|exit code:?|exit status:?)\s*(-?\d+)"
CODEX_CONTEXT = ("# AGENTS.md instructions", "<environment_context>", "<user_instructions>", "<hook_prompt",
                 "<permissions", "<skills_instructions>", "<user_shell_command>")
HOOK_CONTEXT = r"(?s)<hook_context>.*?</hook_context>\s*"  # patterns compile on first use (re's cache)


class Entry(NamedTuple):
    """One thing said or done: kind is system, user, summary, assistant, call (a tool call) or result."""

    kind: str
    text: str
    tool: str = ""
    call_id: str = ""
    args: str = ""  # a call's arguments, as compact JSON (or the tool's raw input)
    exit_code: int | None = None
    error: bool = False


class Transcript(NamedTuple):
    format: str  # claude, codex, gemini
    session: str | None
    entries: list[Entry]
    skipped: int  # lines that were not JSON (a line being written, say)


def read(path: Path, size: int | None = None) -> Transcript:
    """Parse a transcript file; UsageError (one line) when it cannot be read or is not a known format.

    `size`: only the first bytes, when they end a line (a JSONL transcript as it was then: agents append to
    those); else the whole file (a Gemini CLI chat is rewritten whole)."""
    return parse(raw(path, size).decode("utf-8", errors="replace"), str(path))


def raw(path: Path, size: int | None = None) -> bytes:
    """The bytes `read` parses."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read transcript {path}: {exc.strerror or exc}; pass an existing file "
                         "with --from") from None
    if size is not None and 0 < size < len(data) and data[size - 1:size] == b"\n":
        data = data[:size]
    return data


def parse(text: str, where: str = "transcript") -> Transcript:
    whole = _whole_document(text)
    if whole is not None:
        return _gemini(iter([whole]), 0)
    objects, skipped = _json_lines(text)
    kind = _detect(objects[:DETECT_LINES])
    if kind is None:
        raise UsageError(f"{where}: not a transcript shiftgit can read (Claude Code or Codex JSONL, or a "
                         "Gemini CLI chat); nothing was saved")
    return PARSERS[kind](iter(objects), skipped)


def _whole_document(text: str) -> dict[str, Any] | None:
    """An older Gemini CLI chat: one JSON document with `sessionId` and `messages`."""
    if not text.lstrip().startswith("{") or "\n{" in text.strip():
        return None
    try:
        document = rawjson.loads(text)
    except ValueError:
        return None
    ok = isinstance(document, dict) and isinstance(document.get("messages"), list) and "sessionId" in document
    return document if ok else None


def _json_lines(text: str) -> tuple[list[dict[str, Any]], int]:
    objects, skipped = [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            value = rawjson.loads(line)
        except ValueError:
            skipped += 1
            continue
        if isinstance(value, dict):
            objects.append(value)
    return objects, skipped


def _detect(head: list[dict[str, Any]]) -> str | None:
    if not head:
        return None
    if isinstance(head[0].get("sessionId"), str) and "projectHash" in head[0]:
        return "gemini"
    if all(isinstance(o.get("payload"), dict) and isinstance(o.get("type"), str) for o in head[:3]):
        return "codex"
    if any(o.get("type") in ("user", "assistant") and isinstance(o.get("message"), dict)
           and ("sessionId" in o or "uuid" in o) for o in head):
        return "claude"
    return None


# -- Claude Code -------------------------------------------------------------------------------------

def _claude(objects: Iterator[dict[str, Any]], skipped: int, state: dict[str, Any] | None = None) -> Transcript:
    """`state`: where an earlier part of the file left the parser (agents/transcache.py), updated in place."""
    state = {} if state is None else state
    entries: list[Entry] = []
    session = state.get("session")
    snapshot_seen = state.get("snapshot_seen") is True
    for obj in objects:
        session = session or _str(obj.get("sessionId"))
        kind = obj.get("type")
        if obj.get("isSidechain") is True:
            continue
        if kind == "attachment" and not snapshot_seen:
            prompt = _claude_snapshot(obj.get("attachment"))
            if prompt:
                entries.append(Entry("system", prompt))
                snapshot_seen = True
        elif kind == "system" and isinstance(obj.get("content"), str) and "subtype" not in obj:
            entries.append(Entry("system", obj["content"]))
        elif kind == "summary" and isinstance(obj.get("summary"), str):
            entries.append(Entry("summary", obj["summary"]))
        elif kind in ("user", "assistant") and isinstance(obj.get("message"), dict) and not obj.get("isMeta"):
            entries += _claude_message(kind, obj["message"], summary=obj.get("isCompactSummary") is True)
    state.update(session=session, snapshot_seen=snapshot_seen)
    return Transcript("claude", session, entries, skipped)


def _claude_snapshot(attachment: Any) -> str | None:
    if not isinstance(attachment, dict) or attachment.get("type") != "prompt_snapshot":
        return None
    prompt = attachment.get("systemPrompt")
    if isinstance(prompt, list):
        return "\n".join(p for p in prompt if isinstance(p, str)).strip() or None
    return prompt.strip() or None if isinstance(prompt, str) else None


def _claude_message(kind: str, message: Mapping[str, Any], *, summary: bool) -> list[Entry]:
    content = message.get("content")
    if isinstance(content, str):
        return [Entry("summary" if summary else kind, content)] if content.strip() else []
    entries = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            entries.append(Entry("summary" if summary else kind, block["text"]))
        elif block.get("type") == "tool_use":
            entries.append(Entry("call", "", tool=_str(block.get("name")) or "tool",
                                 call_id=_str(block.get("id")) or "", args=_compact(block.get("input"))))
        elif block.get("type") == "tool_result":
            output = _text_of(block.get("content"))
            entries.append(Entry("result", output, call_id=_str(block.get("tool_use_id")) or "",
                                 exit_code=_exit_code(output), error=block.get("is_error") is True))
    return entries


# -- Codex ---------------------------------------------------------------------------------------------

def _codex(objects: Iterator[dict[str, Any]], skipped: int, state: dict[str, Any] | None = None) -> Transcript:
    state = {} if state is None else state
    entries: list[Entry] = []
    session = state.get("session")
    for obj in objects:
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            continue
        kind = obj.get("type")
        if kind == "session_meta":
            session = session or _str(payload.get("id"))
            instructions = payload.get("base_instructions") or payload.get("instructions")
            text = instructions.get("text") if isinstance(instructions, dict) else instructions
            if isinstance(text, str) and text.strip():
                entries.append(Entry("system", text))
        elif kind == "compacted" and isinstance(payload.get("message"), str):
            entries.append(Entry("summary", payload["message"]))
        elif kind == "response_item":
            entries += _codex_item(payload)
    state.update(session=session)
    return Transcript("codex", session, entries, skipped)


def _codex_item(item: Mapping[str, Any]) -> list[Entry]:
    kind = item.get("type")
    if kind == "message":
        text = _text_of(item.get("content"))
        role = item.get("role")
        if not text.strip() or role not in ("user", "assistant") or text.lstrip().startswith(CODEX_CONTEXT):
            return []
        return [Entry(str(role), text)]
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        args = item.get("arguments") if kind == "function_call" else item.get("input", item.get("action"))
        return [Entry("call", "", tool=_str(item.get("name")) or "shell", call_id=_str(item.get("call_id")) or "",
                      args=args if isinstance(args, str) else _compact(args))]
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        text = _text_of(output.get("content", output.get("output")) if isinstance(output, dict) else output)
        return [Entry("result", _codex_output(text), call_id=_str(item.get("call_id")) or "",
                      exit_code=_exit_code(text))]
    return []


def _codex_output(text: str) -> str:
    """Codex puts `Chunk ID / Wall time / Process exited ... / Output:` lines before a command's output."""
    head, marker, rest = text.partition("Output:\n")
    return rest if marker and len(head) < 400 else text


# -- Gemini CLI ------------------------------------------------------------------------------------------

def _gemini(objects: Iterator[dict[str, Any]], skipped: int) -> Transcript:
    session = None
    messages: dict[str, dict[str, Any]] = {}
    for obj in objects:
        session = session or _str(obj.get("sessionId"))
        updates: dict[str, Any] = obj["$set"] if isinstance(obj.get("$set"), dict) else obj
        listed = updates.get("messages")
        if isinstance(listed, list):  # the whole list (re)set
            messages = {_str(m.get("id")) or str(i): m for i, m in enumerate(listed) if isinstance(m, dict)}
        elif isinstance(obj.get("id"), str) and isinstance(obj.get("type"), str):
            messages[obj["id"]] = obj  # a later record of one id replaces the earlier one
    entries: list[Entry] = []
    for message in messages.values():
        entries += _gemini_message(message, first=not entries)
    return Transcript("gemini", session, entries, skipped)


def _gemini_message(message: Mapping[str, Any], *, first: bool) -> list[Entry]:
    kind = message.get("type")
    text = _gemini_text(message.get("content"))
    if kind == "user":
        if first and text.lstrip().startswith("<session_context>"):
            return [Entry("system", text)]
        text = re.sub(HOOK_CONTEXT, "", text) if "<hook_context>" in text else text
        return [Entry("user", text)] if text.strip() else []
    if kind != "gemini":
        return []
    entries = [Entry("assistant", text)] if text.strip() else []
    for call in message.get("toolCalls") or ():
        if isinstance(call, dict):
            entries += _gemini_call(call)
    return entries


def _gemini_call(call: Mapping[str, Any]) -> list[Entry]:
    name, call_id = _str(call.get("name")) or "tool", _str(call.get("id")) or ""
    outputs = []
    for part in call.get("result") or ():
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            outputs.append(_text_of(response.get("output", response.get("error", ""))))
    output = "\n".join(outputs)
    failed = call.get("status") == "error"
    return [Entry("call", "", tool=name, call_id=call_id, args=_compact(call.get("args"))),
            Entry("result", output, tool=name, call_id=call_id, exit_code=_exit_code(output), error=failed)]


def _gemini_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content or () if isinstance(p, dict) and isinstance(p.get("text"), str))


# -- shared --------------------------------------------------------------------------------------------

PARSERS: dict[str, Callable[..., Transcript]] = {  # (objects, skipped[, state]) -> Transcript
    "claude": _claude, "codex": _codex, "gemini": _gemini,
}


def _text_of(content: Any) -> str:
    """Text from a string, or from a list of blocks ({"text"}, {"type": "input_text", "text"}, ...)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(block.get("text", block.get("content")) if isinstance(block, dict) else block)
                         for block in content).strip("\n")
    return "" if content is None else _compact(content)


def _compact(value: Any) -> str:
    return rawjson.compact_sorted(value) if value is not None else ""


def _exit_code(output: str) -> int | None:
    head = output[:400]
    if "ex" not in head.lower():  # every match holds "ex" (case-blind: no other character folds to e or x)
        return None
    found = re.search(EXIT_CODE, head)
    return int(found.group(1)) if found else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def tool_names(entries: Iterable[Entry]) -> dict[str, str]:
    """call id -> tool name, so a result can name the tool its call used."""
    return {e.call_id: e.tool for e in entries if e.kind == "call" and e.call_id}
