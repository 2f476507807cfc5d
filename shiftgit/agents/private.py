"""Small JSON files the agent hooks keep in `<git-dir>/shift/agents/`: memory, not record.

What a hold was for, turn counts, how the agent's shell runs shiftgit. Never committed; written
without fsync (losing one costs at most a repeated hold or a probe), read leniently (garbage = empty).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from shiftgit import rawjson
from shiftgit.repo import Repo

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any


def path(repo: Repo, name: str) -> Path:
    return repo.private("agents", name)


def read(file: Path) -> dict[str, Any]:
    try:
        data = rawjson.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write(file: Path, data: Mapping[str, Any]) -> None:
    """Replace the file whole (temp file, rename): a reader sees the old or the new content."""
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    tmp.write_text(rawjson.dumps(data), encoding="utf-8")
    os.replace(tmp, file)
