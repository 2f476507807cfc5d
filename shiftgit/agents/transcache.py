"""A transcript parsed once: what a save read of a JSONL transcript is kept, parsed, for the next save.

Agents only append to their JSONL transcripts (Claude Code, Codex), and a pre-compact hook saves the conversation
of a transcript that grew by a few turns since the last save: parsing all of it again costs about half a Python
start-up at a few hundred turns, several at 5 MB. So the entries parsed from its complete lines are kept in
`<git-dir>/shift/agents/transcripts/<key>.bin` (marshal, behind a checksum), with the parser's state and a CRC-32
of the bytes they came from; the next read of the same file parses only what follows them when those bytes are
unchanged, else all of it again. The result is the whole parse's, entry for entry. A Gemini CLI chat (records
replaced by id, or rewritten whole) and a transcript of fewer than DETECT_LINES lines are parsed whole, uncached.
The cache is memory, not record: a file that cannot be read or does not check out is ignored.
"""

from __future__ import annotations

import marshal
import os
import zlib
from pathlib import Path
from typing import Any, NamedTuple

from shiftgit import __version__
from shiftgit.agents.transcripts import DETECT_LINES, PARSERS, Entry, Transcript, _detect, _json_lines, parse, raw

MAGIC = b"shiftgit transcript cache 1\n"
RESUMABLE = ("claude", "codex")
KEPT = 8  # transcripts remembered per worktree


class Parsed(NamedTuple):
    """The parse of a transcript's first `offset` bytes (complete lines), whose CRC-32 is `crc`."""

    path: str
    offset: int
    crc: int
    format: str
    state: dict[str, Any]
    skipped: int
    entries: list[Entry]


def read(path: Path, size: int | None, folder: Path) -> Transcript:
    """transcripts.read(path, size), from what `folder` keeps of an earlier read of this file when it still holds."""
    data = raw(path, size)
    cut = data.rfind(b"\n") + 1  # what follows the last line end may still be being written: never kept
    where = str(path.resolve())
    file = folder / f"{zlib.crc32(where.encode('utf-8', 'surrogateescape')):08x}.bin"
    known = _load(file, where, data, cut)
    tail, tail_skipped = _json_lines(_text(data[cut:]))
    if known is None:
        objects, skipped = _json_lines(_text(data[:cut]))
        kind = _detect((objects + tail)[:DETECT_LINES]) if len(objects) >= DETECT_LINES else None
        if kind not in RESUMABLE:  # short, Gemini, a whole document or unknown: transcripts.parse says
            return parse(_text(data), str(path))
        state: dict[str, Any] = {}
        head = PARSERS[str(kind)](iter(objects), skipped, state)
        known = Parsed(where, cut, zlib.crc32(data[:cut]), str(kind), state, head.skipped, head.entries)
        _store(file, known)
    elif known.offset < cut:
        state = dict(known.state)
        objects, skipped = _json_lines(_text(data[known.offset:cut]))
        more = PARSERS[known.format](iter(objects), skipped, state)
        known = known._replace(offset=cut, crc=zlib.crc32(data[known.offset:cut], known.crc), state=state,
                               skipped=known.skipped + more.skipped, entries=known.entries + more.entries)
        _store(file, known)
    rest = PARSERS[known.format](iter(tail), tail_skipped, dict(known.state))
    return Transcript(known.format, rest.session, known.entries + rest.entries, known.skipped + rest.skipped)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _load(file: Path, where: str, data: bytes, cut: int) -> Parsed | None:
    """The kept parse of this file, when its bytes are still the start of `data`'s complete lines."""
    try:
        blob = file.read_bytes()
    except OSError:
        return None
    body = blob[len(MAGIC) + 4:]
    if not blob.startswith(MAGIC) or blob[len(MAGIC):len(MAGIC) + 4] != zlib.crc32(body).to_bytes(4, "big"):
        return None
    try:
        version, path, offset, crc, kind, state, skipped, entries = marshal.loads(body)
        known = Parsed(path, offset, crc, kind, state, skipped, [Entry(*e) for e in entries])
    except (EOFError, ValueError, TypeError):
        return None
    if (version != __version__ or path != where or kind not in RESUMABLE or not isinstance(state, dict)
            or not 0 < offset <= cut or zlib.crc32(data[:offset]) != crc):
        return None
    return known


def _store(file: Path, parsed: Parsed) -> None:
    """Write the parse whole (temp file, rename); keep the KEPT most recent transcripts' files."""
    body = marshal.dumps((__version__, parsed.path, parsed.offset, parsed.crc, parsed.format, parsed.state,
                          parsed.skipped, [tuple(e) for e in parsed.entries]))
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
        tmp.write_bytes(MAGIC + zlib.crc32(body).to_bytes(4, "big") + body)
        os.replace(tmp, file)
        kept = sorted(file.parent.glob("*.bin"), key=lambda f: f.stat().st_mtime_ns)
        for old in kept[:-KEPT]:
            old.unlink(missing_ok=True)
    except (OSError, ValueError):  # memory only: the next read parses the whole file again
        return
