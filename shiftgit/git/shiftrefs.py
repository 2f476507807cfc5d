"""Files kept on a `refs/shift/...` ref as a chain of commits: one commit per save, parent the previous.

Used for a run's compacted conversation (`refs/shift/context/<run>`, the tree replaced at each save)
and for kept check outputs (`refs/shift/outputs/<run>`, each save adds a file to the previous tree).
Nothing here touches HEAD, the index or the working tree. The ref moves compare-and-swap: a concurrent
save (another worktree, `sync`) makes this one start again from the new tip instead of losing either.
`sync` carries every `refs/shift/` ref. (Plain plumbing, not `git fast-import`: measured here, one
fast-import writing a pack costs more than the four small commands.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import NamedTuple

from shiftgit.errors import GitError
from shiftgit.git.notestree import CatFile
from shiftgit.repo import Repo, clean_env

RETRIES = 20


class Saved(NamedTuple):
    commit: str
    blobs: dict[str, str]  # file name -> blob id


class Tip(NamedTuple):
    """A ref's commit, that commit's message, and one file of its tree (None for what is missing)."""

    commit: str | None
    message: str | None
    file: bytes | None


def tip(repo: Repo, ref: str, name: str) -> Tip:
    """The ref's commit, its message and the bytes of file `name` in it, in one git process."""
    with CatFile(repo.root, clean_env()) as cat:
        commit, found = cat.get([ref, f"{ref}:{name}"])
    if commit is None or commit[1] != "commit":
        return Tip(None, None, None)
    message = commit[2].split(b"\n\n", 1)[1].decode("utf-8", "replace") if b"\n\n" in commit[2] else ""
    return Tip(commit[0], message, found[2] if found else None)


def read(repo: Repo, ref: str, name: str) -> bytes | None:
    """The bytes of file `name` in the tip of `ref`; None when there is no such ref or file."""
    return tip(repo, ref, name).file


def save(repo: Repo, ref: str, files: Mapping[str, bytes], message: str, *, carry: bool = False,
         previous: str | None = None) -> Saved:
    """A commit whose tree holds `files` (plus the previous tree's other files when `carry`), on `ref`,
    its parent the ref's tip: `previous` when the caller just read it ("" for no ref yet), else read here."""
    blobs = {name: repo.git("hash-object", "-w", "--stdin", input=data).strip() for name, data in files.items()}
    parent = previous if previous is not None else (repo.ref(ref) or "")
    for attempt in range(RETRIES + 1):
        entries = _entries(repo, parent) if carry and parent else {}
        entries.update({name: f"100644 blob {oid}" for name, oid in blobs.items()})
        tree = repo.git("mktree", input="".join(f"{meta}\t{name}\n" for name, meta in entries.items())).strip()
        commit = repo.commit_tree(tree, [parent] if parent else [], message)
        try:
            repo.update_ref(ref, commit, parent or _zero(commit), message.split("\n", 1)[0])
            return Saved(commit, blobs)
        except GitError:
            if attempt == RETRIES:
                raise
        time.sleep(int.from_bytes(os.urandom(2), "big") % (20 * (attempt + 1)) / 1000)
        parent = repo.ref(ref) or ""
    raise AssertionError("unreachable")


def _entries(repo: Repo, commit: str) -> dict[str, str]:
    """name -> "mode type id" for the files at the top of `commit`'s tree."""
    entries = {}
    for line in repo.git("ls-tree", "-z", commit).split("\0"):
        meta, _, name = line.partition("\t")
        if name:
            entries[name] = meta
    return entries


def _zero(oid: str) -> str:
    """The null id in the hash of this repository (a sha1 or a sha256 id is 40 or 64 hex digits)."""
    return "0" * len(oid)
