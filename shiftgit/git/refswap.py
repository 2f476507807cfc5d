"""Several refs moved at once as git's files backend moves them, without starting `git update-ref`.

The handoff note of a checkpointed commit moves two notes refs in one compare-and-swap (git/quicknote.py). A
`git update-ref --stdin` for that costs a git start-up (~1.5 ms of CPU, beside the hook's own work on a 2-core
machine). Here: each ref's lock file `REF.lock` taken (O_EXCL, or a hard link to a file made ahead, which fails
alike: git's writers and this one exclude each other),
every value checked under the locks (a loose ref, else packed-refs), the new ids written into the locks, one line
appended to each ref's reflog (as git's files backend writes it: `OLD NEW IDENT\\tMESSAGE`), then each lock renamed
into place; refs are locked and moved in sorted order, as git orders a transaction.

Only where the files settle that this is all git would do (`in_files`): no reftable, no reference-transaction
hook, a reflog already there for each ref (whether git creates a missing one depends on its config), and no
config file that mentions what could make git do more (a hooks path elsewhere, shared permissions, fsync, another
ref storage, an included file) or config given in the environment (git/trailerconf.py reads the same files).
Anywhere else `update-ref` does it. Stdlib os only (the commit path).
"""

from __future__ import annotations

import os

from shiftgit.git import headref, trailerconf

TYPE_CHECKING = False  # typing costs ~4 ms to import
if TYPE_CHECKING:
    from collections.abc import Mapping

    from shiftgit.git.spares import Spares

# in a config file, what could make git's update-ref do more than the files below (or pull in another file)
ASIDE = (b"hookspath", b"refstorage", b"sharedrepository", b"fsync", b"include")


def common_dir(gitdir: str | None) -> str | None:
    """The common git dir of the worktree whose git dir is GITDIR (a linked worktree's refs and objects are the main
    one's), or None (not known: no git dir, a `commondir` file that cannot be read)."""
    if gitdir is None:
        return None
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as src:
            return os.path.join(gitdir, src.read().strip())
    except FileNotFoundError:
        return gitdir
    except (OSError, UnicodeError):
        return None


def in_files(common: str, refs: list[str], env: Mapping[str, str], top: str) -> bool:
    """Whether `swap` may move REFS in the repository whose common git dir is COMMON (work tree at TOP)."""
    files = trailerconf.config_files(env, top)
    if files is None or any(not trailerconf.silent(path, ASIDE) for path in files):
        return False
    if any(os.path.exists(os.path.join(common, name)) for name in ("reftable", os.path.join("hooks",
                                                                                          "reference-transaction"))):
        return False
    return all(os.path.isfile(os.path.join(common, "logs", *ref.split("/"))) for ref in refs)


def swap(common: str, swaps: list[tuple[str, str, str | None]], ident: bytes, message: str,
         spares: Spares | None = None) -> bool | None:
    """Move each (ref, new id, old id) all or none: True when moved; False when a lock is held or a ref is not at
    its old id (nothing moved); None when the files could not settle it (nothing moved, unless a rename failed
    after another ref was moved). IDENT: "Name <email> 1700000000 +0000" for the reflog lines. SPARES: files made
    ahead (git/spares.py) the locks are taken with, while any is left."""
    import _signal  # built in (the `signal` module would load enum: ~1.5 ms on the commit path)

    # git's lockfile code removes its locks on SIGTERM, SIGHUP, SIGINT and SIGPIPE; a Python `finally` does not run
    # under those signals' default action: they wait until the locks are renamed or removed
    cleaned_up = {_signal.SIGHUP, _signal.SIGINT, _signal.SIGPIPE, _signal.SIGTERM}  # as git's sigchain's
    blocked = _signal.pthread_sigmask(_signal.SIG_BLOCK, cleaned_up)
    try:
        return _swap(common, swaps, ident, message, spares)
    finally:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, blocked)


def _swap(common: str, swaps: list[tuple[str, str, str | None]], ident: bytes, message: str,
          spares: Spares | None) -> bool | None:
    held: list[tuple[str, int]] = []  # (ref's path, its lock's fd; -1 once closed), in sorted order
    logs: list[int] = []
    moved = 0  # locks renamed into place: never unlinked after (a lock seen then would be the next writer's)
    ordered = sorted(swaps)
    try:
        for ref, _, _ in ordered:
            path = os.path.join(common, *ref.split("/"))
            try:
                fd = spares.take(f"{path}.lock", 0o666) if spares else None
                held.append((path, os.open(f"{path}.lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                             if fd is None else fd))
            except FileExistsError:
                return False
        values = [headref.read_ref(common, ref) for ref, _, _ in ordered]
        if headref.ASK_GIT in values:
            return None
        if any(value != (old or None) for value, (_, _, old) in zip(values, ordered, strict=True)):
            return False
        for i, ((path, fd), (ref, new, _)) in enumerate(zip(held, ordered, strict=True)):
            os.write(fd, f"{new}\n".encode())
            os.close(fd)
            held[i] = (path, -1)
            logs.append(os.open(os.path.join(common, "logs", *ref.split("/")), os.O_WRONLY | os.O_APPEND))
        for (path, _), log, (_, new, old) in zip(held, logs, ordered, strict=True):
            size = os.fstat(log).st_size
            os.write(log, f"{old or '0' * len(new)} {new} ".encode() + ident + f"\t{message}\n".encode())
            try:
                os.rename(f"{path}.lock", path)
            except OSError:
                os.ftruncate(log, size)  # the line of a move not made: the caller's update-ref writes its own
                raise
            moved += 1
        return True
    except OSError:
        return None
    finally:
        for fd in logs:
            os.close(fd)
        for path, fd in held[moved:]:
            if fd >= 0:
                os.close(fd)
            try:
                os.unlink(f"{path}.lock")
            except FileNotFoundError:
                pass

