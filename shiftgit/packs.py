"""Git packs written by Python: objects as one pack file and its index, not one loose file per object.

`git add` of 1,000 changed files writes 1,000 loose objects: a temporary file, a link and an unlink each, most of
its time. `prepack` writes the blobs of the changed files it is given as one pack (and its `.idx`) into the object
store first, fsynced and renamed into place as git's own packs are; `git add` then finds each object there and
only hashes the file (`TreeBuild`). It is a head start, never the record: git hashes every file itself, with its
filters, and writes loose whatever the pack does not hold (a file a clean filter or end-of-line rule changes, or
one edited meanwhile; its prepacked blob is then an unused object, as any blob `git add` writes and a later add
replaces). `rawgit.pack` builds the packs `unpack-objects` reads with `entry` too.

Stdlib os, zlib and the sha modules only (the commit path imports `entry`).
"""

from __future__ import annotations

import os

from shiftgit import memo, staging
from shiftgit.digests import hasher
from shiftgit.objectdir import object_dir  # apart from this module: objectdir.py says why

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from collections.abc import Iterable

TYPES = {"commit": 1, "tree": 2, "blob": 3}
PACK_MIN = 64  # fewer new files than this: git writes them loose (a pack per small checkpoint would pile packs up;
# each pack costs every object lookup a search until `git gc` joins them)
PACKS_MAX = 50  # git's gc.autoPackLimit: with this many packs in the store a prepack adds none (git writes the blobs
# loose, which `git gc --auto` bounds as well), so checkpoints with no commit between them never pile packs up
FILE_MAX = 1 << 20  # a larger file is left to git (read whole here)
TOTAL_MAX = 32 << 20  # what one prepack reads and holds, at most; the rest is left to git
_SMALL = 2048  # a body under this is deflated with a window its size: zlib's full window costs ~50 us to set up
_STORED = 256  # a body under this is stored, not deflated (`_deflated`)
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK  # never a symlink's target, never blocking on a FIFO


def entry(kind: str, body: bytes) -> bytes:
    """One whole (undeltified) object as a pack holds it: type and size header, then the body as a zlib stream."""
    out = bytearray()
    byte, size = TYPES[kind] << 4 | len(body) & 0x0F, len(body) >> 4
    while size:
        out.append(byte | 0x80)
        byte, size = size & 0x7F, size >> 7
    out.append(byte)
    return bytes(out) + _deflated(body)


def _deflated(body: bytes) -> bytes:
    """BODY as a zlib stream: deflated at level 1, or under _STORED bytes kept as one stored block (deflate saves
    next to nothing there, and setting it up costs ~20 us an object: most of prepacking a thousand small files)."""
    import zlib

    if len(body) < _STORED:
        n = len(body)
        return (b"\x78\x01\x01" + bytes((n & 0xFF, n >> 8, ~n & 0xFF, (~n >> 8) & 0xFF)) + body
                + zlib.adler32(body).to_bytes(4, "big"))
    if len(body) < _SMALL:
        deflate = zlib.compressobj(1, zlib.DEFLATED, max(9, len(body).bit_length()), 4)
        return deflate.compress(body) + deflate.flush()
    return zlib.compress(body, 1)


def pack_bytes(entries: Iterable[bytes], count: int, width: int) -> bytes:
    """A version-2 pack of COUNT ENTRIES (`entry`'s), with its trailing checksum."""
    data = b"".join([b"PACK", (2).to_bytes(4, "big"), count.to_bytes(4, "big"), *entries])
    checksum: bytes = hasher(width, len(data))(data).digest()
    return data + checksum


# The work tree's tree (repo.TreeBuild), built in the private index GIT_INDEX_FILE names: `.shift/` dropped from it
# while `ls-files` lists the changed and new files for the packer (`packer.main`: the arguments, when given): into
# "$GIT_INDEX_FILE.list", the packer started only when that names PACK_MIN files (LISTED bytes: a Python start saved
# at every small checkpoint); or, "early" first (`_large`), piped into the packer started beside it. Then the entries
# the packer knows (shiftgit/staging.py) by `update-index --index-info`, `git add` on the rest of its paths, `git
# write-tree`; else (no such entries, or any of those failed) `git add -A`, `git write-tree`: its tree is the output.
# The listing and the packer's files are removed by TreeBuild.close. Exit 90: DROP failed, 91: ADD failed; else
# write-tree's status. -f: the private copy of the index may hold staged .shift/ bytes that differ from both the
# file and HEAD (dropped here before `add`: rm refuses that without it)
DROP = ("rm", "--cached", "-r", "-q", "-f", "--ignore-unmatch", "--", ":/.shift")
ADD = ("add", "-A", "--", ":/", ":(top,exclude).shift")
LIST = ("ls-files", "-z", "-t", "-m", "-o", "--exclude-standard", "--", ":/", ":(top,exclude).shift")
LISTED = PACK_MIN * 8  # 8 bytes an entry: "C ", a path of 5, the NUL
BUILD = f"""git {" ".join(f"'{a}'" for a in DROP)} &
if [ "$1" = early ]; then
  shift
  {{ git {" ".join(f"'{a}'" for a in LIST)} 2>/dev/null || : >"$GIT_INDEX_FILE{staging.CUT}"; }} | "$@" >/dev/null 2>&1
elif [ $# -gt 0 ]; then
  git {" ".join(f"'{a}'" for a in LIST)} >"$GIT_INDEX_FILE.list" 2>/dev/null || : >"$GIT_INDEX_FILE{staging.CUT}"
  if [ "$(wc -c <"$GIT_INDEX_FILE.list")" -ge {LISTED} ]; then "$@" <"$GIT_INDEX_FILE.list" >/dev/null 2>&1; fi
fi
wait $! || exit 90
i="$GIT_INDEX_FILE"
if [ ! -e "$i{staging.CUT}" ] && [ -s "$i{staging.INFO}" ] &&
  git update-index -z --index-info <"$i{staging.INFO}" 2>/dev/null &&
  {{ [ ! -s "$i{staging.REST}" ] || git --literal-pathspecs add -A --pathspec-file-nul \\
    --pathspec-from-file="$i{staging.REST}" >/dev/null 2>&1; }} && git write-tree 2>/dev/null; then exit 0; fi
git {" ".join(f"'{a}'" for a in ADD)} >/dev/null || exit 91
exec git write-tree
"""
LEFT = (staging.INFO, staging.INFO + ".tmp", staging.REST, staging.ATTRS, staging.CUT)  # the packer's, beside the index
RECORD = "prepacked-v2"  # in <git-dir>/shift/: the files the last prepack found in the store, by their stat


def build_command(root: str, git_dir: str, common_dir: str, width: int) -> list[str]:
    """The `sh` that builds the work tree's tree (BUILD), with the packer when the object store is shiftgit's to
    write (`object_dir`). The packer is a process (`python -S`, stdlib only, ~15 ms to start), not a thread: reading a
    thousand files is thousands of short system calls, and in a thread each must win the interpreter lock back
    while the caller's thread imports its code (150 ms, not 50, so)."""
    import sys

    # sys.path[0] is '' (`-c`: the work tree it starts in, whose own hashlib.py must not run): our package's folder
    code = "import sys; sys.path[0] = sys.argv[1]; from shiftgit.packer import main; main(sys.argv[2:])"
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # where `shiftgit` was imported from
    packer = [sys.executable, "-S", "-c", code, top, root, os.path.join(common_dir, "objects"), str(width),
              os.path.join(git_dir, "shift", RECORD)]
    if not object_dir(common_dir, os.environ):
        return ["sh", "-c", BUILD, "sh"]
    return ["sh", "-c", BUILD, "sh", *(["early"] if _large(git_dir) else []), *packer]


def _large(git_dir: str) -> bool:
    """The last build packed PACK_MIN or more files (RECORD written) and the index is older than that (no commit or
    `git add` since, which would have made most of them unchanged): start the packer beside `ls-files`, its
    listing piped in (its Python start-up then no longer waits for the listing; with a short listing it ends)."""
    try:
        return os.stat(os.path.join(git_dir, "shift", RECORD)).st_mtime_ns > os.stat(
            os.path.join(git_dir, "index")).st_mtime_ns
    except OSError:
        return False


def prepack(root: str, objects: str, paths: Iterable[bytes], width: int, record: str | None = None,
            staged: dict[bytes, tuple[int, str] | None] | None = None) -> set[str]:
    """The blobs of the regular files at PATHS (relative to ROOT) written as one pack into OBJECTS (the object
    directory), when there are PACK_MIN or more; returns their ids. A file that cannot be read, a symlink, a
    directory, one over FILE_MAX: left to git.

    RECORD (a file): the paths whose blobs the last prepack left in the store, with their stat and blob id then. A
    file still so is not read again: `ls-files` lists every file that differs from the index, and the copy of the
    index a build starts from is the real one, which a checkpoint does not refresh (without it, each checkpoint
    would pack again every file changed since the last commit). Its blob ids become index entries (staging.py), so a
    stat is trusted only when older than the record, as git trusts an index entry only when older than the index (a
    file rewritten within the clock's tick of its reading keeps its stat). Lost, it only costs reading them again.

    STAGED, when given, gets path -> (mode, blob id) for each file whose blob is in the store (packed now, or by an
    earlier prepack) and holds no carriage return; path -> None for a path that is gone (see staging.py)."""
    known = _load(record) if record else {}
    read, kept = _read(root, paths, known, staged)
    found: set[str] = set()
    if len(read) < PACK_MIN or _pack_count(objects) >= PACKS_MAX:
        return found
    listed: list[tuple[bytes, int, int]] = []  # (raw id, crc32, offset) of each object in the pack
    parts: list[bytes] = []
    offset = 12
    import zlib

    done: dict[bytes, tuple[int, str]] = {}
    for path, data, stamp, mode in read:
        oid = hasher(width, len(data) + 32)(b"blob %d\0%s" % (len(data), data))
        key = oid.hexdigest()
        plain = b"\r" not in data
        kept[path] = (stamp, key if plain else "")
        if plain:
            done[path] = (mode, key)
        if key in found:
            continue
        found.add(key)
        packed = entry("blob", data)
        listed.append((oid.digest(), zlib.crc32(packed), offset))
        parts.append(packed)
        offset += len(packed)
    pack = pack_bytes(parts, len(listed), width)
    checksum = pack[-(width // 2):]
    _install(objects, pack, _index(listed, checksum, width), checksum)
    if staged is not None:
        staged.update(done)
    if record:
        _save(record, kept)
    return found


def _pack_count(objects: str) -> int:
    try:
        return sum(name.endswith(".pack") for name in os.listdir(os.path.join(objects, "pack")))
    except OSError:
        return 0


def _read(root: str, paths: Iterable[bytes], known: dict[bytes, tuple[bytes, str]],
          staged: dict[bytes, tuple[int, str] | None] | None = None
          ) -> tuple[list[tuple[bytes, bytes, bytes, int]], dict[bytes, tuple[bytes, str]]]:
    """(path, bytes, stat, mode) of each regular file to pack, and path -> (stat, blob id) of those KNOWN still holds
    as it was (those go in STAGED, when given, with the paths that are gone)."""
    import errno
    import stat

    found: list[tuple[bytes, bytes, bytes, int]] = []
    kept: dict[bytes, tuple[bytes, str]] = {}
    total = 0
    top = os.open(root, os.O_RDONLY)
    folders: dict[bytes, bool] = {b"": True}
    try:
        for path in paths:
            if not _real_folders(os.path.dirname(path), top, folders):
                continue  # through a symlinked folder (git takes the path as gone): never read, left to git
            try:
                info = os.stat(path, dir_fd=top, follow_symlinks=False)
            except OSError as exc:
                if staged is not None and exc.errno in (errno.ENOENT, errno.ENOTDIR):
                    staged[path] = None
                continue
            stamp = b"%d:%d:%d:%d" % (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            mode = 0o100755 if info.st_mode & 0o100 else 0o100644
            was = known.get(path)
            if was is not None and was[0] == stamp and stat.S_ISREG(info.st_mode):
                kept[path] = was
                if staged is not None and was[1]:
                    staged[path] = (mode, was[1])
                continue
            if not stat.S_ISREG(info.st_mode) or info.st_size > FILE_MAX or total + info.st_size > TOTAL_MAX:
                continue
            try:
                fd = os.open(path, _OPEN, dir_fd=top)
            except OSError:
                continue
            try:
                data = os.read(fd, info.st_size + 1)  # one more: a file that grew since is left to git
            except OSError:
                continue
            finally:
                os.close(fd)
            if len(data) == info.st_size:
                found.append((path, data, stamp, mode))
                total += len(data)
    finally:
        os.close(top)
    return found, kept


def _real_folders(folder: bytes, top: int, seen: dict[bytes, bool]) -> bool:
    """No part of the path to FOLDER (under TOP) is a symlink: `os.stat` and `open` with no-follow refuse a symlink
    only as the path's last part, and git stops at a symlink anywhere on it. A part that is missing or a file is
    not one (the path's own stat then finds it gone, as git does)."""
    import stat

    known = seen.get(folder)
    if known is None:
        known = _real_folders(os.path.dirname(folder), top, seen)
        if known:
            try:
                known = not stat.S_ISLNK(os.stat(folder, dir_fd=top, follow_symlinks=False).st_mode)
            except OSError:
                pass
        seen[folder] = known
    return known


def _load(record: str) -> dict[bytes, tuple[bytes, str]]:
    """path -> (stat, blob id: "" for a file with a carriage return) of the files whose stat is older than RECORD."""
    try:
        with open(record, "rb") as handle:
            written = os.fstat(handle.fileno()).st_mtime_ns
            fields = handle.read().split(b"\0")
    except OSError:
        return {}
    known = {}
    for at in range(0, len(fields) - 2, 3):
        stamp, oid, path = fields[at:at + 3]
        times = stamp.split(b":")[2:]
        if len(times) == 2 and all(t.isdigit() and int(t) < written for t in times):
            known[path] = (stamp, oid.decode("ascii", "replace"))
    return known


def _save(record: str, kept: dict[bytes, tuple[bytes, str]]) -> None:
    memo.replace(record, b"".join(b"%s\0%s\0%s\0" % (stamp, oid.encode(), path) for path, (stamp, oid) in kept.items()))


def _index(listed: list[tuple[bytes, int, int]], checksum: bytes, width: int) -> bytes:
    """The version-2 `.idx` of a pack under 2 GiB: fan-out, sorted ids, CRCs, offsets, the pack's checksum, its own."""
    listed = sorted(listed)
    fanout = [0] * 256
    for oid, _, _ in listed:
        fanout[oid[0]] += 1
    for i in range(1, 256):
        fanout[i] += fanout[i - 1]
    words = b"".join(n.to_bytes(4, "big") for n in fanout)
    data = b"".join([b"\377tOc", (2).to_bytes(4, "big"), words, *(oid for oid, _, _ in listed),
                     *(crc.to_bytes(4, "big") for _, crc, _ in listed),
                     *(at.to_bytes(4, "big") for _, _, at in listed), checksum])
    own: bytes = hasher(width, len(data))(data).digest()
    return data + own


def _install(objects: str, pack: bytes, index: bytes, checksum: bytes) -> None:
    """The pack, then its index (git reads a pack only once its index is there), each written to a temporary file,
    fsynced and renamed into place: as durable as git's own packs. Named by the pack's checksum, as git names them."""
    folder = os.path.join(objects, "pack")
    os.makedirs(folder, exist_ok=True)
    name = os.path.join(folder, f"pack-{checksum.hex()}")
    for suffix, data in ((".pack", pack), (".idx", index)):
        tmp = os.path.join(folder, f"tmp_shiftgit_{os.getpid()}_{checksum.hex()[:12]}{suffix}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name + suffix)
