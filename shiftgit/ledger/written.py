"""Files shiftgit itself wrote outside `.shift/` (`init --agent` configs, the AGENTS.md pointer), by content.

`resume` and `rollback` never count them as edits to roll back while they still hold exactly what
shiftgit wrote (a person's later edit of one is an edit like any other). Kept per worktree in
`<git-dir>/shift/written.json` (`{path: blob id}`): memory of this clone, not record.
"""

from __future__ import annotations

from collections.abc import Iterable

from shiftgit import rawjson
from shiftgit.ledger.files import write_atomic
from shiftgit.repo import FileEntry, Repo

FILE = "written.json"


def read(repo: Repo) -> dict[str, str]:
    try:
        document = rawjson.loads(repo.private(FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in document.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(document, dict) else {}


def remember(repo: Repo, paths: Iterable[str]) -> None:
    """Record the blob id each path holds now (what shiftgit just wrote there)."""
    paths = [p for p in paths if (repo.root / p).is_file()]
    if not paths:
        return
    blobs = repo.git("hash-object", "--", *paths).split()
    known = read(repo)
    known.update(zip(paths, blobs, strict=True))
    import json  # a write (a checkpoint's process): the hooks only read

    write_atomic(repo.private(FILE), (json.dumps(known, sort_keys=True, indent=1) + "\n").encode())


def is_ours(known: dict[str, str], entry: FileEntry) -> bool:
    return entry.blob is not None and known.get(entry.path) == entry.blob


def without_ours(repo: Repo, entries: list[FileEntry]) -> list[FileEntry]:
    """The entries that are real edits: a file still holding what shiftgit wrote is not one."""
    known = read(repo)
    return [e for e in entries if not is_ours(known, e)] if known else entries
