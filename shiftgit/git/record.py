"""What the record says about git: the checkpoint's content, whether HEAD still matches it, provenance.

Read-only helpers shared by verify, resume, rollback and trust. They work in a fresh clone without notes or
snapshot refs: the ledger in the tree is the source.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from shiftgit import memo, rawjson
from shiftgit.errors import GitError
from shiftgit.repo import DIFF_TREE, SHIFT_DIR, FileEntry, Repo, clean_env, files_of, parse_changes

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import NamedTuple, Protocol
else:
    from shiftgit.tuples import NamedTuple
    Protocol = object  # the classes below are for mypy only

PATHSPEC_CAP = 500


class RecordedFile(Protocol):
    """A changed file as a checkpoint records it (the model's FileChange, or its JSON read as such)."""

    @property
    def path(self) -> str: ...
    @property
    def id(self) -> str | None: ...
    @property
    def status(self) -> str: ...


class Checkpoint(Protocol):
    """What these helpers read of a checkpoint: the model's Checkpoint, or a view of its JSON
    (the agent hooks read ledgers without building the model)."""

    @property
    def id(self) -> str: ...
    @property
    def base(self) -> str | None: ...
    @property
    def tree(self) -> str | None: ...
    @property
    def files(self) -> Sequence[RecordedFile]: ...


class Provenance(NamedTuple):
    """Who last changed a ledger file in git, and whether the working copy differs from HEAD's."""

    commit: str | None
    author: str | None
    date: str | None
    uncommitted: bool

    def describe(self) -> str:
        if self.commit is None:
            return "uncommitted (the ledger is not in any commit yet)"
        where = f"{self.author} in {self.commit[:12]} ({self.date})"
        return f"{where}, with uncommitted changes since" if self.uncommitted else where

    def to_dict(self) -> dict[str, object]:
        return {"commit": self.commit, "author": self.author, "date": self.date, "uncommitted": self.uncommitted}


class HeadState(NamedTuple):
    """Whether the record matches HEAD (SPEC §6), with the commits made since the checkpoint's base."""

    matches: bool
    head: str | None
    base: str | None
    carrier: str | None          # the commit that carries the checkpoint, when HEAD is it
    commits: tuple[str, ...]     # commits in base..HEAD other than the carrier, newest first


def has_object(repo: Repo, oid: str | None, kind: str) -> bool:
    """Whether this clone holds `oid` as an object of `kind` (commit, tree, blob)."""
    if not oid:
        return False
    import subprocess

    proc = subprocess.run(["git", "cat-file", "-e", f"{oid}^{{{kind}}}"], cwd=repo.root,
                          capture_output=True, env=clean_env())
    return proc.returncode == 0


def ledger_provenance(repo: Repo, rel_path: str,
                      files: tuple[bytes | None, bytes | None] | None = None) -> Provenance:
    """FILES: the working file's bytes and HEAD's (None: HEAD has none), when the caller read them (git/sources.py)."""
    out = repo.git("log", "-1", "--format=%H%x1f%an <%ae>%x1f%cI", "--", rel_path, check=False).strip()
    commit, author, date = (out.split("\x1f") + [None, None, None])[:3] if out else (None, None, None)
    if files is None:
        working = (repo.root / rel_path).read_bytes() if (repo.root / rel_path).exists() else None
        files = working, repo.show(f"HEAD:{rel_path}")
    working, committed = files
    return Provenance(commit=commit or None, author=author, date=date, uncommitted=working != committed)


def checkpoint_tree(repo: Repo, point: Checkpoint) -> str | None:
    """The tree the checkpoint recorded; rebuilt from its base and changed files when the object is absent (a
    fresh clone has no snapshot refs). Rebuilt trees may name blobs this clone lacks: good for diffs, not for
    restoring. None when neither is possible."""
    if has_object(repo, point.tree or "", "tree"):
        return point.tree
    return None if point.base is not None and not has_object(repo, point.base, "commit") else _rebuild(repo, point)


def _rebuild(repo: Repo, point: Checkpoint) -> str | None:
    paths = [f.path for f in point.files if f.id is not None and f.status != "D"]
    at_head, at_base = entries_at(repo, repo.head(), paths), entries_at(repo, point.base, paths)
    known = {p: at_head.get(p, []) + at_base.get(p, []) for p in paths}
    lines = []
    for f in point.files:
        if f.status == "D" or f.id is None:
            lines.append(f"0 {repo.null_id}\t{f.path}\n")
        else:  # the mode git has for this exact content (HEAD first, then the base), else a plain file
            mode = next((m for m, blob in known.get(f.path, []) if blob == f.id), None)
            lines.append(f"{mode or _base_mode(known.get(f.path, []))} {f.id}\t{f.path}\n")
    return overlay(repo, point.base or repo.empty_tree, lines)


def overlay(repo: Repo, start: str, lines: list[str]) -> str | None:
    """START's tree with `lines` (`update-index --index-info` entries) applied, `.shift/` left out (a private index)."""
    tmp = repo.private(f"index.overlay.{os.getpid()}.tmp")
    env = clean_env(GIT_INDEX_FILE=str(tmp))
    try:
        repo.git("read-tree", start, env=env)
        if lines:
            repo.git("update-index", "--index-info", input="".join(lines), env=env)
        repo.git("rm", "--cached", "-r", "-q", "-f", "--ignore-unmatch", "--", f":/{SHIFT_DIR}", env=env)
        return repo.git("write-tree", "--missing-ok", env=env).strip() or None
    finally:
        tmp.unlink(missing_ok=True)


def _base_mode(entries: list[tuple[str, str]]) -> str:
    return entries[0][0] if entries else "100644"


def entries_at(repo: Repo, commit: str | None, paths: list[str]) -> dict[str, list[tuple[str, str]]]:
    """path -> [(mode, blob)] in `commit`, for the given paths (one git call)."""
    if commit is None or not paths:
        return {}
    wanted = set(paths)
    spec = ["--", *paths] if len(paths) <= PATHSPEC_CAP else []  # a long list: read the whole tree instead
    out = repo.git("ls-tree", "-r", "-z", "--full-tree", commit, *spec, check=False)
    found: dict[str, list[tuple[str, str]]] = {}
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        parts = meta.split(" ")
        if len(parts) == 3 and parts[1] == "blob" and path in wanted:
            found.setdefault(path, []).append((parts[0], parts[2]))
    return found


def edits_since(repo: Repo, point: Checkpoint, worktree: str) -> list[FileEntry] | None:
    """Files outside `.shift/` whose working content differs from the checkpoint's; None when unknown.

    A file still holding exactly what shiftgit wrote there (`init --agent`) is not an edit (ledger/written.py)."""
    from shiftgit.ledger.written import without_ours

    if point.tree:  # the usual case, the tree is here: one diff-tree, no existence check first
        try:
            return without_ours(repo, diff_files(repo, point.tree, worktree))
        except GitError:
            pass
    tree = checkpoint_tree(repo, point)
    return None if tree is None else without_ours(repo, diff_files(repo, tree, worktree))


def diff_files(repo: Repo, old: str | None, new: str) -> list[FileEntry]:
    """`repo.diff_trees(old, new)` without the subprocess module: the end-of-turn hold runs it at every held turn,
    and importing subprocess would cost that hook a fifth of a Python start-up. A remembered diff imports no more
    (notestree: ~0.5 ms; the git an agent hook starts first made the diff: git/worktreecache.py)."""
    if old == new:
        return []
    argv = [*DIFF_TREE, old or repo.empty_tree, new]
    kept = os.path.join(str(repo.git_dir), "shift", DIFF_MEMO)
    head = f"{argv[-2]} {argv[-1]}\n".encode()
    raw = _recalled(kept, head)
    if raw is None:
        from shiftgit.git.notestree import run_git

        proc = run_git(repo.root, dict(os.environ), argv)
        if proc.returncode != 0:
            raise GitError(argv, proc.stderr.decode("utf-8", "replace"))
        raw = proc.stdout
        _remember(kept, head + raw)
    return files_of(parse_changes(raw.decode("utf-8", "surrogateescape")))


DIFF_MEMO = "worktree.diff"  # the last diff_files answer: two trees' ids, then what diff-tree said


def _recalled(path: str, head: bytes) -> bytes | None:
    """What diff-tree said for these two trees, when it was the last question (two ids name the same diff forever):
    an end of turn that holds again on the same edits asks no git."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return data[len(head):] if data.startswith(head) else None


def _remember(path: str, data: bytes) -> None:
    """Memory, not record (shiftgit/memo.py): a failure only costs the next call a diff-tree."""
    memo.replace(path, data)


def committed_checkpoint_id(repo: Repo, commit: str, rel_path: str) -> str | None:
    """The checkpoint id the ledger committed in `commit` carries, read without validation."""
    data = repo.show(f"{commit}:{rel_path}")
    if data is None:
        return None
    try:
        document = rawjson.loads(data)
        point = document.get("checkpoint") if isinstance(document, dict) else None
        value = point.get("id") if isinstance(point, dict) else None
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def head_state(repo: Repo, point: Checkpoint, rel_path: str, head: str | None = None) -> HeadState:
    """HEAD is the checkpoint's base, or HEAD's parent is the base and HEAD's ledger carries the checkpoint.

    The commit carrying the checkpoint (made from it, amended or not) is never counted as drift.
    """
    head, base = head or repo.head(), point.base
    if head is not None and head == base:  # the common case: no commit since the checkpoint, no git call
        return HeadState(True, head, base, None, ())
    if head is not None and base is not None and _carries(repo, head, base, rel_path, point.id):
        return HeadState(True, head, base, head, ())  # the other common case: HEAD is the handoff commit
    if head is not None and base is not None and _replaces(repo, head, base) and committed_checkpoint_id(
            repo, head, rel_path) == point.id:  # `git commit --amend` of the base, with the checkpoint
        return HeadState(True, head, base, head, ())
    pairs = _commits_between(repo, base, head)
    carrier = next((c for c, parent in pairs
                    if parent == base and committed_checkpoint_id(repo, c, rel_path) == point.id), None)
    others = tuple(c for c, _ in pairs if c != carrier)
    ledger_only = _ledger_only(repo, others)  # recording an effect, say: the record itself moved, nothing else
    others = tuple(c for c in others if c not in ledger_only)
    matches = head == base or (head is not None and not others and (carrier is not None or bool(ledger_only)))
    return HeadState(matches, head, base, carrier, others)


def _replaces(repo: Repo, head: str, base: str) -> bool:
    """HEAD and the base have the same parents (HEAD amends the base) and are not the same commit."""
    out = repo.git("show", "-s", "--format=%P", head, base, check=False).split("\n")
    return head != base and len(out) >= 2 and out[0] == out[1]


def _ledger_only(repo: Repo, commits: tuple[str, ...]) -> set[str]:
    """The commits that change only files under `.shift/` (one git call)."""
    if not commits:
        return set()
    out = repo.git("show", "-z", "--no-renames", "--name-only", "--format=%x01%H", "-m", "--first-parent",
                   *commits, check=False)
    touched: dict[str, set[str]] = {}
    commit = ""
    for token in out.split("\0"):
        token = token.lstrip("\n")
        if token.startswith("\x01"):
            commit = token[1:]
            touched.setdefault(commit, set())
        elif token and commit:
            touched[commit].add(token)
    return {c for c, paths in touched.items() if paths and all(p.startswith(f"{SHIFT_DIR}/") for p in paths)}


CARRIERS_KEPT = 64


def _carries(repo: Repo, head: str, base: str, rel_path: str, checkpoint_id: str) -> bool:
    """HEAD's first parent is `base` and HEAD's ledger carries the checkpoint: one `cat-file --batch`, once. A yes
    is kept in `<git-dir>/shift/carriers` (commits never change): the agents' end-of-turn hook asks at every turn."""
    from shiftgit.git.notestree import CatFile

    key = f"{head} {base} {checkpoint_id} {rel_path}"
    known = _carriers(repo)
    if key in known:
        return True
    with CatFile(repo.root, clean_env()) as cat:
        commit, ledger = cat.get([head, f"{head}:{rel_path}"])
    if commit is None or ledger is None:
        return False
    headers = commit[2].split(b"\n\n", 1)[0].split(b"\n")
    parents = [line[7:].decode() for line in headers if line.startswith(b"parent ")]
    if parents[:1] != [base]:
        return False
    try:
        point = rawjson.loads(ledger[2]).get("checkpoint")
    except (ValueError, AttributeError):
        return False
    if not (isinstance(point, dict) and point.get("id") == checkpoint_id):
        return False
    try:  # a cache, replaced whole (a reader sees the old or the new lines); lost, git is asked again
        file = repo.private("carriers")
        tmp = file.with_name(f".carriers.{os.getpid()}.tmp")
        tmp.write_text("".join(f"{k}\n" for k in [*known, key][-CARRIERS_KEPT:]), encoding="utf-8")
        os.replace(tmp, file)
    except OSError:
        pass
    return True


def _carriers(repo: Repo) -> list[str]:
    try:
        with open(repo.git_dir / "shift" / "carriers", encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
    except OSError:
        return []


def _commits_between(repo: Repo, base: str | None, head: str | None) -> list[tuple[str, str | None]]:
    """(commit, first parent) for the commits in base..head, newest first."""
    if head is None or (base is not None and not has_object(repo, base, "commit")):
        return []
    spec = [head] if base is None else [f"{base}..{head}"]
    out = repo.git("rev-list", "--parents", "--max-count=200", *spec, check=False)
    pairs: list[tuple[str, str | None]] = []
    for line in out.splitlines():
        ids = line.split()
        pairs.append((ids[0], ids[1] if len(ids) > 1 else None))
    return pairs


def describe_commits(repo: Repo, commits: tuple[str, ...], limit: int = 20) -> list[dict[str, str]]:
    described = []
    for commit in commits[:limit]:
        out = repo.git("log", "-1", "--format=%an <%ae>%x1f%s", commit, check=False).strip()
        author, _, subject = out.partition("\x1f")
        described.append({"commit": commit, "author": author, "subject": subject})
    return described


def is_safe_path(root: Path, rel: str) -> bool:
    """A repo-relative path that stays inside the work tree and never names git's own directory."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return False
    if any(p.lower() == ".git" for p in parts):
        return False
    parent = (root / rel).parent.resolve(strict=False)  # the last part may itself be a symlink: not followed
    return parent.is_relative_to(root.resolve())
