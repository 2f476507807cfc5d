"""HEAD's commit read from the git dir's files, where git keeps it in the plain layout (a loose ref, packed-refs,
a detached id); anything else (reftable, a symbolic ref chain, a file that does not parse) is left to git.

The agent hooks ask for HEAD at every turn: reading two small files costs a fraction of a `git rev-parse`.
Stdlib only.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~4 ms to import
if TYPE_CHECKING:
    from shiftgit.repo import Repo

ASK_GIT = "ask git"  # the answer when the files do not settle it
_HEX = frozenset("0123456789abcdef")


def head(repo: Repo) -> str | None:
    """HEAD's commit id (None: an unborn branch), as `repo.head()` answers, reading files where it can."""
    found = read_head(str(repo.git_dir), str(repo.common_dir))
    return repo.head() if found == ASK_GIT else found


def read_head(git_dir: str, common_dir: str) -> str | None:
    """HEAD's id, None for an unborn branch, or ASK_GIT."""
    text = _read(os.path.join(git_dir, "HEAD"))
    if text is None or text == ASK_GIT:
        return ASK_GIT
    if _is_id(text):
        return text  # detached
    if not text.startswith("ref: refs/heads/") or text.endswith("/.invalid") or "/." in text or ".." in text:
        return ASK_GIT  # reftable's placeholder, or not a plain branch name
    return read_ref(common_dir, text[len("ref: "):])


def read_ref(common_dir: str, ref: str) -> str | None:
    """REF's id (a loose ref file, else its line in packed-refs), None when it does not exist, or ASK_GIT."""
    if os.path.exists(os.path.join(common_dir, "reftable")):
        return ASK_GIT
    loose = _read(os.path.join(common_dir, *ref.split("/")))
    if loose is not None:
        return loose if _is_id(loose) else ASK_GIT
    return _packed(common_dir, ref)


def _packed(common_dir: str, ref: str) -> str | None:
    data = _read(os.path.join(common_dir, "packed-refs"), whole=True)
    if data is None or data == ASK_GIT:
        return data  # no packed refs and no loose ref: an unborn branch
    for line in data.split("\n"):
        found, _, name = line.partition(" ")
        if name == ref and not found.startswith(("#", "^")):
            return found if _is_id(found) else ASK_GIT
    return None


def _read(path: str, whole: bool = False) -> str | None:
    """The file's text stripped; None when it does not exist; ASK_GIT when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return (handle.read() if whole else handle.read(4096)).decode("utf-8", "surrogateescape").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:  # a directory, no permission
        return ASK_GIT


def _is_id(text: str) -> bool:
    return len(text) in (40, 64) and set(text) <= _HEX


def read_refs(common_dir: str, prefixes: tuple[str, ...]) -> dict[str, str] | str:
    """Every ref under PREFIXES (each ending in "/") and its id, from packed-refs and the loose files (a loose one
    wins), as `for-each-ref` lists them; ASK_GIT when the files do not settle it (reftable, a ref that is no id)."""
    if os.path.exists(os.path.join(common_dir, "reftable")):
        return ASK_GIT
    packed = _read(os.path.join(common_dir, "packed-refs"), whole=True)
    if packed == ASK_GIT:
        return ASK_GIT
    found: dict[str, str] = {}
    for line in (packed or "").split("\n"):
        value, _, name = line.partition(" ")
        if name.startswith(prefixes) and not value.startswith(("#", "^")):
            if not _is_id(value):
                return ASK_GIT
            found[name] = value
    for prefix in prefixes:
        top = os.path.join(common_dir, *prefix.strip("/").split("/"))
        for folder, _, files in os.walk(top):
            for name in files:
                if name.endswith(".lock") or name.startswith("."):  # git's own lock files: no refs
                    continue
                path = os.path.join(folder, name)
                text = _read(path)
                if text is None:  # deleted meanwhile
                    continue
                if not _is_id(text):
                    return ASK_GIT
                found[os.path.relpath(path, common_dir).replace(os.sep, "/")] = text
    return found


def head_and_branch(git_dir: str, common_dir: str) -> tuple[str | None, str | None] | str:
    """HEAD's commit id (None: unborn) and its branch's short name (None: detached), as `git rev-parse HEAD^{commit}
    --abbrev-ref HEAD` gives them; ASK_GIT when the files do not settle it, or when another ref could make git
    spell the branch longer (a tag or remote of the same name: `heads/<name>`)."""
    text = _read(os.path.join(git_dir, "HEAD"))
    if text is None or text == ASK_GIT:
        return ASK_GIT
    if _is_id(text):
        return text, None  # detached
    if not text.startswith("ref: refs/heads/") or text.endswith("/.invalid") or "/." in text or ".." in text:
        return ASK_GIT  # as read_head
    found = read_ref(common_dir, text[len("ref: "):])
    if found == ASK_GIT:
        return ASK_GIT
    name = text[len("ref: refs/heads/"):]
    packed = _read(os.path.join(common_dir, "packed-refs"), whole=True)  # read once for the four shadows below
    if packed == ASK_GIT:
        return ASK_GIT
    listed = {line.partition(" ")[2] for line in (packed or "").split("\n") if not line.startswith(("#", "^"))}
    for shadow in (name, f"refs/{name}", f"refs/tags/{name}", f"refs/remotes/{name}", f"refs/remotes/{name}/HEAD"):
        if any(os.path.lexists(os.path.join(top, *shadow.split("/"))) for top in (git_dir, common_dir)):
            return ASK_GIT
        if shadow.startswith("refs/") and shadow in listed:
            return ASK_GIT
    return found, name
