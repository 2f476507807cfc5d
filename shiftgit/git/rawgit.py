"""Git objects and processes at the byte level, for the commit path: tree bodies, object ids, packs
for `git unpack-objects`, and git processes started with `os.posix_spawnp`.

Imports os, zlib and CPython's own sha modules only: `subprocess` alone (it loads re, locale, signal,
threading, selectors) costs as much as the whole post-commit hook's work, and hashlib loads OpenSSL.
"""

from __future__ import annotations

import os

from shiftgit.digests import blob_id, hasher

TYPE_CHECKING = False  # typing costs ~4 ms to import
if TYPE_CHECKING:
    from collections.abc import Mapping

    from shiftgit.git.spares import Spares

TREE = "40000"  # a subtree's mode, as git stores it
OPEN = ["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", "--show-object-format"]  # Repo.open's

Tree = dict[str, tuple[str, str]]  # name -> (mode as git stores it, object id)


# -- objects ----------------------------------------------------------------------------------------

def parse_tree(data: bytes, width: int) -> Tree:
    """A tree object's entries: name -> (mode, id), in a repository of `width`-hex ids."""
    raw_len, pos = width // 2, 0
    tree: Tree = {}
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        tree[data[space + 1:nul].decode("utf-8", "surrogateescape")] = (
            data[pos:space].decode(), data[nul + 1:nul + 1 + raw_len].hex())
        pos = nul + 1 + raw_len
    return tree


def tree_body(tree: Mapping[str, tuple[str, str]]) -> bytes:
    """A tree object's bytes: entries in git's order, where a subtree sorts as if named "name/"."""
    def raw(name: str) -> bytes:
        return name.encode("utf-8", "surrogateescape")

    def order(name: str) -> bytes:
        return raw(name) + (b"/" if tree[name][0] == TREE else b"")

    return b"".join(b"%s %s\0%s" % (tree[n][0].encode(), raw(n), bytes.fromhex(tree[n][1]))
                    for n in sorted(tree, key=order))


def commit_body(tree: bytes, width: int, parent: str | None, author: bytes, committer: bytes, message: bytes) -> bytes:
    """A commit object's bytes, as `commit-tree` writes them with no signature or encoding: TREE is the tree's body."""
    return commit_object(object_id("tree", tree, width), [parent] if parent else [], author, committer, message)


def commit_object(tree: str, parents: list[str], author: bytes, committer: bytes, message: bytes) -> bytes:
    """A commit object's bytes, as `commit-tree` writes them with no signature or encoding: TREE is the tree's id."""
    return (b"tree %s\n" % tree.encode() + b"".join(b"parent %s\n" % parent.encode() for parent in parents)
            + b"author %s\ncommitter %s\n\n%s" % (author, committer, message))


def object_id(kind: str, body: bytes, width: int) -> str:  # a blob: a ledger's id hashed once (digests.blob_id)
    return blob_id(body, width) if kind == "blob" else _id_of(_framed(kind, body), width)


def _framed(kind: str, body: bytes) -> bytes:
    """An object as git hashes it and stores it loose (deflated): "KIND SIZE\\0" and the body."""
    return b"%s %d\0%s" % (kind.encode(), len(body), body)


def _id_of(framed: bytes, width: int) -> str:
    oid: str = hasher(width, len(framed))(framed).hexdigest()
    return oid


def pack(objects: list[tuple[str, bytes]], width: int) -> bytes:
    """A version-2 pack of whole objects, with its trailing checksum, for `git unpack-objects`."""
    from shiftgit.packs import entry, pack_bytes

    return pack_bytes([entry(kind, body) for kind, body in objects], len(objects), width)


def write_refs(where: list[str], env: Mapping[str, str], objects: list[tuple[str, bytes]],
               swaps: list[tuple[str, str, str | None]], message: str, width: int, common: str | None = None) -> bool:
    """OBJECTS stored (`store_objects`), then every swap (ref, new id, old id; None: the ref must not exist yet)
    made by one `update-ref --stdin`, all or none; False when either failed (a swap lost to another writer, say):
    no ref moved. WHERE: git's leading options (`-C DIR`); COMMON: the repository's common git dir, if known."""
    text = "".join(f"update {ref} {new} {old or '0' * width}\n" for ref, new, old in swaps).encode()
    return (store_objects(where, env, objects, width, common)
            and run([*where, "update-ref", "-m", message, "--stdin"], env, text)[0] == 0)


def store_objects(where: list[str], env: Mapping[str, str], objects: list[tuple[str, bytes]], width: int,
                  common: str | None) -> bool:
    """OBJECTS put into the repository whose common git dir is COMMON: written loose here (`write_loose`), one
    git process less, where shiftgit may write them itself (objectdir.py); else, or when that write fails, by
    one `unpack-objects`. False when that failed."""
    from shiftgit.objectdir import object_dir

    where_to = object_dir(common, env)
    if where_to is not None:
        try:
            write_loose(objects, width, where_to)
            return True
        except OSError:
            pass  # git writes them
    return run([*where, "unpack-objects", "-q"], env, pack(objects, width))[0] == 0


def write_loose(objects: list[tuple[str, bytes]], width: int, object_dir: str, spares: Spares | None = None) -> None:
    """Write objects into `object_dir` as loose objects, as git does without `core.sharedRepository` (deflated at
    git's default level, made read-only, put in place by a hard link that never replaces an object already there,
    by rename where the file system has no hard links; written into SPARES made ahead, git/spares.py, while any is
    left; trees and commits not compressed: `_stored`): what `git unpack-objects` makes of a small pack, without
    starting it. Raises OSError."""
    import zlib

    for kind, body in objects:
        data = _framed(kind, body)
        oid = object_id(kind, body, width)
        folder = os.path.join(object_dir, oid[:2])
        target = os.path.join(folder, oid[2:])
        if os.path.exists(target):
            continue
        os.makedirs(folder, exist_ok=True)
        spare = spares.pop(0o444) if spares else None
        tmp = spare[0] if spare else os.path.join(folder, f"tmp_obj_shiftgit_{os.getpid()}_{oid[2:12]}")
        with open(spare[1] if spare else os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444), "wb") as out:
            out.write(zlib.compress(data, 1) if kind == "blob" else _stored(data))
        try:
            os.link(tmp, target)
        except FileExistsError:
            pass  # written meanwhile: the same bytes under the same id
        except OSError:
            os.rename(tmp, target)
            continue
        os.unlink(tmp)


def _stored(data: bytes) -> bytes:
    """DATA as a zlib stream of stored (not compressed) blocks, which git reads as any other: a tree's ids and a
    commit's few lines barely compress, and zlib's set-up for level 1 (its hash tables: ~70 µs an object here) is
    what post-commit waited for once the commit was made. The smallest window and memory: nothing to look back at."""
    import zlib

    packer = zlib.compressobj(0, zlib.DEFLATED, 9, 1)
    return packer.compress(data) + packer.flush()


def read_loose(object_dir: str, oid: str) -> tuple[str, bytes] | None:
    """A loose object's kind and body; None when it is not there loose (packed, say) or does not check out."""
    import zlib

    try:
        with open(os.path.join(object_dir, oid[:2], oid[2:]), "rb") as src:
            data = zlib.decompress(src.read())
    except (OSError, zlib.error):
        return None
    head, nul, body = data.partition(b"\0")
    kind, _, size = head.partition(b" ")
    if not nul or size != b"%d" % len(body) or _id_of(data, len(oid)) != oid:
        return None
    return kind.decode("ascii", "replace"), body


# -- git processes without the subprocess module ----------------------------------------------------

def spawn(argv: list[str], env: Mapping[str, str], stderr: str, program: str = "git") -> tuple[int, list[int]]:
    """git ARGV (found on `env`'s PATH, as subprocess finds it) with a pipe to its stdin and one from its
    stdout; its stderr goes into a third pipe ("pipe"), into stdout ("stdout") or nowhere ("null").
    Returns (pid, our ends: stdin's, stdout's, and stderr's when piped). `program`: another than git (`sh`)."""
    pipes = [os.pipe() for _ in range(3 if stderr == "pipe" else 2)]
    mine = [pipes[0][1], *(read for read, _ in pipes[1:])]
    theirs = [pipes[0][0], *(write for _, write in pipes[1:])]
    try:
        if min(theirs) <= 2:  # dup2 onto itself would keep close-on-exec
            raise OSError("standard streams closed")
        actions: list[tuple[object, ...]] = [(os.POSIX_SPAWN_DUP2, fd, n) for n, fd in enumerate(theirs)]
        if stderr == "stdout":
            actions.append((os.POSIX_SPAWN_DUP2, theirs[1], 2))
        elif stderr == "null":
            actions.append((os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0))
        pid = os.posix_spawn(_which(program, env), [program, *argv], dict(env), file_actions=actions)
    except BaseException:
        for fd in mine + theirs:
            os.close(fd)
        raise
    for fd in theirs:
        os.close(fd)
    return pid, mine


def run(argv: list[str], env: Mapping[str, str], data: bytes = b"") -> tuple[int, bytes]:
    """git ARGV fed `data`: (exit status, stdout and stderr). For commands that answer in a few lines."""
    pid, (to_git, from_git) = spawn(argv, env, stderr="stdout")
    try:
        with open(to_git, "wb") as stdin:
            stdin.write(data)
    except BrokenPipeError:
        pass
    with open(from_git, "rb") as stdout:
        out = stdout.read()
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), out


PIPE_SAFE = 4096  # request bytes written before their answers are read: a pipe holds at least a page (Linux gives a
# user over its pipe quota one-page pipes; 64 KiB otherwise)


class CatFile:
    """One `git cat-file --batch`: names -> (id, type, data), or None when missing."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.pid, (to_git, from_git) = spawn(["cat-file", "--batch"], env, stderr="null")
        self.stdin, self.stdout = open(to_git, "wb"), open(from_git, "rb")

    def __enter__(self) -> CatFile:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.stdin, self.stdout):
            try:
                stream.close()
            except OSError:
                pass
        os.waitpid(self.pid, 0)

    def get(self, names: list[str]) -> list[tuple[str, str, bytes] | None]:
        """The answers in order. Requests go in chunks of at most PIPE_SAFE bytes, each chunk's answers read before
        the next is written: git answers while it reads, so requests that outgrow the pipe (the gate of a commit
        staging a thousand runs) would leave both sides blocked on a full pipe, git on its answers, we on the rest."""
        answers: list[tuple[str, str, bytes] | None] = []
        start = 0
        while start < len(names):
            end, size = start, 0
            while end < len(names) and (end == start or size + len(names[end]) + 1 <= PIPE_SAFE):
                size += len(names[end]) + 1
                end += 1
            answers += self._get(names[start:end])
            start = end
        return answers

    def _get(self, names: list[str]) -> list[tuple[str, str, bytes] | None]:
        self.stdin.write("".join(f"{name}\n" for name in names).encode("utf-8", "surrogateescape"))
        self.stdin.flush()
        answers: list[tuple[str, str, bytes] | None] = []
        for _ in names:
            header = self.stdout.readline().split()
            if len(header) != 3:
                if header[-1:] not in ([b"missing"], [b"ambiguous"]):
                    raise OSError(f"git cat-file --batch: unexpected answer {b' '.join(header)[:80]!r}")
                answers.append(None)
                continue
            body = self.stdout.read(int(header[2]) + 1)[:-1]
            answers.append((header[0].decode(), header[1].decode(), body))
        return answers


class Process:
    """git ARGV with pipes to its stdin and from its stdout and stderr: what `notestree` asks of subprocess.Popen
    (stdin, stdout, stderr, wait, returncode, pid), started with `os.posix_spawn`, in the current directory only
    (`cwd` elsewhere raises OSError: posix_spawn cannot change it, and `git -C` would change the argv)."""

    def __init__(self, argv: list[str], env: Mapping[str, str], cwd: str | os.PathLike[str] | None = None,
                 stderr: str = "pipe", program: str = "git") -> None:
        if cwd is not None and os.path.abspath(cwd) != os.getcwd():
            raise OSError("posix_spawn cannot change the directory")  # the caller falls back to subprocess
        self.pid, mine = spawn(argv, env, stderr=stderr, program=program)  # "stdout": one pipe, never full while
        # stdout is read
        self.stdin, self.stdout = open(mine[0], "wb"), open(mine[1], "rb")
        self.stderr = open(mine[2] if stderr == "pipe" else os.devnull, "rb")
        self.returncode: int | None = None

    def kill(self) -> None:
        """SIGKILL, as Popen.kill (its number: `signal` imports enum, which `log` does without)."""
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass

    def wait(self) -> int:
        if self.returncode is None:
            try:
                self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            except ChildProcessError:  # SIGCHLD ignored: the status is gone (subprocess says 0 too)
                self.returncode = 0
        return self.returncode


STAGED = ["diff-index", "--cached", "-z", "--no-renames", "HEAD"]  # what a hook's index changes against HEAD
# the config that changes where `git interpret-trailers` puts a trailer (none: exit status 1)
TRAILER_CONFIG = ["config", "--get-regexp", r"^(trailer\.|core\.comment)"]
_READY: dict[tuple[object, ...], Process] = {}


def hook_env(environ: Mapping[str, str]) -> dict[str, str]:
    """A hook's environment for git plumbing: GIT_DIR and GIT_INDEX_FILE stay, git speaks C."""
    env = dict(environ)
    env["LC_ALL"] = "C"
    return env


def prestart(argvs: list[list[str]], env: Mapping[str, str], stderr: str = "pipe",
             program: str = "git") -> list[Process]:
    """Start these git processes now, in the current directory, for `started` to hand out: the commit gate's
    git reads the index while Python imports the gate (the two cores work at once). Returns them."""
    started = []
    for argv in argvs:
        started.append(Process(argv, env, stderr=stderr, program=program))
        _READY[_ready_key(argv, env, os.getcwd())] = started[-1]
    return started


def started(argv: list[str], env: Mapping[str, str], cwd: str | os.PathLike[str]) -> Process | None:
    """The process `prestart` started with this argv, environment and directory (once), else None."""
    return _READY.pop(_ready_key(argv, env, os.path.abspath(cwd)), None) if _READY else None


def _ready_key(argv: list[str], env: Mapping[str, str], cwd: str) -> tuple[object, ...]:
    return (cwd, tuple(argv), tuple(sorted(env.items())))


def _which(name: str, env: Mapping[str, str]) -> str:
    """`name` on the PATH of `env`, as subprocess looks it up."""
    path = env.get("PATH")  # os.get_exec_path's lookup, without the warnings module it imports
    for folder in (os.defpath if path is None else path).split(os.pathsep):
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    raise FileNotFoundError(f"{name} not found on PATH")


SMALL_INPUT = 16384  # written whole before reading: below any pipe buffer, so git never waits on us


def communicate(proc: Process, data: bytes | None) -> tuple[int, bytes, bytes]:
    """Feed a started git at most SMALL_INPUT bytes: (exit status, stdout, stderr). stderr is read after stdout
    ends: for commands whose stderr is a few lines."""
    try:
        if data:
            proc.stdin.write(data)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    with proc.stdout, proc.stderr:
        out = proc.stdout.read()
        err = proc.stderr.read()
    return proc.wait(), out, err
