"""`refs/shift/archive`: finished runs, out of the work tree, kept in git.

Each archiving is one commit whose tree holds every archived run as a directory `<run>/` with
`ledger.json` (the final ledger, byte for byte) and `receipt.md` (what a person reads); its parent is
the previous archive commit, so `git log refs/shift/archive` is the list of archivings. The ref moves
compare-and-swap: a concurrent archiving (another worktree, `sync`) makes this one start again from
the new tip, keeping both. `sync` carries the ref; two machines' archives merge by run directory.
Nothing here touches HEAD, the index or the working tree.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import NamedTuple

from shiftgit import rawjson
from shiftgit.errors import GitError
from shiftgit.git.notestree import CatFile
from shiftgit.ledger.store import ARCHIVE_REF
from shiftgit.repo import Repo, clean_env

RETRIES = 20
FILES = ("ledger.json", "receipt.md")

__all__ = ["ARCHIVE_REF", "Entry", "archived_runs", "merged_tree", "read_ledgers", "save_run"]


class Entry(NamedTuple):
    run: str
    tree: str  # the run directory's tree id


def save_run(repo: Repo, run: str, files: Mapping[str, bytes], message: str) -> str:
    """A new archive commit holding `<run>/<name>` for each file (replacing that run's older entry)."""
    blobs = {name: repo.git("hash-object", "-w", "--stdin", input=data).strip() for name, data in files.items()}
    subtree = repo.git("mktree", input="".join(f"100644 blob {oid}\t{name}\n" for name, oid in sorted(blobs.items())))
    subtree = subtree.strip()
    for attempt in range(RETRIES + 1):
        parent = repo.ref(ARCHIVE_REF)
        entries = {e.run: e.tree for e in _entries(repo, parent)} if parent else {}
        entries[run] = subtree
        commit = repo.commit_tree(_mktree(repo, entries), [parent] if parent else [], message)
        try:
            repo.update_ref(ARCHIVE_REF, commit, parent or repo.null_id, message.split("\n", 1)[0])
            return commit
        except GitError:
            if attempt == RETRIES:
                raise
        time.sleep(int.from_bytes(os.urandom(2), "big") % (20 * (attempt + 1)) / 1000)
    raise AssertionError("unreachable")


def archived_runs(repo: Repo, commit: str | None = None) -> list[str]:
    """The runs the archive holds (at `commit`, default its tip), sorted."""
    tip = commit or repo.ref(ARCHIVE_REF)
    return sorted(e.run for e in _entries(repo, tip)) if tip else []


def read_ledgers(repo: Repo, runs: list[str] | None = None) -> dict[str, bytes]:
    """run -> its archived ledger bytes (every archived run, or those named), read with one git process."""
    names = archived_runs(repo) if runs is None else runs
    if not names:
        return {}
    with CatFile(repo.root, clean_env()) as cat:
        found = cat.get([f"{ARCHIVE_REF}:{run}/ledger.json" for run in names])
    return {run: answer[2] for run, answer in zip(names, found, strict=True) if answer and answer[1] == "blob"}


def merged_tree(repo: Repo, mine: str, theirs: str) -> str:
    """The union of two archive commits' run directories; a run both hold keeps the newer ledger's entry."""
    ours = {e.run: e.tree for e in _entries(repo, mine)}
    other = {e.run: e.tree for e in _entries(repo, theirs)}
    for run, tree in other.items():
        if run not in ours or _updated_at(repo, tree) > _updated_at(repo, ours[run]):
            ours[run] = tree
    return _mktree(repo, ours)


def _updated_at(repo: Repo, tree: str) -> str:
    data = repo.show(f"{tree}:ledger.json")
    try:
        value = rawjson.loads(data or b"{}").get("updated_at")
    except (ValueError, AttributeError):
        return ""
    return value if isinstance(value, str) else ""


def _entries(repo: Repo, commit: str | None) -> list[Entry]:
    if not commit:
        return []
    out = repo.git("ls-tree", "-z", commit, check=False)
    entries = []
    for line in out.split("\0"):
        meta, _, name = line.partition("\t")
        parts = meta.split()
        if name and len(parts) == 3 and parts[1] == "tree":
            entries.append(Entry(name, parts[2]))
    return entries


def _mktree(repo: Repo, entries: Mapping[str, str]) -> str:
    text = "".join(f"040000 tree {tree}\t{run}\n" for run, tree in sorted(entries.items()))
    return repo.git("mktree", input=text).strip()
