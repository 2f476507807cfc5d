"""A fake model server for the real-CLI tests: stdlib only, 127.0.0.1, a hard lifetime.

It records every request and answers the conversation's requests with a scripted sequence of turns
(text, or a call of one of the CLI's own tools), in the streaming format of the API the CLI speaks:

- `AnthropicApi`: the Messages API (`POST /v1/messages`, SSE), for Claude Code;
- `ResponsesApi`: the OpenAI Responses API (`POST /v1/responses`, SSE), for Codex;
- `GeminiApi`: `:streamGenerateContent?alt=sse` / `:generateContent`, for Gemini CLI.

Three kinds of request:
- "main": a request of the conversation (it offers tools); it takes the next scripted turn;
- "compaction": the CLI asks for a summary of the conversation; answered with `SUMMARY`;
- "side": anything else (routing classifiers, token counts, model lists); a short fixed answer.

When the script is exhausted, every further main request gets `EXHAUSTED` as plain text, which
ends the agent's turn: a stop hook that keeps blocking shows up as more main requests than turns.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import urlsplit

EXHAUSTED = "The fake model's script is exhausted; ending the turn."
SUMMARY = "<analysis>scripted</analysis>\n<summary>The user asked for a notes file; it was written.</summary>"
MODEL = "fake-model"
DEFAULT_TOKENS = 100

SseEvent = tuple[str | None, Any]


# -- the script --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Text:
    """The model answers with text and ends its turn. `tokens`: the prompt size the answer reports
    (a large value makes the CLI believe its context is full, so it compacts)."""

    text: str
    tokens: int | None = None


@dataclass(frozen=True)
class ToolCall:
    """The model calls one of the CLI's own tools, by the name and arguments that CLI declares.
    `raw_input` is for Responses API "custom" (freeform) tools such as Codex's `apply_patch`."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_input: str | None = None
    say: str = ""
    tokens: int | None = None


Turn = Text | ToolCall


@dataclass
class Request:
    """One recorded request and how it was answered."""

    method: str
    path: str
    body: Any
    kind: str  # main, compaction, side
    turn: int | None = None  # index of the scripted turn that answered a main request
    at: float = field(default_factory=time.monotonic)

    @property
    def main(self) -> bool:
        return self.kind == "main"

    def strings(self) -> list[str]:
        """Every string in the body (decoded, so quotes and newlines are themselves)."""
        return list(_strings(self.body))

    def count(self, text: str) -> int:
        """How many strings of the body contain `text`: one per message that carries it."""
        return sum(1 for s in self.strings() if text in s)

    def contains(self, text: str) -> bool:
        return self.count(text) > 0


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


# -- APIs --------------------------------------------------------------------------------------

class Api:
    """One model API: how to tell the kinds of request apart, and how to write a turn back."""

    name: ClassVar[str] = "api"
    compaction_marks: ClassVar[tuple[str, ...]] = ()

    def is_main(self, path: str, body: Any) -> bool:
        raise NotImplementedError

    def is_compaction(self, path: str, body: Any) -> bool:
        """The CLI asks for a summary of the conversation: its last user message holds the CLI's prompt
        (context a hook added may follow it: Claude Code appends a changed SessionStart context last)."""
        last = _last_message(body, role="user")
        return any(mark in s for s in _strings(last) for mark in self.compaction_marks)

    def answer(self, handler: BaseHTTPRequestHandler, path: str, body: Any, turn: Turn, seq: int) -> None:
        raise NotImplementedError

    def side_answer(self, handler: BaseHTTPRequestHandler, path: str, body: Any, seq: int) -> None:
        self.answer(handler, path, body, Text("ok"), seq)

    @staticmethod
    def tokens(turn: Turn) -> int:
        return turn.tokens if turn.tokens is not None else DEFAULT_TOKENS


def _last_message(body: Any, role: str | None = None) -> Any:
    """The request's last message (of `role`, when given: Gemini's contents say "user" too)."""
    if not isinstance(body, dict):
        return None
    for key in ("messages", "input", "contents"):
        items = body.get(key)
        if isinstance(items, list) and items:
            mine = [m for m in items if role is None or not isinstance(m, dict) or m.get("role") in (role, None)]
            return mine[-1] if mine else None
    return None


class AnthropicApi(Api):
    """Claude Code: `POST /v1/messages` with `stream: true`."""

    name = "anthropic"
    compaction_marks = ("create a detailed summary of the conversation",)

    def is_main(self, path: str, body: Any) -> bool:
        return path.endswith("/v1/messages") and isinstance(body, dict) and bool(body.get("tools"))

    def side_answer(self, handler: BaseHTTPRequestHandler, path: str, body: Any, seq: int) -> None:
        if path.endswith("/count_tokens"):
            send_json(handler, {"input_tokens": DEFAULT_TOKENS})
        else:
            self.answer(handler, path, body, Text("ok"), seq)

    def answer(self, handler: BaseHTTPRequestHandler, path: str, body: Any, turn: Turn, seq: int) -> None:
        blocks = self._blocks(turn, seq)
        stop = "tool_use" if isinstance(turn, ToolCall) else "end_turn"
        message = self._message(blocks, stop, seq, self.tokens(turn))
        if isinstance(body, dict) and body.get("stream"):
            send_sse(handler, self._events(message))
        else:
            send_json(handler, message)

    @staticmethod
    def _blocks(turn: Turn, seq: int) -> list[dict[str, Any]]:
        if isinstance(turn, Text):
            return [{"type": "text", "text": turn.text}]
        blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.say}] if turn.say else []
        blocks.append({"type": "tool_use", "id": f"toolu_fake{seq:04d}", "name": turn.name, "input": turn.arguments})
        return blocks

    @staticmethod
    def _message(blocks: list[dict[str, Any]], stop: str, seq: int, tokens: int) -> dict[str, Any]:
        return {"id": f"msg_fake{seq:04d}", "type": "message", "role": "assistant", "model": MODEL,
                "content": blocks, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": tokens, "output_tokens": 10}}

    @staticmethod
    def _events(message: dict[str, Any]) -> Iterator[SseEvent]:
        start = message | {"content": [], "stop_reason": None}
        yield "message_start", {"type": "message_start", "message": start}
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                opening: dict[str, Any] = {"type": "text", "text": ""}
                delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
            else:
                opening = block | {"input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
        yield "message_delta", {"type": "message_delta", "usage": {"output_tokens": 10},
                                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None}}
        yield "message_stop", {"type": "message_stop"}


class ResponsesApi(Api):
    """Codex: `POST /v1/responses` (a custom model provider with `wire_api = "responses"`)."""

    name = "responses"

    def is_main(self, path: str, body: Any) -> bool:
        return path.endswith("/responses") and isinstance(body, dict) and bool(body.get("tools"))

    def is_compaction(self, path: str, body: Any) -> bool:
        """Codex compacts with a request that offers no tools (a main request always offers some)."""
        return path.endswith("/responses") and isinstance(body, dict) and not body.get("tools")

    def answer(self, handler: BaseHTTPRequestHandler, path: str, body: Any, turn: Turn, seq: int) -> None:
        response = self._response(self._items(turn, seq), seq, self.tokens(turn))
        if isinstance(body, dict) and body.get("stream") is False:
            send_json(handler, response)
        else:
            send_sse(handler, self._events(response))

    def _items(self, turn: Turn, seq: int) -> list[dict[str, Any]]:
        if isinstance(turn, Text):
            return [self._message(turn.text, seq)]
        items = [self._message(turn.say, seq)] if turn.say else []
        call_id = f"call_fake{seq:04d}"
        if turn.raw_input is not None:
            items.append({"type": "custom_tool_call", "id": f"ctc_fake{seq:04d}", "call_id": call_id,
                          "name": turn.name, "input": turn.raw_input, "status": "completed"})
        else:
            items.append({"type": "function_call", "id": f"fc_fake{seq:04d}", "call_id": call_id,
                          "name": turn.name, "arguments": json.dumps(turn.arguments), "status": "completed"})
        return items

    @staticmethod
    def _message(text: str, seq: int) -> dict[str, Any]:
        return {"type": "message", "id": f"msg_fake{seq:04d}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}

    @staticmethod
    def _response(items: list[dict[str, Any]], seq: int, tokens: int) -> dict[str, Any]:
        return {"id": f"resp_fake{seq:04d}", "object": "response", "created_at": int(time.time()),
                "status": "completed", "model": MODEL, "output": items,
                "usage": {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": tokens + 10}}

    @staticmethod
    def _events(response: dict[str, Any]) -> Iterator[SseEvent]:
        created = response | {"status": "in_progress", "output": []}
        yield "response.created", {"type": "response.created", "response": created}
        for index, item in enumerate(response["output"]):
            yield "response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                                 "item": item}
            if item["type"] == "message":
                yield "response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                                     "output_index": index, "content_index": 0,
                                                     "delta": item["content"][0]["text"]}
            yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                                "item": item}
        yield "response.completed", {"type": "response.completed", "response": response}


class GeminiApi(Api):
    """Gemini CLI: `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` for the conversation;
    `:generateContent` (often asking for JSON) for its routing and checking side requests."""

    name = "gemini"
    compaction_marks = ("<state_snapshot>",)

    def is_main(self, path: str, body: Any) -> bool:
        tools = body.get("tools") if isinstance(body, dict) else None
        return ":streamGenerateContent" in path and any(
            isinstance(t, dict) and t.get("functionDeclarations") for t in tools or [])

    def side_answer(self, handler: BaseHTTPRequestHandler, path: str, body: Any, seq: int) -> None:
        if path.endswith(":countTokens"):
            send_json(handler, {"totalTokens": DEFAULT_TOKENS})
            return
        schema = _response_schema(body)
        self.answer(handler, path, body, Text(json.dumps(_sample(schema)) if schema is not None else "ok"), seq)

    def answer(self, handler: BaseHTTPRequestHandler, path: str, body: Any, turn: Turn, seq: int) -> None:
        chunk = self._chunk(turn)
        if ":streamGenerateContent" in path:
            send_sse(handler, iter([(None, chunk)]))
        else:
            send_json(handler, chunk)

    def _chunk(self, turn: Turn) -> dict[str, Any]:
        if isinstance(turn, Text):
            parts: list[dict[str, Any]] = [{"text": turn.text}]
        else:
            parts = [{"text": turn.say}] if turn.say else []
            parts.append({"functionCall": {"name": turn.name, "args": turn.arguments}})
        tokens = self.tokens(turn)
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": tokens, "candidatesTokenCount": 10,
                                  "totalTokenCount": tokens + 10},
                "modelVersion": MODEL}


def _response_schema(body: Any) -> Any:
    config = body.get("generationConfig") if isinstance(body, dict) else None
    if not isinstance(config, dict):
        return None
    return config.get("responseJsonSchema") or config.get("responseSchema")


def _sample(schema: Any) -> Any:
    """A small value that fits a JSON schema (Gemini's side requests ask for JSON). A choice of who
    speaks next picks "user", so the CLI never continues on its own; numbers take their minimum."""
    if not isinstance(schema, dict):
        return "ok"
    kind = str(schema.get("type", "object")).lower()
    options = schema.get("enum")
    if isinstance(options, list) and options:
        return "user" if "user" in options else options[0]
    if kind == "object":
        return {name: _sample(sub) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "ok"


# -- the wire ------------------------------------------------------------------------------------

def send_json(handler: BaseHTTPRequestHandler, data: Any, status: int = 200) -> None:
    raw = json.dumps(data).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


def send_sse(handler: BaseHTTPRequestHandler, events: Iterator[SseEvent]) -> None:
    """Server-sent events, one `event:` line (when named) and one `data:` line each; then close."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Connection", "close")
    handler.end_headers()
    for name, data in events:
        chunk = (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
        handler.wfile.write(chunk.encode())
        handler.wfile.flush()
    handler.close_connection = True


def read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body, plain or chunked."""
    if "chunked" not in (handler.headers.get("Transfer-Encoding") or "").lower():
        length = int(handler.headers.get("Content-Length") or 0)
        return handler.rfile.read(length) if length else b""
    parts: list[bytes] = []
    while True:
        size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            handler.rfile.readline()
            return b"".join(parts)
        parts.append(handler.rfile.read(size))
        handler.rfile.readline()


def parse_body(raw: bytes, encoding: str | None) -> Any:
    """JSON when it is JSON (gzip/deflate undone); else the raw text under `_raw`."""
    if encoding in ("gzip", "deflate"):
        raw = zlib.decompress(raw, zlib.MAX_WBITS | 32)
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return {"_raw": raw.decode("utf-8", "replace"), "_encoding": encoding}


# -- the server ----------------------------------------------------------------------------------

class FakeModel:
    """`with FakeModel(api, script, lifetime=...) as model:` serves on `model.url` until the block
    ends or the lifetime runs out, whichever comes first."""

    def __init__(self, api: Api, script: Sequence[Turn], *, lifetime: float) -> None:
        self.api = api
        self.script = list(script)
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._next = 0
        self._seq = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-model", daemon=True)
        self._timer = threading.Timer(lifetime, self._server.shutdown)
        self._timer.daemon = True

    @property
    def url(self) -> str:
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def __enter__(self) -> FakeModel:
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def main_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.main]

    def of_kind(self, kind: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.kind == kind]

    def _classify(self, method: str, path: str, body: Any) -> str:
        if method != "POST":
            return "side"
        if self.api.is_compaction(path, body):
            return "compaction"
        return "main" if self.api.is_main(path, body) else "side"

    def _take(self, method: str, path: str, body: Any) -> tuple[Request, Turn | None, int]:
        """Record the request; the turn that answers it (None: a side request)."""
        request = Request(method, path, body, self._classify(method, path, body))
        with self._lock:
            self.requests.append(request)
            seq = next(self._seq)
            if request.kind == "compaction":
                return request, Text(SUMMARY), seq
            if request.kind != "main":
                return request, None, seq
            if self._next >= len(self.script):
                return request, Text(EXHAUSTED), seq
            request.turn = self._next
            self._next += 1
            return request, self.script[request.turn], seq

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
                pass

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                model._take("GET", urlsplit(self.path).path, None)
                send_json(self, {"object": "list", "data": [], "models": []})

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = parse_body(read_body(self), self.headers.get("Content-Encoding"))
                path = urlsplit(self.path).path
                request, turn, seq = model._take("POST", path, body)
                if turn is None:
                    model.api.side_answer(self, path, body, seq)
                else:
                    model.api.answer(self, path, body, turn, seq)

        return Handler
