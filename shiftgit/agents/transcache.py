"""A transcript parsed once: what a save read of a JSONL transcript is kept, parsed, for the next save.

Agents only append to their JSONL transcripts (Claude Code, Codex), and a pre-compact hook saves the conversation
of a transcript that grew by a few turns since the last save: parsing all of it again costs about half a Python
start-up at a few hundred turns, several at 5 MB. So the entries parsed from its complete lines are kept in
`<git-dir>/shift/agents/transcripts/<key>.bin`, with the parser's state and a CRC-32 of the bytes they came from;
the next read of the same file parses only what follows them when those bytes are unchanged, else all of it again.
The file is appended to, one record per read that parsed new lines (rewriting it whole would cost more than the
parse it saves): a record is its length, a CRC-32 of its body and the body (marshal); the first names the
transcript, each later one the byte range it parsed. A record that does not check out ends the file's valid part.
The result is the whole parse's, entry for entry; with `keep_turns` (the conversation's `context.turns`), but for
the text of a tool result older than the last `keep_turns` turns, which the file keeps as its last line only: all a
compacted conversation shows of it (agents/compaction.py). Such a file is rewritten whole, one record, every REWRITE
records: a save no longer reads megabytes of old tool output it shows one line of. A Gemini CLI chat (records
replaced by id, or rewritten whole) and a transcript of fewer than DETECT_LINES lines are parsed whole, uncached.
The cache is memory, not record.
"""

from __future__ import annotations

import marshal
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

from shiftgit import __version__
from shiftgit.agents.transcripts import DETECT_LINES, PARSERS, Entry, Transcript, _detect, _json_lines, parse, raw

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from shiftgit.tuples import NamedTuple

MAGIC = b"shiftgit transcript cache 2\n"
RESUMABLE = ("claude", "codex")
KEPT = 8  # transcripts remembered per worktree
REWRITE = 8  # records after which a file kept with `keep_turns` is rewritten whole, its old results cut to a line


class Parsed(NamedTuple):
    """The parse of a transcript's first `offset` bytes (complete lines), whose CRC-32 is `crc`."""

    path: str
    offset: int
    crc: int
    format: str
    state: dict[str, Any]
    skipped: int
    entries: list[Entry]
    records: int = 1


def read(path: Path, size: int | None, folder: Path, keep_turns: int | None = None) -> Transcript:
    """transcripts.read(path, size), from what `folder` keeps of an earlier read of this file when it still holds;
    `keep_turns`: tool results older than that many turns may come with their last line only (see above)."""
    data = raw(path, size)
    cut = data.rfind(b"\n") + 1  # what follows the last line end may still be being written: never kept
    where = str(path.resolve())
    file = folder / f"{zlib.crc32(where.encode('utf-8', 'surrogateescape')):08x}.bin"
    known = _load(file, where, data, cut, keep_turns)
    tail, tail_skipped = _json_lines(_text(data[cut:]))
    if known is None:
        objects, skipped = _json_lines(_text(data[:cut]))
        kind = _detect((objects + tail)[:DETECT_LINES]) if len(objects) >= DETECT_LINES else None
        if kind not in RESUMABLE:  # short, Gemini, a whole document or unknown: transcripts.parse says
            return parse(_text(data), str(path))
        state: dict[str, Any] = {}
        head = PARSERS[str(kind)](iter(objects), skipped, state)
        known = Parsed(where, cut, zlib.crc32(data[:cut]), str(kind), state, head.skipped, head.entries)
        _write(file, [(__version__, where, known.format, keep_turns),
                      (0, cut, known.crc, state, head.skipped, _rows(_settled(head.entries, keep_turns)))])
    elif known.offset < cut:
        state = dict(known.state)
        objects, skipped = _json_lines(_text(data[known.offset:cut]))
        more = PARSERS[known.format](iter(objects), skipped, state)
        crc = zlib.crc32(data[known.offset:cut], known.crc)
        start = known.offset
        known = known._replace(offset=cut, crc=crc, state=state, skipped=known.skipped + more.skipped,
                               entries=known.entries + more.entries)
        if keep_turns is not None and known.records + 1 >= REWRITE:  # one record again, old results cut
            _write(file, [(__version__, where, known.format, keep_turns),
                          (0, cut, crc, state, known.skipped, _rows(_settled(known.entries, keep_turns)))])
        else:
            _append(file, (start, cut, crc, state, more.skipped, _rows(more.entries)))
    rest = PARSERS[known.format](iter(tail), tail_skipped, dict(known.state))
    return Transcript(known.format, rest.session, known.entries + rest.entries, known.skipped + rest.skipped)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _rows(entries: list[Entry]) -> list[tuple[Any, ...]]:
    return [tuple(e) for e in entries]


def _load(file: Path, where: str, data: bytes, cut: int, keep_turns: int | None = None) -> Parsed | None:
    """The kept parse of this file's longest start that is still the start of `data`'s complete lines (kept whole,
    or with its results cut to a line as a read with `keep_turns` may have them)."""
    try:
        blob = file.read_bytes()
    except OSError:
        return None
    records, new = _records(blob), tuple.__new__
    try:
        header = next(records)
        version, path, kind = header[:3]
        kept = header[3] if len(header) > 3 else None  # the results older than this many turns are cut
        if version != __version__ or path != where or kind not in RESUMABLE:
            return None
        if kept is not None and (keep_turns is None or kept < keep_turns):
            return None  # cut more than this read may have cut
        offset, crc, state, skipped, entries, count = 0, 0, {}, 0, [], 0
        for start, end, end_crc, end_state, more, rows in records:
            count += 1
            if start != offset or end > cut:
                continue  # another process's record of the same lines, or more than this read has
            if not set(map(len, rows)) <= {len(Entry._fields)}:
                return None
            offset, crc, state, skipped = end, end_crc, end_state, skipped + more
            entries += [new(Entry, row) for row in rows]  # Entry(*row) costs 7x (0.6 ms for 1,000 entries)
    except (StopIteration, ValueError, TypeError):
        return None
    if not 0 < offset <= cut or not isinstance(state, dict) or zlib.crc32(memoryview(data)[:offset]) != crc:
        return None
    return Parsed(where, offset, crc, kind, state, skipped, entries, count)


def _settled(entries: list[Entry], keep_turns: int | None) -> list[Entry]:
    """`entries`, each tool result older than the last `keep_turns` turns (compaction's split, which appending
    never changes for them) with its last line only: what its stub shows (compaction.last_line; the exit code is
    parsed already). All of them when `keep_turns` is None."""
    if keep_turns is None:
        return entries
    from shiftgit.agents.compaction import last_line, opening, split_turns

    turns = split_turns(opening(entries)[2])
    old = {id(e) for turn in turns[: max(len(turns) - keep_turns, 0)] for e in turn if e.kind == "result"}
    return [e._replace(text=last_line(e.text)) if id(e) in old else e for e in entries]


def _records(blob: bytes) -> Iterator[Any]:
    """The records that check out, up to the first that does not (a write cut short)."""
    if not blob.startswith(MAGIC):
        return
    at, view = len(MAGIC), memoryview(blob)  # slices of the view: the records are not copied (megabytes at 5 MB)
    while at + 8 <= len(blob):
        size, crc = int.from_bytes(blob[at:at + 4], "big"), int.from_bytes(blob[at + 4:at + 8], "big")
        body = view[at + 8:at + 8 + size]
        if len(body) != size or zlib.crc32(body) != crc:
            return
        try:
            yield marshal.loads(body)
        except (EOFError, ValueError, TypeError):
            return
        at += 8 + size


def _record(value: Any) -> bytes:
    body = marshal.dumps(value)
    return len(body).to_bytes(4, "big") + zlib.crc32(body).to_bytes(4, "big") + body


def _write(file: Path, values: list[Any]) -> None:
    """A new file (temp file, rename); the KEPT most recent transcripts' files are kept."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
        tmp.write_bytes(MAGIC + b"".join(_record(v) for v in values))
        os.replace(tmp, file)
        # listed, not globbed: pathlib's glob loads re (with enum) for a pattern an ending settles
        kept = sorted((file.parent / name for name in os.listdir(file.parent) if name.endswith(".bin")),
                      key=lambda f: f.stat().st_mtime_ns)
        for old in kept[:-KEPT]:
            old.unlink(missing_ok=True)
    except (OSError, ValueError):  # memory only: the next read parses the whole file again
        return


def _append(file: Path, value: Any) -> None:
    """One record at the end, in one write (O_APPEND: records of processes writing at once do not mix)."""
    try:
        fd = os.open(file, os.O_WRONLY | os.O_APPEND)
    except OSError:
        return
    try:
        os.write(fd, _record(value))
    except (OSError, ValueError):
        return
    finally:
        os.close(fd)
