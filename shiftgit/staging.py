"""The index entries of the changed files the packer has just hashed, so the build need not run `git add` on them.

`git add -A` of 1,000 changed files stats, reads and hashes each again after the packer did (packs.py), most of
the build's time once the blobs are packed. When the packer knows, for a listed path, the blob `git add` would
store and the mode it would give it, the build hands that entry to `git update-index --index-info` instead
(a removed file: its removal), and `git add` runs only on the paths it does not know (`--literal-pathspecs`).

The packer knows a path's entry only when git would store the file's bytes as they are, and in the mode its
stat says:
- no `filter`, `ident` or `working-tree-encoding` attribute applies to the path (`git check-attr`, which reads
  every attributes file `git add` reads, the same way);
- no carriage return in the bytes (end-of-line rules, `core.autocrlf`, change only those);
- `core.filemode` and `core.symlinks` are unset or spelled true (false, which git also reads in `0x0` or `00k`,
  makes git keep modes from the index), `core.safecrlf` is unset, false or `warn` (true makes `git add` refuse
  a file it would convert on checkout), and `core.ignorecase`, `core.precomposeunicode` and
  `core.sparsecheckout` are unset or false (git then matches names its own way, or leaves paths out of the
  index and refuses to add them);
- no `.gitmodules` at the top (`git add -A` looks into each submodule, and fails on a broken one);
- a regular file, each folder on its path a real folder (a symlink, a directory, a nested repository, a path
  through a symlinked folder, which git takes as gone: git's to add);
- `ls-files` listed every path it should (a listing cut short by a failure is not the whole change).
Anything else, or any surprise (a `git` that fails, an entry `update-index` refuses, an object `write-tree`
cannot find), and the build runs `git add -A` over everything as it did before: the tree is always git's.

Stdlib os only (the packer is `python -S`); the two git processes are spawned while the packer reads files.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

ATTRIBUTES = (b"filter", b"ident", b"working-tree-encoding")
CONFIG = "^core\\.(filemode|symlinks|safecrlf|ignorecase|precomposeunicode|sparsecheckout)$"
FALSE = (b"false", b"no", b"off", b"0", b"")
TRUE = (b"true", b"yes", b"on", b"1")  # as spelled: git also reads any nonzero number as true, and 00 as false
# Beside the private index: the entries, the paths left to `git add`, what check-attr said, and (CUT) that
# `ls-files` failed
INFO, REST, ATTRS, CUT = ".info", ".rest", ".attrs", ".cut"


class Survey:
    """`git check-attr` over PATHS and `git config` for the settings above, started now, read by `allowed`."""

    def __init__(self, root: str, paths: Iterable[bytes]) -> None:
        self.root = root
        self.attrs = os.environ.get("GIT_INDEX_FILE", "") + ATTRS
        self.pids: list[int] = []
        self.config_read = -1
        reading, writing = os.pipe()
        config_read, config_write = os.pipe()
        try:
            self.pids.append(_spawn(["git", "check-attr", "-z", "--stdin", *(a.decode() for a in ATTRIBUTES)],
                                    root, reading, self.attrs))
            self.pids.append(_spawn(["git", "config", "-z", "--get-regexp", CONFIG], root, None, None, config_write))
        finally:
            os.close(reading)
            os.close(config_write)
            self.config_read = config_read
        try:
            data = b"".join(path + b"\0" for path in paths)
            view = memoryview(data)
            while view:
                view = view[os.write(writing, view):]
        finally:
            os.close(writing)

    def allowed(self) -> set[bytes] | None:
        """The paths no attribute above applies to; None when the config (or a git that failed) rules all out."""
        try:
            config = b""
            while chunk := os.read(self.config_read, 1 << 16):
                config += chunk
        finally:
            os.close(self.config_read)
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in self.pids]
        try:
            with open(self.attrs, "rb") as handle:
                fields = handle.read().split(b"\0")
        except OSError:
            return None
        finally:
            _remove(self.attrs)
        if codes[0] != 0 or codes[1] not in (0, 1) or not _config_allows(config):
            return None
        ruled_out = {fields[i] for i in range(0, len(fields) - 2, 3) if fields[i + 2] not in (b"unspecified", b"unset")}
        return {fields[i] for i in range(0, len(fields) - 2, 3)} - ruled_out


def _config_allows(config: bytes) -> bool:
    """`git config -z --get-regexp` output: the last value of each key (a key without `=` is true)."""
    values: dict[bytes, bytes] = {}
    for item in config.split(b"\0"):
        if item:
            key, sep, value = item.partition(b"\n")
            values[key.lower()] = value.strip().lower() if sep else b"true"
    return (values.get(b"core.filemode", b"true") in TRUE and values.get(b"core.symlinks", b"true") in TRUE
            and values.get(b"core.safecrlf", b"false") in (*FALSE, b"warn")
            and all(values.get(key, b"false") in FALSE
                    for key in (b"core.ignorecase", b"core.precomposeunicode", b"core.sparsecheckout")))


def _spawn(argv: list[str], cwd: str, stdin: int | None, stdout: str | None, stdout_fd: int | None = None) -> int:
    actions: list[tuple[object, ...]] = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)] if stdin is None else [
        (os.POSIX_SPAWN_DUP2, stdin, 0)]
    if stdout is not None:
        actions.append((os.POSIX_SPAWN_OPEN, 1, stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    else:
        actions.append((os.POSIX_SPAWN_DUP2, stdout_fd, 1))
    actions.append((os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0))
    env = dict(os.environ)
    if os.getcwd() != os.path.realpath(cwd):
        argv = [argv[0], "-C", cwd, *argv[1:]]
    return os.posix_spawnp(argv[0], argv, env, file_actions=actions)


def write(index: str, entries: dict[bytes, tuple[int, str]], removed: Iterable[bytes], rest: Iterable[bytes]) -> None:
    """The entries for `update-index -z --index-info` (removals first: a file may replace a removed folder's
    files), and the paths left to `git add`, beside INDEX. The build reads them only when INFO holds something."""
    null = b"0" * len(next(iter(entries.values()))[1]) if entries else b"0" * 40
    lines = [b"0 %s\t%s\0" % (null, path) for path in removed]
    lines += [b"%o %s\t%s\0" % (mode, oid.encode(), path) for path, (mode, oid) in entries.items()]
    with open(index + REST, "wb") as handle:
        handle.write(b"".join(path + b"\0" for path in rest))
    with open(index + INFO + ".tmp", "wb") as handle:  # renamed whole into place: never a cut entry for update-index
        handle.write(b"".join(lines))
    os.replace(index + INFO + ".tmp", index + INFO)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
