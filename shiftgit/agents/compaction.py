"""A conversation compacted for a fresh session: bounded, every rule kept, old tool output as stubs.

The compacted context (seed 002), in this order:
1. the system prompt and the first user request, verbatim (each capped at a share of the bound, head
   and tail kept, when an agent's own system prompt is larger than that);
2. the run's running summary from its ledger: goal, stop condition, every active constraint, every
   decision with its rationale, the checkpoint steps, the next action and open items;
3. every later user message that falls outside the last turns (users state rules in passing);
4. a stub per superseded tool result: the tool, a digest of its arguments (and their start), its
   exit code and one line of its result;
5. the last N turns (config `context.turns`, default 6) in full, tool output cut head and tail only
   when the whole would not fit.
Each piece is secret-redacted before it is measured, and the whole is at most `limit` characters
(config `context.max_chars`, default 24,000): stubs and earlier messages give way first, then
the size of the recent tool outputs, never a constraint or a decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shiftgit.agents.transcripts import Entry, Transcript, tool_names
from shiftgit.digests import hasher

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from shiftgit.tuples import NamedTuple

SYSTEM_SHARE = 6  # the system prompt gets at most limit // SYSTEM_SHARE characters
REQUEST_SHARE = 8
MESSAGE_CAP = 600  # an earlier user message
STUB_ARGS = 90
STUB_BATCH = 64  # stub lines made (and scanned for secrets) at a time, newest first, until the bound is passed
CUT = "\n[... {n} characters cut ...]\n"
RESULT_CAPS = (None, 4000, 2000, 1000, 500, 250, 120)  # tool output per result, tried in turn
TEXT_CAPS = (None, 2000, 800, 300)

MESSAGES = "Earlier messages from the user"
STUBS = "Earlier tool results (superseded; a digest of the arguments, exit code, one line)"

Redactor = Callable[[str], str]


class Settings(NamedTuple):
    turns: int = 6
    limit: int = 24_000


def compact(transcript: Transcript, summary: str, header: str, settings: Settings, redact: Redactor) -> str:
    """The compacted context text (at most settings.limit characters)."""
    system, request, rest = opening(transcript.entries)
    turns = split_turns(rest)
    cut = max(len(turns) - settings.turns, 0)
    earlier, recent = turns[:cut], turns[cut:]
    names = tool_names(transcript.entries)
    fixed = [redact(header), _section("System prompt", _cap(redact(system), settings.limit // SYSTEM_SHARE)),
             _section("First request", _cap(redact(request), settings.limit // REQUEST_SHARE)),
             _section("Run summary (from the shiftgit ledger)", summary)]
    titles = (MESSAGES, STUBS, f"Last {len(recent)} turn(s), in full")
    room = settings.limit - _size(fixed) - sum(len(t) + 60 for t in titles)
    said = _redact_lines(redact, [f"- {_one_line(e.text, MESSAGE_CAP)}" for t in earlier for e in t
                                  if e.kind in ("user", "summary")])
    share = room * 2 // 5  # what the stubs and earlier messages may take from the recent turns
    stubs = _Stubs(earlier, names, redact)
    stubs_size = stubs.make(max(share - _size(said), 0))  # enough to tell whether they reach their share
    last = _fit_recent(recent, names, redact, room - min(_size(said) + stubs_size, share))
    room -= len(last)
    messages = _fit_lines(said, room, "earlier message(s)")
    room -= len(messages)
    stubs.make(max(room, 0))  # the newest that can be shown in what is left, and one more
    parts = [*fixed, _section(MESSAGES, messages),
             _section(STUBS, _fit_lines(stubs.made, room, "earlier tool result(s)", len(stubs.results))),
             _section(titles[2], last)]
    text = "\n".join(p for p in parts if p)
    return text if len(text) <= settings.limit else text[: settings.limit - 40] + "\n[... cut to the bound ...]"


def opening(entries: Sequence[Entry]) -> tuple[str, str, list[Entry]]:
    """The first system text, the first user request, and every other entry in order."""
    system = next((e.text for e in entries if e.kind == "system"), "")
    first = next((i for i, e in enumerate(entries) if e.kind == "user"), None)
    request = entries[first].text if first is not None else ""
    rest = [e for i, e in enumerate(entries) if e.kind != "system" and i != first]
    return system, request, rest


def split_turns(entries: Sequence[Entry]) -> list[list[Entry]]:
    """A turn: a user message, or what the model said and called and the results of those calls."""
    turns: list[list[Entry]] = []
    previous = None
    for entry in entries:
        starts = (entry.kind in ("user", "summary") or previous is None
                  or (entry.kind in ("assistant", "call") and previous in ("result", "user", "summary")))
        if starts:
            turns.append([])
        turns[-1].append(entry)
        previous = entry.kind
    return turns


def _fit_recent(turns: list[list[Entry]], names: dict[str, str], redact: Redactor, room: int) -> str:
    """The recent turns in full, or with tool output (then long texts) cut down until they fit."""
    done = iter(_redact_texts(redact, [text for turn in turns for e in turn
                                       for text in (_precut(e.text, room), _precut(e.args, room))]))
    redacted = [[e._replace(text=next(done), args=next(done)) for e in turn] for turn in turns]
    text = ""
    for text_cap in TEXT_CAPS:
        for result_cap in RESULT_CAPS:
            text = "\n".join(_render_turn(n, t, names, result_cap, text_cap) for n, t in _numbered(redacted))
            if len(text) <= room:
                return text
    while redacted and len(text) > room:  # still too big: the oldest of them go
        redacted = redacted[1:]
        text = "\n".join(_render_turn(n, t, names, RESULT_CAPS[-1], TEXT_CAPS[-1]) for n, t in _numbered(redacted))
    return text


def _numbered(turns: list[list[Entry]]) -> list[tuple[int, list[Entry]]]:
    return list(enumerate(turns, start=1))


def _render_turn(number: int, turn: list[Entry], names: dict[str, str], result_cap: int | None,
                 text_cap: int | None) -> str:
    lines = [f"--- turn {number} ---"]
    for entry in turn:
        if entry.kind == "call":
            lines.append(f"[tool call] {entry.tool} {_cap(entry.args, text_cap)}")
        elif entry.kind == "result":
            status = _status(entry)
            lines.append(f"[tool result: {names.get(entry.call_id) or entry.tool or 'tool'}{status}]\n"
                         f"{_cap(entry.text, result_cap)}")
        else:
            lines.append(f"[{entry.kind}] {_cap(entry.text, text_cap)}")
    return "\n".join(lines)


class _Stubs:
    """The redacted stub lines of the newest results, oldest first (`made`), made in batches as they are needed: a
    long session has thousands of results and shows a few hundred, and the recent turns often leave room for fewer
    than their share (a pre-compact hook digests, renders and scans only what it may show)."""

    def __init__(self, turns: list[list[Entry]], names: dict[str, str], redact: Redactor) -> None:
        self.calls = {e.call_id: e for t in turns for e in t if e.kind == "call" and e.call_id}
        self.results = [e for t in turns for e in t if e.kind == "result"]
        self.names, self.redact = names, redact
        self.made: list[str] = []
        self.size, self.end = 0, len(self.results)

    def make(self, need: int) -> int:
        """Lines made until they are more than `need` characters (no more can be shown) or all are; returns the size
        of all of them, or `need` + 1 when not all were made (it is larger)."""
        while self.end > 0 and self.size <= need:
            start = max(0, self.end - STUB_BATCH)
            batch = _redact_lines(self.redact, [_stub(e, self.calls, self.names)
                                                for e in self.results[start:self.end]])
            self.made[:0] = batch
            self.size += _size(batch)
            self.end = start
        return self.size if self.end == 0 else need + 1


def _stub(entry: Entry, calls: dict[str, Entry], names: dict[str, str]) -> str:
    call = calls.get(entry.call_id)
    args = call.args if call else ""
    # CPython's sha1 (no OpenSSL load), which git's object ids load: sha256 would be one more extension module
    digest = hasher(40)(args.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    tool = names.get(entry.call_id) or entry.tool or "tool"
    return (f"- {tool} args#{digest} {_one_line(args, STUB_ARGS)} ->{_status(entry)}: "
            f"{_one_line(last_line(entry.text), STUB_ARGS)}")


def _redact_lines(redact: Redactor, lines: list[str]) -> list[str]:
    """One-line texts redacted in one scan (no secret rule spans a line end)."""
    if not lines:
        return []
    redacted = redact("\n".join(lines)).split("\n")
    return redacted if len(redacted) == len(lines) else [redact(line) for line in lines]


def _redact_texts(redact: Redactor, texts: list[str]) -> list[str]:
    """Texts redacted in one scan, joined by the separator no secret rule crosses (as `redact_obj` scans a ledger's
    strings: a recent turn's dozens of texts were as many scans); one by one when the split does not give them back
    (a text that holds the separator)."""
    from shiftgit.ledger.secrets import SEPARATOR_TEXT

    if not texts:
        return []
    parts = redact(SEPARATOR_TEXT.join(texts)).split(SEPARATOR_TEXT)
    return parts if len(parts) == len(texts) else [redact(text) for text in texts]


def _status(entry: Entry) -> str:
    """The exit code when the agent recorded one, else what it said: ok or error."""
    if entry.exit_code is not None:
        return f" exit {entry.exit_code}"
    return " error" if entry.error else " ok"


def _fit_lines(lines: list[str], room: int, what: str, count: int | None = None) -> str:
    """As many of the newest lines as fit, with a count of the older ones left out (`count`: how many lines there
    are, when `lines` holds only the newest of them)."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        if used + len(line) + 1 > room - 60:
            break
        kept.append(line)
        used += len(line) + 1
    dropped = (len(lines) if count is None else count) - len(kept)
    head = [f"({dropped} {what} left out to stay within the bound)"] if dropped else []
    return "\n".join(head + kept[::-1])


def _section(title: str, body: str) -> str:
    return f"## {title}\n{body.strip()}\n" if body.strip() else ""


def _cap(text: str, cap: int | None) -> str:
    """Head and tail of `text`, at most about `cap` characters."""
    if cap is None or len(text) <= cap:
        return text
    keep = max(cap - 40, 20)
    head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3:]
    return head + CUT.format(n=len(text) - len(head) - len(tail)) + tail


def _precut(text: str, cap: int) -> str:
    """Before redaction: keep at most about `cap` characters, cut at line ends (a secret stays whole)."""
    if len(text) <= cap:
        return text
    head = text[: cap // 2].rpartition("\n")[0]
    tail = text[len(text) - cap // 2:].partition("\n")[2]
    return head + CUT.format(n=len(text) - len(head) - len(tail)) + tail


def _one_line(text: str, cap: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= cap else flat[: cap - 3] + "..."


def last_line(text: str) -> str:
    """The last line that says something (a closing tag such as `</untrusted_context>` does not)."""
    end = len(text)
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end].strip()
        if line and not line.startswith("</"):
            return line
        end = start - 1
    return ""


def _size(parts: Sequence[str]) -> int:
    return sum(len(p) + 1 for p in parts)
