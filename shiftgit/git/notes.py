"""refs/notes/shift: read notes, and write them compare-and-swap in git's 2-hex fanout layout.

This runs on the commit path (a post-commit hook), so it imports no pygit2 and drives git's plumbing.
A write costs four git processes: `cat-file --batch` (the tip, its root tree and only the fanout
subtrees the write touches), `unpack-objects` (the new blobs and trees, sent as one pack built here;
`mktree` would cost 4x as much, as it opens every loose subtree the root names), `commit-tree` and
`update-ref REF NEW OLD`. A write of 100 texts or more first stores its blobs in one pack with
`fast-import` (10,000 loose blobs would take seconds). A read costs one `cat-file --batch`.

Layout: every note is written at `ab/cdef…`. Flat entries (`git notes add` writes them in small trees)
and deeper fanout (`ab/cd/ef…`, git's layout for huge trees) are read, and rewritten as 2-hex fanout
when a write touches their subtree; the first write that finds root-level flat notes converts them
all. If one commit has notes at two paths, the 2-hex one wins. Non-note entries keep their paths.

Concurrency: `update-ref` compares and swaps. When the ref moved or its lock is held, the write starts
again from the new tip after a jittered exponential backoff, at most `retries` times (~10 s for 60).

Lock policy: git's `update-ref` refuses while `<ref>.lock` exists, and git never removes a lock it did
not create. Live git holds a ref lock for milliseconds; a SIGKILLed `update-ref` leaves it for ever.
So a writer that meets the notes ref's own lock (never `packed-refs.lock` or another) removes it once
its mtime is STALE_LOCK_SECONDS old: it renames it to a unique name, checks that the file it moved is
the one it judged (inode, mtime), and if not (a new writer took the lock meanwhile) links it back
without overwriting. Assumed: no live writer holds the lock that long (a SIGSTOPped git could).

Environment: `cwd` names the repository. Variables a hook inherits that point git elsewhere
(`GIT_DIR`, `GIT_INDEX_FILE`, ...) are dropped for these calls, and git speaks with LC_ALL=C.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple

from shiftgit.errors import GitError

if TYPE_CHECKING:
    import hashlib

NOTES_REF = "refs/notes/shift"
STALE_LOCK_SECONDS = 5.0

_TREE = "40000"
_NOTE_MODE = "100644"
_KINDS = {_TREE: "tree", "160000": "commit"}
_PACK_TYPES = {"commit": 1, "tree": 2, "blob": 3}
_BIG_BATCH = 100  # blobs: from here on, one pack by fast-import instead of loose objects
_CHUNK = 100  # cat-file requests written before their answers are read: far below any pipe buffer
_HEX = frozenset("0123456789abcdef")
_REPO_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_PREFIX",
              "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES")
_FALLBACK_IDENT = {"GIT_COMMITTER_NAME": "shiftgit", "GIT_COMMITTER_EMAIL": "shiftgit@localhost",
                   "GIT_AUTHOR_NAME": "shiftgit", "GIT_AUTHOR_EMAIL": "shiftgit@localhost"}
_IDENT_ERRORS = ("tell me who you are", "unable to auto-detect", "empty ident")
_HELD_LOCK = re.compile(r"Unable to create '(.+\.lock)': File exists")


class Entry(NamedTuple):
    """One tree entry: its mode as git stores it ("40000", "100644", ...) and its object id."""

    mode: str
    oid: str

    @property
    def kind(self) -> str:
        return _KINDS.get(self.mode, "blob")


Tree = dict[str, Entry]
Obj = tuple[str, bytes]  # (kind, body) to write
Made = tuple[str, bytes]  # (id, body) of a new tree


# -- public interface ------------------------------------------------------------------------------

def read_note(cwd: str | Path, commit: str, ref: str = NOTES_REF) -> str | None:
    """The note text attached to `commit` (a full id), or None."""
    key = _ids([commit])[0]
    return read_notes(cwd, [key], ref).get(key)


def note_blobs(cwd: str | Path, ref: str = NOTES_REF) -> dict[str, str]:
    """Every note on `ref`: commit id -> note blob id, whatever the layout (flat, 2-hex, deeper)."""
    with _CatFile(cwd, _env()) as cat:
        tip, _, root = _root(cat, _full(ref))
        return {commit: entry.oid for commit, entry in _notes_under(cat, root, _width(tip), None).items()}


def read_notes(cwd: str | Path, commits: Iterable[str], ref: str = NOTES_REF) -> dict[str, str]:
    """commit -> note text for those of `commits` that have a note; one git process in all."""
    wanted = set(_ids(commits))
    with _CatFile(cwd, _env()) as cat:
        tip, _, root = _root(cat, _full(ref))
        found = _notes_under(cat, root, _width(tip), {c[:2] for c in wanted})
        keys = sorted(wanted & found.keys())
        blobs = cat.get([found[c].oid for c in keys])
    return {c: _text(c, blob) for c, blob in zip(keys, blobs, strict=True)}


def write_notes(cwd: str | Path, updates: Mapping[str, str | None], ref: str = NOTES_REF,
                message: str = "shiftgit: notes", retries: int = 60) -> str:
    """Set (text) or remove (None) the notes of full commit ids, in one compare-and-swap commit.

    Returns the new notes commit id; if nothing changes, the current tip (the null id if `ref` does
    not exist). Raises GitError when git fails, or when the ref kept moving for `retries` retries.
    """
    env = _env()
    changes = dict(zip(_ids(updates), updates.values(), strict=True))
    width = len(next(iter(changes), "0" * 40))
    data = {text: text.encode() for text in changes.values() if text is not None}
    blobs = {text: _object_id("blob", body, width) for text, body in data.items()}
    writer = _Writer(cwd, env, _full(ref), message, _big_batch(cwd, env, list(data.values())))
    wanted = {c: (blobs[t] if t is not None else None) for c, t in changes.items()}
    for attempt in range(retries + 1):
        done = writer.attempt(wanted, width)
        if done is not None:
            return done
        if attempt < retries:
            time.sleep(_backoff(attempt))
    raise GitError(["update-ref", ref], f"gave up after {retries} retries; last: {writer.stderr}")


# -- the write loop ---------------------------------------------------------------------------------

class _Writer:
    """One write_notes call: builds on the current tip and swaps the ref; remembers what it built."""

    def __init__(self, cwd: str | Path, env: dict[str, str], ref: str, message: str,
                 blobs: list[bytes]) -> None:
        self.cwd, self.env, self.ref, self.message = cwd, env, ref, message
        self.blobs = blobs  # not written yet: they go into the first pack, with the trees
        self.built: dict[str | None, str] = {}  # tip -> our commit on it: a retry on the same tip reuses it
        self.stderr = ""

    def attempt(self, wanted: Mapping[str, str | None], width: int) -> str | None:
        """The new tip, or None when the swap lost (ref moved, lock held): try again."""
        with _CatFile(self.cwd, self.env) as cat:
            tip, tree, root = _root(cat, self.ref)
            if tip and len(tip) != width:
                raise ValueError(f"{width}-hex commit ids given, but {self.ref} holds {len(tip)}-hex ids")
            trees = [] if tip in self.built else _plan(cat, tree, root, wanted, width)
        old = tip or "0" * width
        if tip not in self.built:
            if not trees:
                return old
            blobs = [("blob", body) for body in self.blobs]
            _unpack(self.cwd, self.env, [*blobs, *(("tree", body) for _, body in trees)], width)
            self.blobs = []
            self.built[tip] = self._commit(trees[-1][0], tip)
        return self._swap(self.built[tip], old)

    def _commit(self, tree: str, parent: str | None) -> str:
        argv = ["commit-tree", "--no-gpg-sign", tree, *(["-p", parent] if parent else []), "-m", self.message]
        proc = _run(self.cwd, self.env, argv)
        if proc.returncode != 0 and _is_ident_error(proc.stderr):
            self.env = _with_fallback_ident(self.env)
            proc = _run(self.cwd, self.env, argv)
        return _checked(argv, proc).strip()

    def _swap(self, new: str, old: str) -> str | None:
        argv = ["update-ref", "-m", self.message, self.ref, new, old]
        proc = _run(self.cwd, self.env, argv)
        if proc.returncode == 0:
            return new
        self.stderr = proc.stderr.decode("utf-8", "replace")
        if "cannot lock ref" not in self.stderr:
            raise GitError(argv, self.stderr)
        _clear_stale_lock(self.stderr, self.ref, self.cwd)
        return None


def _backoff(attempt: int) -> float:
    """Jittered exponential backoff: 1-2 ms first, doubling, then 125-250 ms."""
    import random  # imports a write needs are loaded by writes only: readers (the gate) stay light

    cap = min(0.25, 0.002 * 2.0 ** attempt)
    return cap / 2 + random.uniform(0, cap / 2)


def _clear_stale_lock(stderr: str, ref: str, cwd: str | Path) -> bool:
    """Remove the notes ref's lock if STALE_LOCK_SECONDS old (see the module's lock policy)."""
    held = _HELD_LOCK.search(stderr)
    if not held or not held.group(1).endswith(f"/{ref}.lock"):
        return False
    lock = Path(cwd, held.group(1))  # git names it absolute; were it relative, it would be to cwd
    try:
        seen = lock.stat()
    except FileNotFoundError:
        return False
    if time.time() - seen.st_mtime < STALE_LOCK_SECONDS:
        return False
    return _remove_if_same(lock, seen)


def _remove_if_same(lock: Path, seen: os.stat_result) -> bool:
    import random

    grave = lock.with_name(f"{lock.name}.stale-{os.getpid()}-{random.getrandbits(32):08x}")
    try:
        os.rename(lock, grave)
    except FileNotFoundError:
        return False
    moved = grave.stat()
    same = (moved.st_ino, moved.st_dev, moved.st_mtime) == (seen.st_ino, seen.st_dev, seen.st_mtime)
    if not same:
        try:
            os.link(grave, lock)  # a live writer's lock: put it back, never over a newer one
        except OSError:
            pass
    grave.unlink()
    return same


# -- building and writing the new trees -------------------------------------------------------------

def _plan(cat: _CatFile, tree: str, root: Tree, wanted: Mapping[str, str | None], width: int) -> list[Made]:
    """The new trees as (id, body), children first, root last; [] if the root tree would not change."""
    flat = {name for name, entry in root.items() if entry.kind == "blob" and _is_id(name, width)}
    touched = {c[:2] for c in wanted} | {name[:2] for name in flat}
    expanded = {p: root[p] for p in touched if _is_fanout(p, root.get(p))}
    notes, others = _expand(cat, expanded, width)
    for name in flat:
        notes.setdefault(name, root[name])
    for commit, blob in wanted.items():
        if blob is None:
            notes.pop(commit, None)
        else:
            notes[commit] = Entry(_NOTE_MODE, blob)
    paths = {name: entry for name, entry in root.items() if name not in flat and name not in expanded}
    paths.update(others)
    paths.update({f"{c[:2]}/{c[2:]}": entry for c, entry in notes.items()})
    trees: list[Made] = []
    new_root = _build(paths, width, trees)
    return [] if new_root.oid == (tree or _object_id("tree", b"", width)) else trees


def _build(paths: Mapping[str, Entry], width: int, out: list[Made]) -> Entry:
    """The tree holding `paths` ("dir/name" -> entry); appends each tree, children first, to `out`."""
    here: Tree = {}
    below: dict[str, dict[str, Entry]] = {}
    for path, entry in paths.items():
        head, sep, rest = path.partition("/")
        if sep:
            below.setdefault(head, {})[rest] = entry
        else:
            here[head] = entry
    for name, sub in below.items():
        here[name] = _build(sub, width, out)
    body = _tree_body(here)
    out.append((_object_id("tree", body, width), body))
    return Entry(_TREE, out[-1][0])


def _tree_body(tree: Tree) -> bytes:
    """A tree object's bytes: entries in git's order, where a subtree sorts as if named "name/"."""
    def order(name: str) -> bytes:
        return _raw(name) + (b"/" if tree[name].kind == "tree" else b"")

    return b"".join(b"%s %s\0%s" % (tree[n].mode.encode(), _raw(n), bytes.fromhex(tree[n].oid))
                    for n in sorted(tree, key=order))


def _unpack(cwd: str | Path, env: dict[str, str], objects: list[Obj], width: int) -> None:
    """Write objects with one `git unpack-objects`, from a version-2 pack of whole objects."""
    import zlib

    parts = [b"PACK", (2).to_bytes(4, "big"), len(objects).to_bytes(4, "big")]
    for kind, body in objects:
        parts += [_pack_header(_PACK_TYPES[kind], len(body)), zlib.compress(body, 1)]
    pack = b"".join(parts)
    argv = ["unpack-objects", "-q"]
    _checked(argv, _run(cwd, env, argv, pack + _hash(width)(pack).digest()))


def _pack_header(code: int, size: int) -> bytes:
    out = bytearray()
    byte, size = code << 4 | size & 0x0F, size >> 4
    while size:
        out.append(byte | 0x80)
        byte, size = size & 0x7F, size >> 7
    out.append(byte)
    return bytes(out)


def _big_batch(cwd: str | Path, env: dict[str, str], blobs: list[bytes]) -> list[bytes]:
    """Store a big batch of blobs as one pack (one `git fast-import`); returns the blobs still to write."""
    if len(blobs) < _BIG_BATCH:
        return blobs
    argv = ["fast-import", "--quiet"]
    _checked(argv, _run(cwd, env, argv, b"".join(b"blob\ndata %d\n%s\n" % (len(b), b) for b in blobs)))
    return []


def _object_id(kind: str, body: bytes, width: int) -> str:
    return _hash(width)(b"%s %d\0%s" % (kind.encode(), len(body), body)).hexdigest()


def _hash(width: int) -> Callable[[bytes], hashlib._Hash]:
    import hashlib

    return hashlib.sha1 if width == 40 else hashlib.sha256


# -- reading trees ----------------------------------------------------------------------------------

def _root(cat: _CatFile, ref: str) -> tuple[str | None, str, Tree]:
    """The ref's tip commit id (None if absent), its root tree id ("" if absent) and entries."""
    got = cat.get([ref])[0]
    if got is None:
        return None, "", {}
    oid, kind, data = got
    if kind != "commit":
        raise GitError(["cat-file", ref], f"{ref} points to a {kind}, not a notes commit")
    tree = data.split(b"\n", 1)[0].split(b" ")[1].decode()
    return oid, tree, _parse_tree(_bodies(cat, [tree])[0], len(oid) // 2)


def _notes_under(cat: _CatFile, root: Tree, width: int, prefixes: set[str] | None) -> dict[str, Entry]:
    """commit -> note entry for notes in root (flat) and below the given 2-hex prefixes (None: all)."""
    subtrees = {p: e for p, e in root.items() if _is_fanout(p, e) and (prefixes is None or p in prefixes)}
    notes = _expand(cat, subtrees, width)[0]
    for name, entry in root.items():
        if entry.kind == "blob" and _is_id(name, width):
            notes.setdefault(name, entry)
    return notes


def _expand(cat: _CatFile, subtrees: Mapping[str, Entry], width: int) -> tuple[dict[str, Entry], Tree]:
    """Notes (commit -> entry) and other entries (path -> entry) below fanout subtrees, shallowest first."""
    notes: dict[str, Entry] = {}
    others: Tree = {}
    pending = dict(subtrees)
    while pending:
        level = list(pending.items())
        pending = {}
        for (path, _), body in zip(level, _bodies(cat, [e.oid for _, e in level]), strict=True):
            for name, entry in _parse_tree(body, width // 2).items():
                full = f"{path}/{name}"
                hexed = full.replace("/", "")
                if _is_fanout(name, entry) and len(hexed) < width:
                    pending[full] = entry
                elif entry.kind == "blob" and _is_id(hexed, width):
                    notes.setdefault(hexed, entry)
                else:
                    others[full] = entry
    return notes, others


def _parse_tree(data: bytes, raw_len: int) -> Tree:
    tree: Tree = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        name = data[space + 1:nul].decode("utf-8", "surrogateescape")
        tree[name] = Entry(data[pos:space].decode(), data[nul + 1:nul + 1 + raw_len].hex())
        pos = nul + 1 + raw_len
    return tree


def _bodies(cat: _CatFile, oids: list[str]) -> list[bytes]:
    bodies = []
    for oid, got in zip(oids, cat.get(oids), strict=True):
        if got is None:
            raise GitError(list(cat.argv), f"object {oid} is missing")
        bodies.append(got[2])
    return bodies


class _CatFile:
    """One `git cat-file --batch`, asked in rounds: each answer is (id, type, data), or None if missing."""

    argv = ("cat-file", "--batch")

    def __init__(self, cwd: str | Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(["git", *self.argv], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def __enter__(self) -> _CatFile:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            _close(stream)
        if self.proc.wait() != 0 and exc[0] is None:
            raise GitError(list(self.argv), f"exit status {self.proc.returncode}")

    def get(self, names: list[str]) -> list[tuple[str, str, bytes] | None]:
        answers: list[tuple[str, str, bytes] | None] = []
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        for start in range(0, len(names), _CHUNK):
            chunk = names[start:start + _CHUNK]
            stdin.write("".join(f"{name}\n" for name in chunk).encode())
            stdin.flush()
            answers.extend(self._answer(stdout) for _ in chunk)
        return answers

    def _answer(self, stdout: IO[bytes]) -> tuple[str, str, bytes] | None:
        header = stdout.readline().split()
        if len(header) != 3:
            if header[-1:] in ([b"missing"], [b"ambiguous"]):
                return None
            assert self.proc.stderr is not None
            raise GitError(list(self.argv), self.proc.stderr.read().decode("utf-8", "replace"))
        data = stdout.read(int(header[2]) + 1)[:-1]
        return header[0].decode(), header[1].decode(), data


# -- small helpers ----------------------------------------------------------------------------------

def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPO_VARS}
    env["LC_ALL"] = "C"
    return env


def _with_fallback_ident(env: Mapping[str, str]) -> dict[str, str]:
    return {**env, **{k: v for k, v in _FALLBACK_IDENT.items() if not env.get(k)}}


def _is_ident_error(stderr: bytes) -> bool:
    text = stderr.decode("utf-8", "replace").lower()
    return any(marker in text for marker in _IDENT_ERRORS)


def _run(cwd: str | Path, env: Mapping[str, str], argv: list[str],
         data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *argv], cwd=cwd, env=env, input=data, capture_output=True)


def _checked(argv: list[str], proc: subprocess.CompletedProcess[bytes]) -> str:
    if proc.returncode != 0:
        raise GitError(argv, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout.decode()


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None:
        try:
            stream.close()
        except BrokenPipeError:
            pass


def _ids(commits: Iterable[str]) -> list[str]:
    ids = [c.lower() for c in commits]
    bad = [c for c in ids if len(c) not in (40, 64) or not _HEX.issuperset(c)]
    if bad or len({len(c) for c in ids}) > 1:
        raise ValueError(f"full commit ids expected, all of one length: {(bad or ids)[:3]}")
    return ids


def _full(ref: str) -> str:
    if not ref.startswith("refs/"):
        raise ValueError(f"a full ref name is expected, like {NOTES_REF!r}: {ref!r}")
    return ref


def _is_id(name: str, width: int) -> bool:
    return len(name) == width and _HEX.issuperset(name)


def _is_fanout(name: str, entry: Entry | None) -> bool:
    return entry is not None and entry.kind == "tree" and len(name) == 2 and _HEX.issuperset(name)


def _width(tip: str | None) -> int:
    return len(tip) if tip else 40


def _raw(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


def _text(commit: str, blob: tuple[str, str, bytes] | None) -> str:
    if blob is None:
        raise GitError(["cat-file", "--batch"], f"the note blob of {commit} is missing")
    return blob[2].decode("utf-8", "replace")


# -- shared with the other hot path, the git hooks (shiftgit.gitview) -------------------------------

CatFile = _CatFile


def parse_tree(data: bytes, width: int) -> dict[str, Entry]:
    """A tree object's entries (name -> Entry) in a repository of `width`-hex ids."""
    return _parse_tree(data, width // 2)
