"""Files kept on a `refs/shift/...` ref as a chain of commits: one commit per save, parent the previous.

Used for a run's compacted conversation (`refs/shift/context/<run>`, the tree replaced at each save)
and for kept check outputs (`refs/shift/outputs/<run>`, each save adds a file to the previous tree).
Nothing here touches HEAD, the index or the working tree. The ref moves compare-and-swap: a concurrent
save (another worktree, `sync`) makes this one start again from the new tip instead of losing either.
`sync` carries every `refs/shift/` ref. A save with a `Writer` (`writer`: one `git var -l`, which a caller
runs beside other work) builds the blob, tree and commit itself, writes them loose (or with one
`unpack-objects`: rawgit.store_objects) and moves the ref as git's files backend does, lock file and rename
(`_swap_in_files`; one `update-ref` where a setting asks git for more): no git process beyond `git var`, where
`hash-object`, `mktree`, `commit-tree` and `update-ref` are four (an agent's pre-compact hook waits for this
save; `file_id` reads the tip it compares with from the files too). Without a writer (the user
signs commits, sets a commit encoding or has no explicit identity: `commit-tree` knows what to do then),
or when that way fails or loses the swap, the plain plumbing does it. (Not `git fast-import`: measured
here, one fast-import writing a pack costs more than the four small commands.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

from shiftgit.errors import GitError
from shiftgit.git import headref, rawgit
from shiftgit.objectdir import OBJECT_VARS
from shiftgit.repo import Repo, clean_env

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from shiftgit.tuples import NamedTuple

RETRIES = 20
# settings under which git's update-ref does more than write a loose ref file (hooks elsewhere, reftable, shared
# permissions, fsync): `_swap_in_files` leaves the move to git then
REFS_ASIDE = ("core.hookspath", "extensions.refstorage", "core.sharedrepository", "core.fsync",
              "core.fsyncobjectfiles", "core.fsyncmethod")


class Saved(NamedTuple):
    commit: str
    blobs: dict[str, str]  # file name -> blob id


class Tip(NamedTuple):
    """A ref's commit, that commit's message, and one file of its tree (None for what is missing)."""

    commit: str | None
    message: str | None
    file: bytes | None
    author: str | None = None  # the commit's author line: "Name <email> 1700000000 +0000"


class Writer(NamedTuple):
    """What a commit needs besides its tree, parent and message, as `commit-tree` would write it now."""

    author: bytes  # "Name <email> 1700000000 +0000"
    committer: bytes
    width: int  # 40 (sha1) or 64 (sha256) hex digits per object id
    plain_refs: bool = False  # no setting that asks git for more than a loose ref file (`_swap_in_files`)


def writer(repo: Repo) -> Writer | None:
    """The author and committer lines and the id width, from one `git var -l` (config and identities); None when
    `commit-tree` must write the commit: the user signs commits (`user.signingkey`, as `Repo.signs`), sets
    `i18n.commitEncoding`, or has no explicit name and email (git would ask, `identity_env` falls back)."""
    return ask_writer(repo)()


def ask_writer(repo: Repo) -> Callable[[], Writer | None]:
    """`writer`, its `git var -l` started now and read when the returned function is called (a caller's thread
    starts it first: its other git process and the caller's own work then run beside it)."""
    try:
        pid, (to_git, from_git) = rawgit.spawn(["-C", str(repo.root), "var", "-l"], clean_env(), stderr="null")
    except OSError:
        return lambda: None
    os.close(to_git)

    def answer() -> Writer | None:
        with open(from_git, "rb") as stdout:
            out = stdout.read()
        if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
            return None
        return _writer(out)

    return answer


def _writer(out: bytes) -> Writer | None:
    values: dict[str, str] = {}
    for line in out.decode("utf-8", "surrogateescape").split("\n"):
        key, sep, value = line.partition("=")
        if sep:
            values[key.lower() if "." in key else key] = value  # config keys: section and name are case-blind
    if values.get("user.signingkey", "").strip() or "i18n.commitencoding" in values:
        return None
    for who in ("author", "committer"):
        for part in ("name", "email"):
            if not (os.environ.get(f"GIT_{who.upper()}_{part.upper()}") or values.get(f"{who}.{part}")
                    or values.get(f"user.{part}")):
                return None
    author, committer = values.get("GIT_AUTHOR_IDENT"), values.get("GIT_COMMITTER_IDENT")
    if not author or not committer:
        return None
    width = 64 if values.get("extensions.objectformat", "").strip().lower() == "sha256" else 40
    logs_all = values.get("core.logallrefupdates", "").strip().lower() == "always"
    plain = not logs_all and not any(key in values for key in REFS_ASIDE)
    return Writer(author.encode("utf-8", "surrogateescape"), committer.encode("utf-8", "surrogateescape"), width,
                  plain)


def tip(repo: Repo, ref: str, name: str) -> Tip:
    """The ref's commit, its message and the bytes of file `name` in it, in one git process."""
    from shiftgit.git.notestree import CatFile  # a context save reads the tip from files (`file_id`) first

    with CatFile(repo.root, clean_env()) as cat:
        commit, found = cat.get([ref, f"{ref}:{name}"])
    if commit is None or commit[1] != "commit":
        return Tip(None, None, None)
    header, _, body = commit[2].partition(b"\n\n")
    message = body.decode("utf-8", "replace")
    author = next((line[7:].decode("utf-8", "replace") for line in header.split(b"\n") if line.startswith(b"author ")),
                  None)
    return Tip(commit[0], message, found[2] if found else None, author)


def file_id(repo: Repo, ref: str, name: str, width: int) -> tuple[str | None, str | None] | None:
    """The ref's commit and the id of file `name` in its tree (None for what is missing), read from the git dir's
    files (git/headref.py; the commit and tree as loose objects, as `save` writes them) without a git process;
    None when the files do not settle it (reftable, packed objects, objects elsewhere): `tip` asks git then."""
    common = str(repo.common_dir)
    commit = headref.read_ref(common, ref)
    if commit is None:
        return None, None
    if commit == headref.ASK_GIT or len(commit) != width or any(os.environ.get(v) for v in OBJECT_VARS):
        return None
    objects = os.path.join(common, "objects")
    found = rawgit.read_loose(objects, commit)
    if found is None or found[0] != "commit" or not found[1].startswith(b"tree "):
        return None
    tree = rawgit.read_loose(objects, found[1][5:5 + width].decode("ascii", "replace"))
    if tree is None or tree[0] != "tree":
        return None
    try:
        entry = rawgit.parse_tree(tree[1], width).get(name)
    except ValueError:
        return None
    return commit, entry[1] if entry is not None and entry[0] == "100644" else None


def read(repo: Repo, ref: str, name: str) -> bytes | None:
    """The bytes of file `name` in the tip of `ref`; None when there is no such ref or file."""
    return tip(repo, ref, name).file


def save(repo: Repo, ref: str, files: Mapping[str, bytes], message: str, *, carry: bool = False,
         previous: str | None = None, by: Writer | None = None) -> Saved:
    """A commit whose tree holds `files` (plus the previous tree's other files when `carry`), on `ref`,
    its parent the ref's tip: `previous` when the caller just read it ("" for no ref yet), else read here.
    `by`: write the objects directly (`writer`); the plain plumbing when that fails."""
    if by is not None and not carry and previous is not None:
        saved = _direct(repo, ref, files, message, previous, by)
        if saved is not None:
            return saved
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


def _direct(repo: Repo, ref: str, files: Mapping[str, bytes], message: str, previous: str,
            by: Writer) -> Saved | None:
    """Blobs, tree and commit in one `unpack-objects`, the ref moved by one `update-ref` (compare-and-swap
    against `previous`); None when either fails (another save won the swap, say): nothing was moved."""
    if previous and len(previous) != by.width:
        return None
    blobs = {name: rawgit.object_id("blob", data, by.width) for name, data in files.items()}
    tree = rawgit.tree_body({name: ("100644", oid) for name, oid in blobs.items()})
    text = message if message.endswith("\n") else message + "\n"  # as `commit-tree -m` completes the line
    objects = [*(("blob", data) for data in files.values()), ("tree", tree)]
    oid = commit_directly(repo, by, ref, objects, rawgit.object_id("tree", tree, by.width),
                          [previous] if previous else [], text.encode(), previous, message.split("\n", 1)[0],
                          in_files=True)
    return Saved(oid, blobs) if oid is not None else None


def commit_directly(repo: Repo, by: Writer, ref: str, objects: list[tuple[str, bytes]], tree: str,
                    parents: list[str], message: bytes, old: str | None, reflog: str,
                    in_files: bool = False) -> str | None:
    """The commit of `tree` with `parents` and `message` by `by`, written with OBJECTS (what the tree needs that
    the repository may lack; loose, or by one `unpack-objects`: rawgit.store_objects), put on `ref` by one
    `update-ref` compare-and-swap against `old` ("" or None: the ref must not exist yet): its id, or None when
    either failed (another writer won the swap, say) and nothing was moved; the caller then uses the plumbing.
    `in_files`: the ref moved without `update-ref` where the files allow (`_swap_in_files`; no reflog entry: a
    `refs/shift/` ref has none unless core.logAllRefUpdates is `always` or its log exists)."""
    body = rawgit.commit_object(tree, parents, by.author, by.committer, message)
    commit = rawgit.object_id("commit", body, by.width)
    where, env, common = ["-C", str(repo.root)], clean_env(), str(repo.common_dir)
    try:
        moved = _swap_in_files(common, ref, commit, old) if in_files and by.plain_refs and rawgit.store_objects(
            where, env, [*objects, ("commit", body)], by.width, common) else None
        if moved is None:
            moved = rawgit.write_refs(where, env, [*objects, ("commit", body)], [(ref, commit, old)], reflog,
                                      by.width, common)
    except OSError:
        return None
    return commit if moved else None


def _swap_in_files(common: str, ref: str, new: str, old: str | None) -> bool | None:
    """`update-ref REF NEW OLD` as git's files backend does it, without the git process: the lock file
    `REF.lock` (O_EXCL: git's own writers and this one exclude each other), the value checked under it (a loose
    ref, else packed-refs), the new one written and renamed into place. False when another writer holds the lock
    or moved the ref; None when the files cannot settle it (reftable, a reflog to append to, a
    reference-transaction hook, a path in the way): git's update-ref does it then."""
    path = os.path.join(common, *ref.split("/"))
    if any(os.path.exists(os.path.join(common, *parts)) for parts in (("hooks", "reference-transaction"),
                                                                       ("logs", *ref.split("/")), ("reftable",))):
        return None
    lock = path + ".lock"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return False
    except OSError:
        return None
    ours = True  # the lock file is this writer's until it is renamed into place: after that, never unlinked
    try:
        current = headref.read_ref(common, ref)
        if current == headref.ASK_GIT:
            return None
        if current != (old or None):
            return False
        os.write(fd, f"{new}\n".encode())
        os.close(fd)
        fd = -1
        os.rename(lock, path)
        ours = False
        return True
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
        if ours:  # (a lock seen after the rename would be the next writer's)
            try:
                os.unlink(lock)
            except FileNotFoundError:
                pass


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
