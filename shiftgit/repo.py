"""The one place a repository is opened, and the git subprocess helper."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from shiftgit.errors import GitError, UsageError
from shiftgit.textsafe import path_text

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from shiftgit.tuples import NamedTuple

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # in a sha1 repository; ask `Repo.empty_tree`
EMPTY_TREES = {"sha1": EMPTY_TREE,
               "sha256": "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"}
ID_WIDTH = {"sha1": 40, "sha256": 64}
SHIFT_DIR = ".shift"
_FORMATS: dict[Path, str] = {}  # common dir -> object format (a Repo is a NamedTuple: no instance cache)
_SIGNING: dict[Path, bool] = {}  # work tree -> whether the user's git config names a signing key
# Variables a git hook inherits that must not leak into our own plumbing calls.
HOOK_VARS = ("GIT_INDEX_FILE",)


def git(cwd: str | Path, *args: str, input: str | bytes | None = None,
        env: Mapping[str, str] | None = None, check: bool = True) -> str:
    """Run git, return stdout. A failure raises GitError with the command and stderr."""
    import subprocess  # here: an agent hook that asks git nothing else need not load it (~5 ms)

    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True,
                          env=dict(env) if env is not None else None)
    if check and proc.returncode != 0:
        raise GitError(list(args), proc.stderr.decode("utf-8", "replace"))
    return proc.stdout.decode("utf-8", "surrogateescape")


def clean_env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in HOOK_VARS}
    env.update(overrides)
    return env


class FileEntry(NamedTuple):
    path: str
    blob: str | None
    status: str


class Change(NamedTuple):
    """One entry of a `diff-tree`: the path as git has it (undecodable bytes kept as surrogates), the new
    mode and blob id (zeros when deleted), and the status letter."""

    path: str
    mode: str
    blob: str
    status: str


def files_of(changes: list[Change]) -> list[FileEntry]:
    """The files a ledger records from CHANGES: `.shift/` left out, paths as text, no id for a deleted file."""
    return [FileEntry(path_text(c.path), None if c.status == "D" else c.blob, c.status) for c in changes
            if c.path != SHIFT_DIR and not c.path.startswith(SHIFT_DIR + "/")]


DIFF_TREE = ("diff-tree", "-r", "-z", "--no-renames")  # `Repo.changes`'s command (git/record.py: no subprocess)


def parse_changes(out: str) -> list[Change]:
    """The entries of a `diff-tree -r -z` (its output decoded with surrogateescape)."""
    parts = out.split("\0")
    found: list[Change] = []
    for meta, path in zip(parts[0::2], parts[1::2], strict=False):
        if meta.startswith(":"):
            _, mode, _, blob, status = meta[1:].split(" ")
            found.append(Change(path, mode, blob, status[0]))
    return found


# What `Repo.open` asks git (object format last: an older git that lacks it still answers the rest).
OPEN_ARGS = ("rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", "--show-object-format")


class Repo(NamedTuple):
    """A work tree and its git dirs. (NamedTuples here, not dataclasses: importing `dataclasses` pulls
    `inspect`, a cost every agent hook would pay.)"""

    root: Path
    git_dir: Path
    common_dir: Path

    @classmethod
    def open(cls, cwd: str | Path | None = None) -> Repo:
        if cwd is None and _BEGUN and _BEGUN[-1].cwd == os.getcwd():  # `checkpoint`: opened once, when it began
            return _BEGUN[-1].repo
        import subprocess

        where = Path(cwd or os.getcwd())
        proc = subprocess.run(["git", *OPEN_ARGS], cwd=where, capture_output=True, text=True)
        return cls.opened(where, proc.returncode, proc.stdout)

    @classmethod
    def opened(cls, where: Path, code: int, out: str) -> Repo:
        """The repository that `open`'s `git rev-parse` in `where` answered (an agent hook starts it early)."""
        lines = out.splitlines()
        if code != 0 or len(lines) < 3:
            raise UsageError(f"{where}: not a git repository (or a bare one); run shiftgit inside a "
                             "work tree, or `git init` first")
        common = Path(lines[2])
        if not common.is_absolute():
            common = (where / common).resolve()
        if len(lines) > 3 and lines[3] in ID_WIDTH:  # `object_format` without asking again (an older git: it asks)
            _FORMATS.setdefault(common, lines[3])
        return cls(Path(lines[0]), Path(lines[1]), common)

    def git(self, *args: str, input: str | bytes | None = None, env: Mapping[str, str] | None = None,
            check: bool = True) -> str:
        return git(self.root, *args, input=input, env=env, check=check)

    @property
    def object_format(self) -> str:
        """`sha1` or `sha256`: what this repository names its objects with (asked once per process)."""
        known = _FORMATS.get(self.common_dir)
        if known is None:
            out = self.git("rev-parse", "--show-object-format", check=False).strip()
            known = _FORMATS[self.common_dir] = out if out in ID_WIDTH else "sha1"
        return known

    @property
    def null_id(self) -> str:
        """The all-zero id (`update-ref`'s "must not exist yet") in this repository's object format."""
        return "0" * ID_WIDTH[self.object_format]

    @property
    def empty_tree(self) -> str:
        return EMPTY_TREES[self.object_format]

    @property
    def shift_dir(self) -> Path:
        return self.root / SHIFT_DIR

    def private(self, *parts: str) -> Path:
        """A path inside this worktree's git dir, never committed."""
        path = self.git_dir.joinpath("shift", *parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def head(self) -> str | None:
        out = self.git("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False).strip()
        return out or None

    def branch(self) -> str | None:
        out = self.git("symbolic-ref", "-q", "--short", "HEAD", check=False).strip()
        return out or None

    def worktree_tree(self) -> str:
        """The tree of the working files (tracked and untracked, not ignored), `.shift/` left out.

        Built in a private copy of the index: HEAD, the real index and the files stay untouched.
        """
        return self.start_worktree_tree().result()

    def worktree_build(self) -> TreeBuild:
        """The build `begin_worktree_tree` started for this repository, else a new one."""
        return begun(self) or self.start_worktree_tree()

    def start_worktree_tree(self) -> TreeBuild:
        """`worktree_tree` begun: git hashes the files while the caller goes on (`checkpoint` loads its code
        meanwhile); `result()` gives the tree, `close()` gives it up (it waits for git, removes the index)."""
        return TreeBuild(self)

    def index_path(self) -> Path:
        """This worktree's index: `<git-dir>/index`, unless GIT_INDEX_FILE names another (then git says)."""
        if not os.environ.get("GIT_INDEX_FILE"):
            return self.git_dir / "index"
        real = Path(self.git("rev-parse", "--git-path", "index").strip())
        return real if real.is_absolute() else self.root / real

    def diff_trees(self, old: str | None, new: str) -> list[FileEntry]:
        """Files that differ between two trees (or commits), with the new blob ids (`.shift/` left out)."""
        return files_of(self.changes(old, new))

    def changes(self, old: str | None, new: str) -> list[Change]:
        """Every entry that differs between two trees (or commits), as git names it (one `diff-tree`)."""
        if old == new:  # one object: nothing differs (resume and verify compare a clean tree with itself)
            return []
        return parse_changes(self.git(*DIFF_TREE, old or self.empty_tree, new))

    def signs(self) -> bool:
        """The user signs commits (`user.signingkey`, gpg or ssh per `gpg.format`): shiftgit's own commits
        (snapshots, ledger refs) are signed the same way."""
        if self.root not in _SIGNING:
            _SIGNING[self.root] = bool(self.git("config", "--get", "user.signingkey", check=False).strip())
        return _SIGNING[self.root]

    def commit_tree(self, tree: str, parents: list[str], message: str) -> str:
        args = ["commit-tree", *(["-S"] if self.signs() else []), tree, "-m", message]
        for parent in parents:
            args += ["-p", parent]
        return self.git(*args, env=identity_env()).strip()

    def update_ref(self, ref: str, new: str, old: str | None = None, message: str = "shiftgit") -> None:
        args = ["update-ref", "-m", message, ref, new]
        if old is not None:
            args.append(old)
        try:
            self.git(*args)
        except GitError as exc:  # the ref's lock held: by a live git (ms), or left by a killed one (reflocks.py)
            from shiftgit.reflocks import wait_out

            if not wait_out(exc.stderr, ref, self.root):
                raise
            self.git(*args)

    def ref(self, name: str) -> str | None:
        out = self.git("rev-parse", "--verify", "-q", name, check=False).strip()
        return out or None

    def show(self, rev_path: str) -> bytes | None:
        """The bytes of `REV:path`, or None when it does not exist."""
        import subprocess

        proc = subprocess.run(["git", "cat-file", "blob", rev_path], cwd=self.root, capture_output=True)
        return proc.stdout if proc.returncode == 0 else None


class TreeBuild:
    """A `Repo.worktree_tree` under way in a private copy of the index, by one `sh` (shiftgit/packs.py: BUILD):
    `.shift/` dropped while `ls-files` lists the changed and new files, their blobs packed when many, `git add -A`,
    `git write-tree`. A process, not a thread: no git step waits for this interpreter's lock while the caller
    imports its code."""

    started = 0  # builds this process began: each has its own index file

    def __init__(self, repo: Repo) -> None:
        TreeBuild.started += 1
        self.repo, self.cwd = repo, os.getcwd()
        self.index = repo.private(f"index.{os.getpid()}.{TreeBuild.started}.tmp")
        real = repo.index_path()
        if real.exists():
            _copy_keeping_mtime(real, self.index)  # git's racy-clean check then sees same-second edits
        self.env = clean_env(GIT_INDEX_FILE=str(self.index))
        import subprocess

        from shiftgit import packs  # here, not above: an agent hook's save opens a Repo and builds no tree
        self.steps, self.left = {90: list(packs.DROP), 91: list(packs.ADD)}, packs.LEFT  # what failed; files left
        width = ID_WIDTH[repo.object_format]
        argv = packs.build_command(str(repo.root), str(repo.git_dir), str(repo.common_dir), width)
        try:
            self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                argv, cwd=repo.root, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
        except BaseException:
            self.index.unlink(missing_ok=True)
            raise
        self._done: tuple[str, BaseException | None] | None = None

    def _finish(self) -> tuple[str, BaseException | None]:
        if self._done is None:
            proc, self.proc = self.proc, None
            out, err = proc.communicate() if proc is not None else (b"", b"")
            tree = out.decode("ascii", "replace").strip()
            code = proc.returncode if proc is not None else 1
            failed = self.steps.get(code, ["write-tree"])
            self._done = (tree, None) if code == 0 and tree else ("", GitError(failed, err.decode("utf-8", "replace")))
        return self._done

    def result(self, keep: str | None = None) -> str:
        """The tree (raises GitError as `worktree_tree` did); the private index is gone afterwards, or renamed
        to `keep` (git/worktreecache.py)."""
        try:
            tree, error = self._finish()
            if error is not None:
                raise error
            if keep is not None:
                os.replace(self.index, keep)
            return tree
        finally:
            self.close()

    def __enter__(self) -> TreeBuild:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Give the build up (or end it): wait for git, remove the private index. Safe to call again."""
        self._finish()
        self.index.unlink(missing_ok=True)
        for suffix in (".list", *self.left):  # `ls-files`' and the packer's (packs.BUILD)
            Path(f"{self.index}{suffix}").unlink(missing_ok=True)


_BEGUN: list[TreeBuild] = []


def begin_worktree_tree() -> None:
    """For a `checkpoint` about to run: start its work tree's tree now, before the command line and the
    checkpoint code load (`begun` hands it over). Closed at exit if nobody takes it (a usage error)."""
    import atexit

    try:
        build = Repo.open().start_worktree_tree()
    except (UsageError, GitError, OSError):
        return  # the command says why, as it always did
    _BEGUN.append(build)
    atexit.register(build.close)


def begun(repo: Repo) -> TreeBuild | None:
    """The build `begin_worktree_tree` started for REPO, taken (None: none was)."""
    while _BEGUN:
        build = _BEGUN.pop()
        if build.repo == repo:
            return build
        build.close()
    return None


def _copy_keeping_mtime(source: Path, target: Path) -> None:
    """Copy a file and its modification time (shutil.copy2 without importing shutil and its archivers)."""
    target.write_bytes(source.read_bytes())
    stat = source.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))


_IDENTITY: dict[tuple[str, frozenset[tuple[str, str]]], int] = {}  # `git var GIT_COMMITTER_IDENT`'s exit status


def identity_env() -> dict[str, str]:
    """Plumbing that writes commits needs an identity; fall back when the user has none."""
    env = clean_env()
    if all(env.get(f"GIT_{who}_{part}") for who in ("AUTHOR", "COMMITTER") for part in ("NAME", "EMAIL")):
        return env  # given whole by the environment (CI, tests, agents): no git process to ask
    asked = (os.getcwd(), frozenset(env.items()))  # asked once per place and environment (a checkpoint commits twice)
    if asked not in _IDENTITY:
        import subprocess

        probe = subprocess.run(["git", "var", "GIT_COMMITTER_IDENT"], capture_output=True, env=env)
        _IDENTITY[asked] = probe.returncode
    if _IDENTITY[asked] != 0:
        for who in ("AUTHOR", "COMMITTER"):
            env.setdefault(f"GIT_{who}_NAME", "shiftgit")
            env.setdefault(f"GIT_{who}_EMAIL", "shiftgit@localhost")
    return env
