"""shiftgit/memo.py: a cache file replaced whole, or left as it was, and never a temp file left behind."""

from __future__ import annotations

import os
from pathlib import Path

from shiftgit import memo


def test_a_memo_is_replaced_whole_and_its_folder_made(tmp_path: Path) -> None:
    path = tmp_path / "shift" / "kept"
    memo.replace(str(path), b"one\n")
    memo.replace(str(path), b"two\n")
    assert path.read_bytes() == b"two\n"
    assert sorted(os.listdir(path.parent)) == ["kept"]


def test_a_failed_write_keeps_what_was_there_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "kept"
    path.mkdir()  # a folder in the way: the temp file is written, the rename fails
    (path / "inside").write_bytes(b"old\n")
    memo.replace(str(path), b"new\n")
    assert sorted(os.listdir(tmp_path)) == ["kept"] and (path / "inside").read_bytes() == b"old\n"
    blocked = tmp_path / "file"
    blocked.write_bytes(b"")
    memo.replace(str(blocked / "kept"), b"x")  # its folder is a file: nothing written, nothing raised
    assert blocked.read_bytes() == b"" and sorted(os.listdir(tmp_path)) == ["file", "kept"]
