"""Files kept on a `refs/shift/...` ref as a chain of commits: one commit per save, parent the previous.

Used for a run's compacted conversation (`refs/shift/context/<run>`, the tree replaced at each save)
and for kept check outputs (`refs/shift/outputs/<run>`, each save adds a file to the previous tree).
Nothing here touches HEAD, the index or the working tree; the ref moves compare-and-swap, so writers in
several worktrees (or `sync`) never lose a save. `sync` carries every `refs/shift/` ref.
"""

from __future__ import annotations

import secrets as _random
import time
from collections.abc import Mapping
from typing import NamedTuple

from shiftgit.errors import GitError
from shiftgit.repo import Repo

RETRIES = 20


class Saved(NamedTuple):
    commit: str
    blobs: dict[str, str]  # file name -> blob id


def save(repo: Repo, ref: str, files: Mapping[str, bytes], message: str, *, carry: bool = False) -> Saved:
    """A commit whose tree holds `files` (plus the previous tree's other files when `carry`), on `ref`.

    Blobs are written first; the ref moves only if nobody moved it meanwhile (else the save starts
    again from the new tip, a bounded number of times).
    """
    blobs = {name: _blob(repo, data) for name, data in files.items()}
    for attempt in range(RETRIES + 1):
        previous = repo.ref(ref)
        entries = _entries(repo, previous) if carry and previous else {}
        entries.update({name: ("100644", "blob", oid) for name, oid in blobs.items()})
        tree = repo.git("mktree", input="".join(f"{m} {t} {oid}\t{name}\n" for name, (m, t, oid)
                                                 in sorted(entries.items()))).strip()
        commit = repo.commit_tree(tree, [previous] if previous else [], message)
        try:
            repo.update_ref(ref, commit, previous or _zero(repo), message)
            return Saved(commit, blobs)
        except GitError:
            if attempt == RETRIES:
                raise
            time.sleep(_random.randbelow(20 * (attempt + 1)) / 1000)
    raise AssertionError("unreachable")


def read(repo: Repo, ref: str, name: str) -> bytes | None:
    """The bytes of file `name` in the tip of `ref`; None when there is no such ref or file."""
    return repo.show(f"{ref}:{name}") if repo.ref(ref) else None


def names(repo: Repo, ref: str) -> list[str]:
    """The files in the tip of `ref` (none when it does not exist)."""
    tip = repo.ref(ref)
    return sorted(_entries(repo, tip)) if tip else []


def _blob(repo: Repo, data: bytes) -> str:
    return repo.git("hash-object", "-w", "--stdin", input=data).strip()


def _entries(repo: Repo, commit: str) -> dict[str, tuple[str, str, str]]:
    out = repo.git("ls-tree", "-z", commit)
    entries = {}
    for line in out.split("\0"):
        meta, _, name = line.partition("\t")
        parts = meta.split(" ")
        if len(parts) == 3 and name:
            entries[name] = (parts[0], parts[1], parts[2])
    return entries


def _zero(repo: Repo) -> str:
    """The null object id in this repository's hash (sha1 or sha256)."""
    fmt = repo.git("rev-parse", "--show-object-format", check=False).strip()
    return "0" * (64 if fmt == "sha256" else 40)
