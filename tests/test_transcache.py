"""agents/transcache.py: a transcript read again after it grew parses only what was added, and the result is
always the whole parse's, entry for entry (a file rewritten, a line being written, a damaged cache)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import transcript_fixtures as tf

from shiftgit.agents import transcache, transcripts

Builder = Callable[..., None]


def lines_of(build: Builder, tmp_path: Path, turns: int = 40) -> list[bytes]:
    whole = tmp_path / "whole.jsonl"
    build(whole, turns)
    return whole.read_bytes().splitlines(keepends=True)


def same(path: Path, folder: Path, size: int | None = None) -> transcripts.Transcript:
    cached = transcache.read(path, size, folder)
    assert cached == transcripts.read(path, size)
    return cached


@pytest.mark.parametrize("build", [tf.claude, tf.codex], ids=["claude", "codex"])
def test_a_growing_transcript_is_parsed_once_and_read_as_a_whole(tmp_path: Path, build: Builder) -> None:
    lines, folder, path = lines_of(build, tmp_path), tmp_path / "cache", tmp_path / "session.jsonl"
    path.write_bytes(b"".join(lines[:60]))
    same(path, folder)
    kept = list(folder.glob("*.bin"))
    assert len(kept) == 1
    for end in (61, 75, 90, len(lines)):  # grown by one line, then by several
        path.write_bytes(b"".join(lines[:end]))
        assert len(same(path, folder).entries) > 0
        data = path.read_bytes()
        known = transcache._load(kept[0], str(path.resolve()), data, len(data))
        assert known is not None and known.offset == len(data)  # the parse kept reaches the end
        saved = kept[0].read_bytes()
        transcache._write(kept[0], [(transcache.__version__, known.path, known.format),
                                    (0, known.offset, known.crc, known.state, known.skipped,
                                     [tuple(e._replace(text="KEPT-MARK")) for e in known.entries])])
        assert "KEPT-MARK" in str(transcache.read(path, None, folder).entries)  # the kept lines are used
        kept[0].write_bytes(saved)
    with path.open("ab") as handle:  # a line being written: parsed (skipped) now, never kept
        handle.write(lines[0][:20])
    assert same(path, folder).skipped == 1
    assert same(path, folder, size=len(b"".join(lines))).skipped == 0  # as the hook saw it


def test_an_earlier_size_and_records_written_at_once_read_right(tmp_path: Path) -> None:
    lines, folder, path = lines_of(tf.claude, tmp_path), tmp_path / "cache", tmp_path / "session.jsonl"
    for end in (60, 61, 75, 90):
        path.write_bytes(b"".join(lines[:end]))
        same(path, folder)
    same(path, folder, size=len(b"".join(lines[:70])))  # a job redone with the size its hook saw: fewer bytes
    kept = next(folder.glob("*.bin"))
    again = kept.read_bytes()
    chunks = len(transcache.MAGIC) + 8 + int.from_bytes(again[len(transcache.MAGIC):len(transcache.MAGIC) + 4], "big")
    kept.write_bytes(again + again[chunks:])  # every record of lines twice, as two writers could leave them
    path.write_bytes(b"".join(lines))
    data = path.read_bytes()
    assert transcache._load(kept, str(path.resolve()), data, len(data)) is not None  # the repeats are passed over
    assert same(path, folder).entries


@pytest.mark.parametrize("damage", ["rewritten", "cache garbage", "cache truncated"])
def test_a_changed_file_or_a_damaged_cache_costs_a_whole_parse_never_a_wrong_one(tmp_path: Path,
                                                                                 damage: str) -> None:
    lines, folder, path = lines_of(tf.claude, tmp_path), tmp_path / "cache", tmp_path / "session.jsonl"
    path.write_bytes(b"".join(lines[:70]))
    same(path, folder)
    kept = next(folder.glob("*.bin"))
    if damage == "rewritten":  # same size, other bytes early on: not the file that was parsed
        path.write_bytes(b"".join(lines[:70]).replace(b"TURN-MARK-001", b"TURN-MARK-999"))
    elif damage == "cache garbage":
        kept.write_bytes(b"not a cache")
    else:  # a record cut short: the ones before it still count, the rest is parsed again
        path.write_bytes(b"".join(lines[:80]))
        same(path, folder)
        kept.write_bytes(kept.read_bytes()[:-50])
    assert "TURN-MARK-999" in str(same(path, folder).entries) or damage != "rewritten"


def test_gemini_and_short_transcripts_are_parsed_whole_and_not_kept(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    gemini, short = tmp_path / "chat.jsonl", tmp_path / "short.jsonl"
    tf.gemini(gemini, 40)
    tf.claude(short, 3)
    same(gemini, folder)
    same(short, folder)
    assert not list(folder.glob("*.bin"))


def test_an_unknown_transcript_is_refused_as_before(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text("".join(f'{{"hello": {n}}}\n' for n in range(80)))
    with pytest.raises(transcripts.UsageError, match="not a transcript shiftgit can read"):
        transcache.read(path, None, tmp_path / "cache")


@pytest.mark.parametrize("build", [tf.claude, tf.codex], ids=["claude", "codex"])
@pytest.mark.parametrize("keep", [0, 2, 6])
def test_old_results_kept_as_their_last_line_compact_to_the_same_text(tmp_path: Path, build: Builder,
                                                                      keep: int) -> None:
    """With `keep_turns`, a rewritten file keeps a result older than that many turns as its last line: the compacted
    conversation is the one the whole parse makes, at every size, and the file stops growing with old output."""
    from shiftgit.agents.compaction import Settings, compact

    lines, folder, path = lines_of(build, tmp_path, turns=80), tmp_path / "cache", tmp_path / "session.jsonl"
    settings = Settings(turns=keep, limit=8_000)
    sizes = []
    for end in range(60, len(lines) + 1, 4):
        path.write_bytes(b"".join(lines[:end]))
        whole = compact(transcripts.read(path), "summary", "header", settings, str)
        for _ in range(2):  # parsed and kept, then read from what was kept
            cached = transcache.read(path, None, folder, keep_turns=keep)
            assert compact(cached, "summary", "header", settings, str) == whole
        sizes.append(next(folder.glob("*.bin")).stat().st_size)
    assert max(sizes) < path.stat().st_size // 3  # results' output is most of the transcript
    assert transcache.read(path, None, folder) == transcripts.read(path)  # a read that wants it all parses again
    assert transcache.read(path, None, folder, keep_turns=keep + 1).entries == transcripts.read(path).entries
