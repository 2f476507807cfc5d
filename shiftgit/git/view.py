"""What git hands a hook: the git dir, the active run, the staged changes, the ledgers of a commit.

Git plumbing only, and only stdlib imports: this runs on every commit, where pygit2 (~50 ms to
import), jsonschema and click would cost more than the work. Objects are read through one
`git cat-file --batch` (`Objects`), which honours `GIT_INDEX_FILE` for `:path` names, so a hook
sees the index git is about to commit (a lock file during `commit -a` and `commit <paths>`).
"""

from __future__ import annotations

import os

from shiftgit import rawjson
from shiftgit.errors import GitError, LedgerError, UsageError
from shiftgit.git import rawgit
from shiftgit.git.looseread import Loose
from shiftgit.git.rawgit import communicate
from shiftgit.git.rawledger import RUN_ID_PATTERN as RUN_ID_PATTERN  # view.RUN_ID_PATTERN, as before
from shiftgit.git.rawledger import is_run_id
from shiftgit.textsafe import path_text

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, NamedTuple

    from shiftgit.git.notestree import CatFile

    Where = str | os.PathLike[str]  # a directory: the hooks pass str (no pathlib on the commit path)
    LedgerChanges = dict[str, tuple[Any, Any]]
else:
    from shiftgit.tuples import NamedTuple

RUNS = ".shift/runs"
CONFIG = ".shift/config.json"
_LEDGER_DIR, _LEDGER_FILE = f"{RUNS}/", "/ledger.json"
DEFAULT_CONFIG: dict[str, Any] = {"require_fresh_checks": False, "trailers": True}


def ledger_path(run: str) -> str:
    return f"{RUNS}/{run}/ledger.json"


def ledger_run(path: str) -> str | None:
    """The RUN of a path `.shift/runs/<RUN>/ledger.json` (any name without a slash), else None."""
    if path.startswith(_LEDGER_DIR) and path.endswith(_LEDGER_FILE):
        run = path[len(_LEDGER_DIR):-len(_LEDGER_FILE)]
        return run if run and "/" not in run else None
    return None


def is_shift_path(path: str) -> bool:
    return path == ".shift" or path.startswith(".shift/")


def hook_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The hook's environment for git plumbing: GIT_DIR and GIT_INDEX_FILE stay, git speaks C."""
    return rawgit.hook_env(os.environ if environ is None else environ)


def git(root: Where, env: Mapping[str, str], *argv: str, input: bytes | None = None) -> str:
    from shiftgit.git.notestree import run_git

    proc = run_git(root, dict(env), list(argv), input)  # not subprocess: its import costs the hooks ~5 ms
    if proc.returncode != 0:
        raise GitError(list(argv), proc.stderr.decode("utf-8", "replace"))
    return proc.stdout.decode("utf-8", "surrogateescape")


# -- where things are -------------------------------------------------------------------------------

def git_dir(root: Where, environ: Mapping[str, str]) -> str:
    """This worktree's git dir without a git process: $GIT_DIR, `.git/`, or the `gitdir:` in `.git`."""
    if environ.get("GIT_DIR"):
        return os.path.join(root, environ["GIT_DIR"])  # an absolute $GIT_DIR replaces root
    dot = os.path.join(root, ".git")
    if os.path.isdir(dot):
        return dot
    if os.path.isfile(dot):
        with open(dot, encoding="utf-8", errors="surrogateescape") as handle:
            text = handle.read().strip()
        if text.startswith("gitdir:"):
            return os.path.join(root, text[len("gitdir:"):].strip())
    return git(root, hook_env(environ), "rev-parse", "--absolute-git-dir").strip()


def active_run(root: Where, gitdir: Where, environ: Mapping[str, str]) -> str | None:
    """SHIFT_RUN, else this worktree's pointer (`<git-dir>/shift/active`) when its ledger exists."""
    named = environ.get("SHIFT_RUN")
    if named:
        if not is_run_id(named):
            raise UsageError(f"SHIFT_RUN={named!r} is not a run id; unset it or name a run (e.g. SHIFT_RUN=fix-login)")
        return named
    pointer = os.path.join(gitdir, "shift", "active")
    try:
        with open(pointer, encoding="utf-8") as handle:
            run = handle.read().strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise _bad_pointer(pointer, getattr(exc, "strerror", None) or "not UTF-8 text") from None
    if run and not is_run_id(run):
        raise _bad_pointer(pointer, f"it holds {run[:40]!r}, not a run id")
    return run if run and os.path.isfile(os.path.join(root, ledger_path(run))) else None


def _bad_pointer(pointer: str, why: str) -> UsageError:
    return UsageError(f"the active-run pointer {pointer} cannot be read ({why}); remove it (`rm -r {pointer}`), "
                      "then pick the run with `shiftgit resume RUN`")


def parse_config(data: bytes | None, where: str = CONFIG) -> dict[str, Any]:
    """`.shift/config.json` over the defaults; a corrupt one is an error, never silently ignored."""
    if data is None:
        return dict(DEFAULT_CONFIG)
    try:
        document = rawjson.loads(data)
    except ValueError as exc:
        raise LedgerError(f"{where}: corrupt JSON ({exc}); fix it or restore it with "
                          f"`git checkout HEAD -- {where}`") from None
    if not isinstance(document, dict):
        raise LedgerError(f"{where}: not a JSON object; restore it with `git checkout HEAD -- {where}`")
    return {**DEFAULT_CONFIG, **document}


# -- the index git is about to commit ---------------------------------------------------------------

class Change(NamedTuple):
    """A path whose staged content differs from HEAD's: blob ids (None: absent on that side)."""

    path: str
    status: str
    old: str | None
    new: str | None


def staged(root: Where, env: Mapping[str, str], base: str) -> list[Change]:
    """`git diff-index --cached` against `base` (HEAD, or the empty tree), renames off."""
    return _raw_changes(git(root, env, "diff-index", "--cached", "-z", "--no-renames", base))


def staged_on_head(objects: Objects, root: Where, env: Mapping[str, str]) -> tuple[str | None, list[Change]]:
    """HEAD's id and what the index changes against it (`staged`; against the empty tree on an unborn branch).
    `diff-index` starts before cat-file is asked for HEAD: the two git processes work at the same time."""
    argv = list(rawgit.STAGED)
    proc = rawgit.started(argv, env, root) or _start(root, env, argv)  # the hook's, started before its imports
    try:
        head = objects.resolve("HEAD")
    finally:
        code, out, err = communicate(proc, None)
    if head is None:  # unborn: that diff-index failed; this one diffs against the empty tree
        return None, staged(root, env, empty_tree(root, env))
    if code != 0:
        raise GitError(argv, err.decode("utf-8", "replace"))
    return head, _raw_changes(out.decode("utf-8", "surrogateescape"))


def _start(root: Where, env: Mapping[str, str], argv: list[str]) -> Any:
    from shiftgit.git.notestree import start_git

    return start_git(root, env, argv)


def committed(root: Where, env: Mapping[str, str], base: str, commit: str) -> list[Change]:
    """What `commit` changed against `base` (its parent, or the empty tree), renames off."""
    return _raw_changes(git(root, env, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", base, commit))


def _raw_changes(out: str) -> list[Change]:
    parts = out.split("\0")
    changes = []
    for meta, path in zip(parts[0::2], parts[1::2], strict=False):
        if meta.startswith(":"):
            _, _, old, new, status = meta[1:].split(" ")
            changes.append(Change(path_text(path), status[0], _blob(old), _blob(new)))
    return changes


def empty_tree(root: Where, env: Mapping[str, str]) -> str:
    """The empty tree's id in this repository's hash (sha1 or sha256); an unborn branch diffs against it."""
    return git(root, env, "hash-object", "-t", "tree", "--stdin", input=b"").strip()


def _blob(oid: str) -> str | None:
    return None if not oid.strip("0") else oid


# -- objects ----------------------------------------------------------------------------------------

class Objects:
    """One `git cat-file --batch` for a hook (or a reader of the loose files that asks one only for what they do not
    hold: git/looseread.py): names (`HEAD`, `:path`, `rev:path`, ids) -> bytes."""

    def __init__(self, root: Where, env: Mapping[str, str], cat: CatFile | Loose | None = None) -> None:
        if cat is None:
            from shiftgit.git.notestree import CatFile  # a hook reads the loose files (git/looseread.py) without it

            cat = CatFile(root, dict(env))
        self.cat = cat

    def note_staged(self, changes: list[Change]) -> None:
        """What diff-index says the index changes against HEAD: a Loose reader answers `:path` from it."""
        if isinstance(self.cat, Loose):
            unknown = any(c.status[:1] == "U" or (c.new is None and c.status[:1] != "D") for c in changes)
            self.cat.staged = None if unknown else {c.path: c.new for c in changes}

    def __enter__(self) -> Objects:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cat.__exit__(*exc)

    def resolve(self, name: str) -> str | None:
        got = self.cat.get([name])[0]
        return got[0] if got else None

    def read(self, names: list[str]) -> list[bytes | None]:
        return [got[2] if got else None for got in self.cat.get(names)]

    def commit(self, oid: str) -> tuple[str, list[str]]:
        """A commit's tree id and parent ids."""
        got = self.cat.get([oid])[0]
        if got is None or got[1] != "commit":
            raise GitError(["cat-file", "--batch"], f"{oid} is not a commit")
        tree, parents = "", []
        for line in got[2].split(b"\n\n", 1)[0].split(b"\n"):
            key, _, value = line.partition(b" ")
            if key == b"tree":
                tree = value.decode()
            elif key == b"parent":
                parents.append(value.decode())
        return tree, parents

    def ledger_blobs(self, trees: list[str]) -> list[dict[str, str]]:
        """For each tree (a root tree id), run -> blob id of `.shift/runs/<run>/ledger.json`."""
        runs = [self._entries(answer) for answer in self.cat.get([f"{t}:{RUNS}" for t in trees])]
        return self._ledgers(runs)

    def changed_ledgers(self, tree: str, parent: str | None) -> dict[str, tuple[str | None, str | None]]:
        """run -> (parent's ledger blob, this tree's) for every run whose ledger differs; one round trip per level."""
        names = [f"{t}:{RUNS}" for t in (tree, parent) if t]
        answers = [self._entries(a) for a in self.cat.get(names)]
        new, old = answers[0], (answers[1] if parent else {})
        differ = {run for run in new.keys() | old.keys() if new.get(run) != old.get(run)}
        new_blobs, old_blobs = self._ledgers([{r: new[r] for r in differ & new.keys()},
                                              {r: old[r] for r in differ & old.keys()}])
        return {run: (old_blobs.get(run), new_blobs.get(run)) for run in sorted(differ)
                if old_blobs.get(run) != new_blobs.get(run)}

    def _ledgers(self, runs: list[dict[str, str]]) -> list[dict[str, str]]:
        flat = [(i, run, oid) for i, found in enumerate(runs) for run, oid in sorted(found.items())]
        answers = self.cat.get([oid for _, _, oid in flat]) if flat else []
        out: list[dict[str, str]] = [{} for _ in runs]
        for (i, run, _), answer in zip(flat, answers, strict=True):
            blob = self._entries(answer).get("ledger.json")
            if blob and is_run_id(run):
                out[i][run] = blob
        return out

    @staticmethod
    def _entries(answer: tuple[str, str, bytes] | None) -> dict[str, str]:
        if answer is None or answer[1] != "tree":
            return {}
        from shiftgit.git.notestree import parse_tree

        return {name: entry.oid for name, entry in parse_tree(answer[2], len(answer[0])).items()
                if entry.kind in ("tree", "blob")}


def ledger_changes(objects: Objects, commit: str) -> LedgerChanges:
    """run -> (first parent's ledger, the commit's), raw JSON (None: absent or not JSON), for changed ledgers."""
    tree, parents = objects.commit(commit)
    parent = objects.commit(parents[0])[0] if parents else None
    changed = objects.changed_ledgers(tree, parent)
    blobs = [b for pair in changed.values() for b in pair if b]
    found = dict(zip(blobs, objects.read(blobs), strict=True))
    return {run: (parse_json(found.get(old)) if old else None, parse_json(found.get(new)) if new else None)
            for run, (old, new) in changed.items()}


def parse_json(data: bytes | None) -> Any:
    try:
        return rawjson.loads(data) if data is not None else None
    except ValueError:
        return None
