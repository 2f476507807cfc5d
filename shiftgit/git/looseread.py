"""Objects read from the repository's loose files, as `git cat-file --batch` answers for them; cat-file only for the
rest (a packed object, a ref the files do not settle), started the first time it is needed.

A checkpointed commit reads a few dozen objects, nearly all loose: the ledger blobs `git add` wrote, HEAD (the last
commit) and its trees, the ledger ref's commit the checkpoint wrote, the notes commits and trees the last commit's
post-commit wrote, and the new commit. Reading them here saves the commit gate a cat-file start-up (~1 ms) and its
round trips. Names answered here: a full object id, `HEAD`, a full ref name (`refs/...`), each optionally followed by
`^` (the first parent) and then by `^{tree}` or `:PATH`, and `:PATH` (the index) where the caller gave `staged`, what
diff-index says the index changes against HEAD (any other path is HEAD's). Anything else, or an object that is not
loose here, is asked of cat-file, whose answer stands. Loose objects are checked against their ids (rawgit.read_loose).
Stdlib os only (the commit path).
"""

from __future__ import annotations

import os

from shiftgit.digests import remember
from shiftgit.git import headref, refswap
from shiftgit.git.rawgit import parse_tree, read_loose

TYPE_CHECKING = False  # typing costs ~4 ms to import
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from shiftgit.git.notestree import CatFile

    Answer = tuple[str, str, bytes] | None

# where git would look for the repository or its objects elsewhere than the git dir's files: cat-file reads all
ELSEWHERE = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES")
_ASK = "ask cat-file"
_MISSING = "missing"  # no such ref: cat-file would answer "missing"
_HEX = frozenset("0123456789abcdef")


def for_hook(root: str, git_dir: str, environ: Mapping[str, str], env: Mapping[str, str]) -> Loose | None:
    """The reader a git hook at the top of the work tree ROOT uses (its cat-file runs with ENV), or None where git
    finds the repository another way (ENVIRON names it): cat-file reads everything then."""
    common = refswap.common_dir(git_dir)
    if common is None or any(environ.get(name) for name in ELSEWHERE) or _replaced(common):
        return None
    return Loose(git_dir, common, lambda: _cat_file(root, env))


def _cat_file(root: str, env: Mapping[str, str]) -> CatFile:
    from shiftgit.git.notestree import CatFile  # only where a loose file does not answer: not imported by the gate

    return CatFile(root, dict(env))


def _replaced(common: str) -> bool:
    """Objects git may read as others (`git replace` refs, the old grafts file): diff-index sees HEAD through them,
    a loose read of HEAD's own tree would not (what the hook answers for an unlisted `:path`)."""
    return bool(headref.read_refs(common, ("refs/replace/",))) or os.path.exists(os.path.join(common, "info", "grafts"))


class Loose:
    """`get(names)` as CatFile answers it; `start` makes the cat-file (notestree.CatFile) when one is needed."""

    def __init__(self, git_dir: str, common_dir: str, start: Callable[[], Any]) -> None:
        self.git_dir, self.common_dir, self.objects = git_dir, common_dir, os.path.join(common_dir, "objects")
        self.start = start
        self.started: Any = None
        self.staged: Mapping[str, str | None] | None = None  # path -> staged blob id (None: deleted) where it differs
        self.read: dict[str, tuple[str, bytes] | None] = {}  # oid -> what read_loose answered (objects never change)
        self.trees: dict[str, dict[str, tuple[str, str]]] = {}  # oid -> its entries, parsed once (`_walk`)

    def __enter__(self) -> Loose:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.started is not None:
            self.started.__exit__(*exc)

    @property
    def cat(self) -> Any:
        if self.started is None:
            self.started = self.start()
        return self.started

    def hand_over(self) -> None:
        """A forked child asks the cat-file started so far from now on (notestree.CatFile.hand_over)."""
        if self.started is not None:
            self.started.hand_over()

    def get(self, names: list[str]) -> list[Answer]:
        answers: list[Any] = [self._local(name) for name in names]
        asked = [i for i, answer in enumerate(answers) if answer is _ASK]
        for i, answer in zip(asked, self.cat.get([names[i] for i in asked]) if asked else [], strict=True):
            answers[i] = answer
        return answers

    def is_loose(self, oid: str) -> bool:
        return os.path.exists(os.path.join(self.objects, oid[:2], oid[2:]))

    def _local(self, name: str) -> Any:
        try:
            if name.endswith("^{tree}"):
                return self._object(self._tree_of(self._rev(name[:-len("^{tree}")])))
            rev, colon, path = name.partition(":")
            if not colon:
                return self._object(self._rev(rev))
            if not rev:  # the index: the staged blob where diff-index named the path, HEAD's everywhere else
                if self.staged is None:
                    return _ASK
                if path in self.staged:
                    blob = self.staged[path]
                    return self._object(blob) if blob else None
                rev = "HEAD"
            return self._walk(self._tree_of(self._rev(rev)), path)
        except (ValueError, IndexError, UnicodeError):  # a body that does not parse: cat-file says what it is
            return _ASK

    def _rev(self, rev: str) -> str:
        """The id REV names, or _ASK."""
        parents = len(rev) - len(rev.rstrip("^"))
        rev = rev[:len(rev) - parents]
        if rev == "HEAD":
            oid = headref.read_head(self.git_dir, self.common_dir)
        elif rev.startswith("refs/") and ".." not in rev and "/." not in rev and not rev.endswith((".lock", "/")):
            oid = self._ref(rev)
        else:
            oid = rev if len(rev) in (40, 64) and _HEX.issuperset(rev) else _ASK
        if oid is None or oid == headref.ASK_GIT:  # unborn, or a ref the files do not settle: git says
            return _ASK
        for _ in range(parents):
            if oid in (_ASK, _MISSING):
                break
            oid = self._parent(oid)
        return oid

    def _ref(self, ref: str) -> str | None:
        """REF's id by git's rules for a name (REF itself, then refs/REF, refs/tags/REF, ...); _MISSING when none
        exists, None (ask git) when the files do not settle one."""
        for name in (ref, f"refs/{ref}", f"refs/tags/{ref}", f"refs/heads/{ref}", f"refs/remotes/{ref}",
                     f"refs/remotes/{ref}/HEAD"):
            oid = headref.read_ref(self.common_dir, name)
            if oid is not None:
                return None if oid == headref.ASK_GIT else oid
        return _MISSING

    def _loose(self, oid: str) -> tuple[str, bytes] | None:
        """read_loose, once per object (a ledger blob the index and a ledger ref both hold, a tree on two paths)."""
        if oid not in self.read:
            found = self.read[oid] = read_loose(self.objects, oid)
            if found is not None and found[0] == "blob":
                remember(found[1], oid)  # its blob id, just checked: `digests.blob_id` need not hash it again
        return self.read[oid]

    def _read(self, oid: str, kind: str) -> bytes | None:
        found = self._loose(oid)
        return found[1] if found is not None and found[0] == kind else None

    def _object(self, oid: str) -> Any:
        if oid in (_ASK, _MISSING):
            return None if oid == _MISSING else _ASK
        found = self._loose(oid)
        return (oid, found[0], found[1]) if found is not None else _ASK

    def _parent(self, commit: str) -> str:
        body = self._read(commit, "commit")
        lines = body.split(b"\n", 2) if body is not None else []
        return lines[1][7:].decode() if len(lines) > 1 and lines[1].startswith(b"parent ") else _ASK  # (a root: git)

    def _tree_of(self, commit: str) -> str:
        if commit in (_ASK, _MISSING):
            return commit
        body = self._read(commit, "commit")
        return body[5:body.index(b"\n")].decode() if body is not None and body.startswith(b"tree ") else _ASK

    def _walk(self, tree: str, path: str) -> Any:
        """The object at PATH below TREE: None where git finds nothing there."""
        oid = tree
        for part in [p for p in path.split("/") if p]:
            if oid in (_ASK, _MISSING):
                break
            found = self._loose(oid)
            if found is None:
                return _ASK  # packed: cat-file reads it
            if found[0] != "tree":
                return None  # a file (or a commit) named as a folder: nothing there
            if oid not in self.trees:
                self.trees[oid] = parse_tree(found[1], len(oid))
            entry = self.trees[oid].get(part)
            if entry is None:
                return None
            oid = entry[1]
        return self._object(oid)
