"""Whether git's config leaves trailers and comments where git's defaults put them, read from the config files
themselves where they settle it: the commit gate then starts no `git config` (rawgit.TRAILER_CONFIG) for it.

The files are the ones `git config --get-regexp` reads in a repository whose `.git` is a folder at the top of
the work tree: the system file (unless GIT_CONFIG_NOSYSTEM; GIT_CONFIG_SYSTEM, else /etc/gitconfig for a git
built with prefix /usr, as distributions build it), the global ones (GIT_CONFIG_GLOBAL, else ~/.gitconfig and
$XDG_CONFIG_HOME/git/config), `.git/config` and `.git/config.worktree`. None of them mentions `trailer`, `comment`
or `include` (in any case, anywhere: a value, a comment line) means no `trailer.*` or `core.comment*` key is set.
Anything else is not settled here, and git is asked as before: a file that mentions one of them or cannot be read,
config given in the environment (GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT, GIT_CONFIG), GIT_DIR or
GIT_COMMON_DIR set, a linked worktree (`.git` a file), another git build (its system file may be elsewhere).
Stdlib os only (the commit gate).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~4 ms to import
if TYPE_CHECKING:
    from collections.abc import Mapping

WORDS = (b"trailer", b"comment", b"include")  # what could set a trailer.* or core.comment* key, or pull in a file
ENV_CONFIG = ("GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG", "GIT_DIR", "GIT_COMMON_DIR")
# where a git built with prefix /usr runs from (its exec path, which git gives its hooks; else its binary's folder):
# git's Makefile puts that build's system config in /etc
USR = ("/usr/lib/git-core", "/usr/libexec/git-core", "/usr/bin")
TRUE = ("1", "true", "yes", "on")


def plain_in_files(env: Mapping[str, str], top: str) -> bool:
    """True when the config files settle that git's trailer and comment settings are its defaults, for the work
    tree at TOP; False when they do not (ask git)."""
    files = config_files(env, top)
    return files is not None and all(silent(path) for path in files)


def config_files(env: Mapping[str, str], top: str) -> list[str] | None:
    """The config files `git config` reads for the work tree at TOP; None when they are not settled here."""
    if any(env.get(name) for name in ENV_CONFIG) or not os.path.isdir(os.path.join(top, ".git")):
        return None
    files = [os.path.join(top, ".git", "config"), os.path.join(top, ".git", "config.worktree")]  # (read if enabled)
    if env.get("GIT_CONFIG_NOSYSTEM", "").strip().lower() not in TRUE:
        if env.get("GIT_CONFIG_SYSTEM"):
            files.append(env["GIT_CONFIG_SYSTEM"])
        elif (env.get("GIT_EXEC_PATH") or os.path.dirname(_git(env) or "")) in USR:
            files.append("/etc/gitconfig")
        else:
            return None
    if env.get("GIT_CONFIG_GLOBAL"):
        files.append(env["GIT_CONFIG_GLOBAL"])
    else:
        home = env.get("HOME")
        if not home:
            return None
        files.append(os.path.join(home, ".gitconfig"))
        files.append(os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "git", "config"))
    return files


def _git(env: Mapping[str, str]) -> str | None:
    """The `git` the PATH of ENV finds, its symlinks resolved."""
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or ".", "git")
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return os.path.realpath(path)
    return None


def silent(path: str, words: tuple[bytes, ...] = WORDS) -> bool:
    """The file is missing, or readable and never mentions one of WORDS (git/refswap.py asks of its own)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read().lower()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return not any(word in data for word in words)


def plain_trailer_config(env: Mapping[str, str], cwd: str | os.PathLike[str]) -> bool:
    """Whether git's config leaves trailers and comments where git's defaults put them: the config files settle it
    (`plain_in_files`), or the TRAILER_CONFIG query `rawgit.prestart` started found nothing (neither: unknown, so
    no)."""
    from shiftgit.git.rawgit import TRAILER_CONFIG, communicate, started

    query = started(TRAILER_CONFIG, env, cwd)
    if query is None:
        return plain_in_files(env, os.fspath(cwd))
    return communicate(query, None)[0] == 1


def leave(path: str, lines: list[str], plain: bool = False) -> None:
    """The commit gate's trailers at PATH (`<git-dir>/shift/trailers`) for the commit-msg shim of the same `git
    commit`: the parent pid of the gate (then ` plain` when no config moves trailers), then a trailer a line. Written
    over in place (read once this process has exited): ext4 flushes the data of a file truncated to nothing at close
    (~1 ms), and a new file costs an inode (0.02-0.2 ms here). Never through a symlink nor into a file linked
    elsewhere (a `cp -al` copy of the repository), and a leftover it may not write is made anew."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = "".join(f"{line}\n" for line in [f"{os.getppid()}{' plain' if plain else ''}", *lines]).encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except OSError:
        fd = -1
    if fd >= 0 and os.fstat(fd).st_nlink > 1:
        os.close(fd)
        fd = -1
    if fd < 0:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with open(fd, "wb") as out:
        out.write(text)
        out.truncate()
