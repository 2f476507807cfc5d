"""The notes tree as git's plumbing sees it: fanout trees built here and sent as one pack, read
with one `cat-file --batch`. Used by `notes` (reads, compare-and-swap writes) and the hook context;
stdlib only (the commit path).
"""

from __future__ import annotations

import os

from shiftgit.errors import GitError
from shiftgit.git import rawgit
from shiftgit.git.rawgit import object_id, pack, tree_body

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import IO, Any, NamedTuple
else:
    from shiftgit.tuples import NamedTuple

_TREE = "40000"
_NOTE_MODE = "100644"
_KINDS = {_TREE: "tree", "160000": "commit"}
_BIG_BATCH = 100  # blobs: from here on, one pack by fast-import instead of loose objects
_CHUNK = 100  # cat-file requests written before their answers are read: far below any pipe buffer
_HEX = frozenset("0123456789abcdef")
_REPO_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_PREFIX",
              "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES")
_FALLBACK_IDENT = {"GIT_COMMITTER_NAME": "shiftgit", "GIT_COMMITTER_EMAIL": "shiftgit@localhost",
                   "GIT_AUTHOR_NAME": "shiftgit", "GIT_AUTHOR_EMAIL": "shiftgit@localhost"}
_IDENT_ERRORS = ("tell me who you are", "unable to auto-detect", "empty ident")


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


# -- building and writing the new trees -------------------------------------------------------------

def plan_trees(cat: CatFile, tree: str, root: Tree, wanted: Mapping[str, str | None], width: int) -> list[Made]:
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
    return [] if new_root.oid == (tree or object_id("tree", b"", width)) else trees


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
    body = tree_body(here)
    out.append((object_id("tree", body, width), body))
    return Entry(_TREE, out[-1][0])


def unpack(cwd: str | os.PathLike[str], env: dict[str, str], objects: list[Obj], width: int) -> None:
    """Write objects with one `git unpack-objects`, from a version-2 pack of whole objects."""
    argv = ["unpack-objects", "-q"]
    checked(argv, run_git(cwd, env, argv, pack(objects, width)))


def store_big_batch(cwd: str | os.PathLike[str], env: dict[str, str], blobs: list[bytes]) -> list[bytes]:
    """Store a big batch of blobs as one pack (one `git fast-import`); returns the blobs still to write."""
    if len(blobs) < _BIG_BATCH:
        return blobs
    argv = ["fast-import", "--quiet"]
    checked(argv, run_git(cwd, env, argv, b"".join(b"blob\ndata %d\n%s\n" % (len(b), b) for b in blobs)))
    return []


# -- reading trees ----------------------------------------------------------------------------------

def read_root(cat: CatFile, ref: str) -> tuple[str | None, str, Tree]:
    """The ref's tip commit id (None if absent), its root tree id ("" if absent) and entries."""
    got = cat.get([ref])[0]
    if got is None:
        return None, "", {}
    oid, kind, data = got
    if kind != "commit":
        raise GitError(["cat-file", ref], f"{ref} points to a {kind}, not a notes commit")
    tree = data.split(b"\n", 1)[0].split(b" ")[1].decode()
    return oid, tree, _parse_tree(_bodies(cat, [tree])[0], len(oid) // 2)


def notes_under(cat: CatFile, root: Tree, width: int, prefixes: set[str] | None) -> dict[str, Entry]:
    """commit -> note entry for notes in root (flat) and below the given 2-hex prefixes (None: all)."""
    subtrees = {p: e for p, e in root.items() if _is_fanout(p, e) and (prefixes is None or p in prefixes)}
    notes = _expand(cat, subtrees, width)[0]
    for name, entry in root.items():
        if entry.kind == "blob" and _is_id(name, width):
            notes.setdefault(name, entry)
    return notes


def _expand(cat: CatFile, subtrees: Mapping[str, Entry], width: int) -> tuple[dict[str, Entry], Tree]:
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


def _bodies(cat: CatFile, oids: list[str]) -> list[bytes]:
    bodies = []
    for oid, got in zip(oids, cat.get(oids), strict=True):
        if got is None:
            raise GitError(list(cat.argv), f"object {oid} is missing")
        bodies.append(got[2])
    return bodies


class CatFile:
    """One `git cat-file --batch`, asked in rounds: each answer is (id, type, data), or None if missing."""

    argv = ("cat-file", "--batch")

    def __init__(self, cwd: str | os.PathLike[str], env: dict[str, str]) -> None:
        self.proc: Any = _process(list(self.argv), cwd, env)

    def __enter__(self) -> CatFile:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            _close(stream)
        if self.proc.wait() != 0 and exc[0] is None:
            raise GitError(list(self.argv), f"exit status {self.proc.returncode}")

    def hand_over(self) -> None:
        """A forked process holds this cat-file's pipes too and asks it from now on (git/waiter.py): close our ends
        and never wait for it (it ends when that process closes them), so leaving the `with` does not block."""
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            _close(stream)
        self.proc.returncode = 0

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

def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPO_VARS}
    env["LC_ALL"] = "C"
    return env


def with_fallback_ident(env: Mapping[str, str]) -> dict[str, str]:
    return {**env, **{k: v for k, v in _FALLBACK_IDENT.items() if not env.get(k)}}


def is_ident_error(stderr: bytes) -> bool:
    text = stderr.decode("utf-8", "replace").lower()
    return any(marker in text for marker in _IDENT_ERRORS)


class Completed(NamedTuple):
    """What subprocess.run would have returned (the fields used here)."""

    returncode: int
    stdout: bytes
    stderr: bytes


def run_git(cwd: str | os.PathLike[str], env: Mapping[str, str], argv: list[str],
            data: bytes | None = None) -> Completed:
    """git ARGV in `cwd`: without the subprocess module (its import costs the hooks ~5 ms) for small input."""
    if hasattr(os, "posix_spawn") and len(data or b"") <= rawgit.SMALL_INPUT:
        started = _spawned(argv, cwd, env)
        if started is not None:
            return Completed(*rawgit.communicate(started, data))
    import subprocess

    proc = subprocess.run(["git", *argv], cwd=cwd, env=env, input=data, capture_output=True)
    return Completed(proc.returncode, proc.stdout, proc.stderr)


def start_git(cwd: str | os.PathLike[str], env: Mapping[str, str], argv: list[str]) -> Any:
    """git ARGV started, not waited for (`rawgit.communicate` finishes it): it works while the caller does."""
    return _process(argv, cwd, env)


def _process(argv: list[str], cwd: str | os.PathLike[str], env: Mapping[str, str]) -> Any:
    """A running git with pipes to stdin, from stdout and stderr (rawgit.Process, else subprocess.Popen)."""
    started = _spawned(argv, cwd, env) if hasattr(os, "posix_spawn") else None
    if started is not None:
        return started
    import subprocess

    return subprocess.Popen(["git", *argv], cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _spawned(argv: list[str], cwd: str | os.PathLike[str], env: Mapping[str, str]) -> rawgit.Process | None:
    """git started with posix_spawn, or None when it cannot be (another directory, no standard streams):
    subprocess starts it then. A missing git raises FileNotFoundError, as subprocess does."""
    try:
        return rawgit.started(argv, env, cwd) or rawgit.Process(argv, env, cwd)
    except FileNotFoundError:
        raise
    except OSError:
        return None


def checked(argv: list[str], proc: Completed) -> str:
    if proc.returncode != 0:
        raise GitError(argv, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout.decode()


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None:
        try:
            stream.close()
        except BrokenPipeError:
            pass


def commit_ids(commits: Iterable[str]) -> list[str]:
    ids = [c.lower() for c in commits]
    bad = [c for c in ids if len(c) not in (40, 64) or not _HEX.issuperset(c)]
    if bad or len({len(c) for c in ids}) > 1:
        raise ValueError(f"full commit ids expected, all of one length: {(bad or ids)[:3]}")
    return ids


def full_ref(ref: str) -> str:
    if not ref.startswith("refs/"):
        raise ValueError(f"a full ref name is expected, like 'refs/notes/shift': {ref!r}")
    return ref


def _is_id(name: str, width: int) -> bool:
    return len(name) == width and _HEX.issuperset(name)


def _is_fanout(name: str, entry: Entry | None) -> bool:
    return entry is not None and entry.kind == "tree" and len(name) == 2 and _HEX.issuperset(name)


def id_width(tip: str | None) -> int:
    return len(tip) if tip else 40


def note_text(commit: str, blob: tuple[str, str, bytes] | None) -> str:
    if blob is None:
        raise GitError(["cat-file", "--batch"], f"the note blob of {commit} is missing")
    return blob[2].decode("utf-8", "replace")


# -- shared with the other hot path, the git hooks (shiftgit.gitview) -------------------------------


def parse_tree(data: bytes, width: int) -> dict[str, Entry]:
    """A tree object's entries (name -> Entry) in a repository of `width`-hex ids."""
    return _parse_tree(data, width // 2)
