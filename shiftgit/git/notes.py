"""Notes refs (refs/notes/shift, refs/notes/shift-data): read notes, write them compare-and-swap in git's
2-hex fanout layout. A handoff writes its human note and its machine record in ONE swap: the refs move
together in one `update-ref --stdin` transaction (all or none), so a reader never sees one without the other.

This runs on the commit path (a post-commit hook), so it imports no pygit2 and drives git's plumbing.
A write costs four git processes, plus a `commit-tree` per further ref: `cat-file --batch` (the tips,
their root trees and only the fanout subtrees the write touches), `unpack-objects` (the new blobs and
trees, sent as one pack built here; `mktree` would cost 4x as much, as it opens every loose subtree the
root names), `commit-tree` and `update-ref REF NEW OLD` (`update-ref --stdin` for several refs). A write
of 100 texts or more first stores its blobs in one pack with `fast-import` (10,000 loose blobs would
take seconds). A read costs one `cat-file --batch`. The post-commit hook writes the handoff of a commit through
git/quicknote.py instead when the gate prepared it (same layout, same one swap of both refs).

Layout: every note is written at `ab/cdef…`. Flat entries (`git notes add` writes them in small trees)
and deeper fanout (`ab/cd/ef…`, git's layout for huge trees) are read, and rewritten as 2-hex fanout
when a write touches their subtree; the first write that finds root-level flat notes converts them
all. If one commit has notes at two paths, the 2-hex one wins. Non-note entries keep their paths.

Concurrency: `update-ref` compares and swaps. When the ref moved or its lock is held, the write starts
again from the new tip after a jittered exponential backoff, at most `retries` times (~10 s for 60).

Lock policy (shiftgit/reflocks.py, for every ref shiftgit updates): a writer that meets the notes ref's own
lock removes it once its mtime is STALE_LOCK_SECONDS old (a SIGKILLed `update-ref` leaves it for ever).

Environment: `cwd` names the repository. Variables a hook inherits that point git elsewhere
(`GIT_DIR`, `GIT_INDEX_FILE`, ...) are dropped for these calls, and git speaks with LC_ALL=C.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from shiftgit.errors import GitError
from shiftgit.git.notestree import (
    CatFile,
    checked,
    commit_ids,
    full_ref,
    git_env,
    id_width,
    is_ident_error,
    note_text,
    notes_under,
    plan_trees,
    read_root,
    run_git,
    store_big_batch,
    unpack,
    with_fallback_ident,
)
from shiftgit.git.rawgit import object_id
from shiftgit.reflocks import STALE_LOCK_SECONDS  # noqa: F401 (the lock policy below: shiftgit/reflocks.py)
from shiftgit.reflocks import clear_stale_lock as _clear_stale_lock
from shiftgit.reflocks import remove_if_same as _remove_if_same  # noqa: F401

TYPE_CHECKING = False  # typing costs ~4 ms to import (`log`): annotations only
if TYPE_CHECKING:
    pass

NOTES_REF = "refs/notes/shift"  # the human note, shown by `git log`
DATA_REF = "refs/notes/shift-data"  # the machine record (JSON), read by shiftgit

# -- public interface ------------------------------------------------------------------------------

def read_note(cwd: str | Path, commit: str, ref: str = NOTES_REF) -> str | None:
    """The note text attached to `commit` (a full id), or None."""
    key = commit_ids([commit])[0]
    return read_notes(cwd, [key], ref).get(key)


def note_blobs(cwd: str | Path, ref: str = NOTES_REF) -> dict[str, str]:
    """Every note on `ref`: commit id -> note blob id, whatever the layout (flat, 2-hex, deeper)."""
    with CatFile(cwd, git_env()) as cat:
        tip, _, root = read_root(cat, full_ref(ref))
        return {commit: entry.oid for commit, entry in notes_under(cat, root, id_width(tip), None).items()}


def read_notes(cwd: str | Path, commits: Iterable[str], ref: str = NOTES_REF) -> dict[str, str]:
    """commit -> note text for those of `commits` that have a note; one git process in all."""
    wanted = set(commit_ids(commits))
    with CatFile(cwd, git_env()) as cat:
        tip, _, root = read_root(cat, full_ref(ref))
        found = notes_under(cat, root, id_width(tip), {c[:2] for c in wanted})
        keys = sorted(wanted & found.keys())
        blobs = cat.get([found[c].oid for c in keys])
    return {c: note_text(c, blob) for c, blob in zip(keys, blobs, strict=True)}


def write_notes(cwd: str | Path, updates: Mapping[str, str | None], ref: str = NOTES_REF,
                message: str = "shiftgit: notes", retries: int = 60) -> str:
    """Set (text) or remove (None) the notes of full commit ids, in one compare-and-swap commit.

    Returns the new notes commit id; if nothing changes, the current tip (the null id if `ref` does
    not exist). Raises GitError when git fails, or when the ref kept moving for `retries` retries.
    """
    return write_note_refs(cwd, {ref: updates}, message, retries)[full_ref(ref)]


def write_handoff(cwd: str | Path, updates: Mapping[str, tuple[str, str] | None], message: str,
                  retries: int = 60) -> dict[str, str]:
    """Commit -> (human note, machine record) or None (remove both): both refs in one compare-and-swap."""
    return write_note_refs(cwd, {NOTES_REF: {c: pair[0] if pair else None for c, pair in updates.items()},
                                 DATA_REF: {c: pair[1] if pair else None for c, pair in updates.items()}},
                           message, retries)


def write_note_refs(cwd: str | Path, per_ref: Mapping[str, Mapping[str, str | None]],
                    message: str = "shiftgit: notes", retries: int = 60) -> dict[str, str]:
    """write_notes over several notes refs at once: one `update-ref --stdin` transaction swaps them all
    (all or none). Returns ref -> its tip afterwards."""
    env = git_env()
    sets = {full_ref(ref): dict(zip(commit_ids(u), u.values(), strict=True)) for ref, u in per_ref.items()}
    width = len(next((c for changes in sets.values() for c in changes), "0" * 40))
    data = {text: text.encode() for changes in sets.values() for text in changes.values() if text is not None}
    blobs = {text: object_id("blob", body, width) for text, body in data.items()}
    writer = _Writer(cwd, env, message, store_big_batch(cwd, env, list(data.values())))
    wanted = {ref: {c: (blobs[t] if t is not None else None) for c, t in changes.items()}
              for ref, changes in sets.items()}
    for attempt in range(retries + 1):
        done = writer.attempt(wanted, width)
        if done is not None:
            return done
        if attempt < retries:
            time.sleep(_backoff(attempt))
    raise GitError(["update-ref", *sets], f"gave up after {retries} retries; last: {writer.stderr}")


# -- the write loop ---------------------------------------------------------------------------------

class _Writer:
    """One write: builds on the current tips and swaps the refs; remembers what it built."""

    def __init__(self, cwd: str | Path, env: dict[str, str], message: str, blobs: list[bytes]) -> None:
        self.cwd, self.env, self.message = cwd, env, message
        self.blobs = blobs  # not written yet: they go into the first pack, with the trees
        self.built: dict[tuple[str, str | None], str] = {}  # (ref, tip) -> our commit on it: a retry reuses it
        self.stderr = ""

    def attempt(self, wanted: Mapping[str, Mapping[str, str | None]], width: int) -> dict[str, str] | None:
        """ref -> new tip, or None when the swap lost (a ref moved, a lock held): try again."""
        plans: dict[str, tuple[str | None, list[tuple[str, bytes]]]] = {}
        with CatFile(self.cwd, self.env) as cat:
            for ref, changes in wanted.items():
                tip, tree, root = read_root(cat, ref)
                if tip and len(tip) != width:
                    raise ValueError(f"{width}-hex commit ids given, but {ref} holds {len(tip)}-hex ids")
                built = (ref, tip) in self.built
                plans[ref] = (tip, [] if built else plan_trees(cat, tree, root, changes, width))
        fresh = [(ref, tip, trees) for ref, (tip, trees) in plans.items() if (ref, tip) not in self.built and trees]
        if fresh:
            objects = [("blob", body) for body in self.blobs]
            objects += [("tree", body) for _, _, trees in fresh for _, body in trees]
            unpack(self.cwd, self.env, objects, width)
            self.blobs = []
            for ref, tip, trees in fresh:
                self.built[(ref, tip)] = self._commit(trees[-1][0], tip)
        swaps = {ref: (self.built[(ref, tip)], tip or "0" * width) for ref, (tip, _) in plans.items()
                 if (ref, tip) in self.built}
        result = {ref: tip or "0" * width for ref, (tip, _) in plans.items()}
        if not swaps:
            return result
        if not self._swap(swaps):
            return None
        return {**result, **{ref: new for ref, (new, _) in swaps.items()}}

    def _commit(self, tree: str, parent: str | None) -> str:
        argv = ["commit-tree", "--no-gpg-sign", tree, *(["-p", parent] if parent else []), "-m", self.message]
        proc = run_git(self.cwd, self.env, argv)
        if proc.returncode != 0 and is_ident_error(proc.stderr):
            self.env = with_fallback_ident(self.env)
            proc = run_git(self.cwd, self.env, argv)
        return checked(argv, proc).strip()

    def _swap(self, swaps: Mapping[str, tuple[str, str]]) -> bool:
        """One ref: `update-ref REF NEW OLD`; several: one `update-ref --stdin` transaction."""
        if len(swaps) == 1:
            [(ref, (new, old))] = swaps.items()
            argv, stdin = ["update-ref", "-m", self.message, ref, new, old], None
        else:
            argv = ["update-ref", "-m", self.message, "--stdin"]
            stdin = "".join(f"update {ref} {new} {old}\n" for ref, (new, old) in swaps.items()).encode()
        proc = run_git(self.cwd, self.env, argv, stdin)
        if proc.returncode == 0:
            return True
        self.stderr = proc.stderr.decode("utf-8", "replace")
        if "cannot lock ref" not in self.stderr:
            raise GitError(argv, self.stderr)
        for ref in swaps:
            _clear_stale_lock(self.stderr, ref, self.cwd)
        return False


def _backoff(attempt: int) -> float:
    """Jittered exponential backoff: 1-2 ms first, doubling, then 125-250 ms."""
    import random  # imports a write needs are loaded by writes only: readers (the gate) stay light

    cap = min(0.25, 0.002 * 2.0 ** attempt)
    return cap / 2 + random.uniform(0, cap / 2)
