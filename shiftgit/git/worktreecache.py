"""The work tree's tree for the agent hooks: one git process when nothing changed since the last time.

`Repo.worktree_tree` builds it in a fresh copy of the index: `git add -A`, `git rm --cached .shift`,
`git write-tree`, three processes at every end of turn. Here the index such a build ends with is kept,
`<git-dir>/shift/worktree.index`, with its tree in `worktree.tree`; the next call runs `git add -A` in that
index, `.shift/` excluded (`ADD`). git rewrites an index only when an entry changed (and re-reads a file
modified in the index's last tick), so when the kept index is still the same file, the tree is the same tree.
When `add` changed entries, `write-tree` gives the new tree (two processes).

The kept index answers as a fresh build would while nothing else the build reads moved: the real index, the
config and the ignore and attribute files outside the work tree (`_sources`). Else, and when `add` touched a
`.gitignore` or `.gitattributes` (a file the kept index holds may be ignored now, which a build leaves out),
the tree is built fresh and its index kept. A config with `include` or its own `excludesFile` or
`attributesFile` is not followed: the tree is then built fresh each time, as before.

`prestart` starts `git rev-parse` and this `add` when an agent hook starts, before Python loads the hook's
code: git works on the second core meanwhile (`rawgit.started` hands them over). When `add` changed the kept
index, the same `sh` (CHAIN) runs `write-tree` and `diff-index --cached` against the tree the hook compares with
(`_guess`: the active run's checkpoint, read while `add` runs), kept as git/record.py's last diff of the two trees:
an end of turn after an edit then waits for no git process of its own. Stdlib `os` only until that git started.
"""

from __future__ import annotations

import os

from shiftgit import memo
from shiftgit.git import rawgit

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from shiftgit.repo import Repo

INDEX, RECORD = "worktree.index", "worktree.tree"
ADD = ["add", "-A", "-v", "--", ":/", ":(top,exclude).shift"]
OPEN = rawgit.OPEN  # Repo.open's question, repo.OPEN_ARGS (written out: importing repo would delay the start; a test
# compares them); in rawgit, so an agent hook's save path, which asks only that, does not load this module
REBUILD_NAMES = (b".gitignore", b".gitattributes")
UNFOLLOWED = ("include", "excludesfile", "attributesfile")  # config that points the build at other files
DROPPED = ("GIT_INDEX_FILE",)  # repo.HOOK_VARS: the environment clean_env gives git
DIFF_MEMO = "worktree.diff"  # git/record.py's last diff of two trees (written out: a test compares them)
_BEFORE: dict[str, tuple[str, tuple[str, str]]] = {}  # kept index -> (its state, `_guess`) when `prestart` began
# What `prestart` runs in the kept index: `add`; when it changed something, `write-tree`; then `diff-index --cached`
# against the tree the hook will compare with (`_guess`, on its stdin with the tree the kept diff compared it with:
# that diff is not made again). Its output: add's (and its warnings), NUL, the tree's id, NUL, the diff; no NUL at
# all when `add` failed.
CHAIN = ('out=$(git add -A -v -- :/ ":(top,exclude).shift" 2>&1) || { printf "%s\\n" "$out"; exit 1; }; '
         'printf "%s\\n\\0" "$out"; [ -n "$out" ] || exit 0; t=$(git write-tree 2>/dev/null) || exit 1; '
         'printf "%s\\n" "$t"; read -r g k || exit 1; [ -n "$g" ] && [ "$t" != "$k" ] && printf "\\0" && '
         'exec git diff-index --cached -r -z --no-renames "$g" 2>/dev/null')


def tree(repo: Repo, against: str | None = None) -> str:
    """`repo.worktree_tree()`, from the kept index when it still answers. `against`: a tree the caller compares the
    result with (a checkpoint's): when `write-tree` runs, `git diff-index --cached` against it runs beside it in the
    same index, and its answer is kept as git/record.py's last diff of the two trees (`_start_diff`; or the chain
    `prestart` started made both)."""
    folder = os.path.join(str(repo.git_dir), "shift")
    kept, record = os.path.join(folder, INDEX), os.path.join(folder, RECORD)
    sources = _sources(str(repo.git_dir), str(repo.common_dir), repo.index_path())
    if sources is None:
        return repo.worktree_tree()
    known = _read(record)
    env = add_env(kept)
    began = _BEFORE.pop(kept, None)
    ready = rawgit.started(["-c", CHAIN], env, repo.root) if began is not None else None
    before = began[0] if began is not None and ready is not None else _stamp(kept)  # the index `add` began with
    if known is not None and known[0] == before + sources:
        chained: tuple[str | None, bytes | None] = (None, None)
        if ready is not None:
            code, out, chained = _chain_parts(*rawgit.communicate(ready, None)[:2])
        else:
            code, out = rawgit.run(["-C", str(repo.root), *ADD], env)
        if code == 0 and _stamp(kept) + sources == known[0]:
            return known[1]
        if code == 0 and not any(name in out for name in REBUILD_NAMES) and chained[0] is not None:
            _write(record, _stamp(kept) + sources, chained[0])  # the chain's write-tree (and diff) ran meanwhile
            if chained[1] is not None and began is not None and against and against == began[1][0]:
                memo.replace(os.path.join(folder, DIFF_MEMO), f"{against} {chained[0]}\n".encode() + chained[1])
            return chained[0]
        if code == 0 and not any(name in out for name in REBUILD_NAMES):
            diff = _start_diff(repo, env, against) if out.strip() else None  # add said nothing: the same entries,
            # new file stamps only, so the same tree, whose diff the last one may be (git/record.py remembers it)
            code, out = rawgit.run(["-C", str(repo.root), "write-tree"], env)
            found = out.decode("ascii", "replace").strip()
            if code == 0 and len(found) in (40, 64):
                _write(record, _stamp(kept) + sources, found)
                _finish_diff(repo, diff, against, found)
                return found
            _finish_diff(repo, diff, against, None)
    if ready is not None and ready.returncode is None:
        rawgit.communicate(ready, None)  # it holds the kept index's lock: done before a build replaces that index
    _remove(record)  # no record of an index this build may fail to replace
    built = repo.start_worktree_tree().result(keep=kept)
    _write(record, _stamp(kept) + sources, built)
    return built


DIFF_INDEX = ["diff-index", "--cached", "-r", "-z", "--no-renames"]  # the kept index against a tree: what
# `diff-tree -r -z --no-renames TREE <the index's tree>` says (repo.DIFF_TREE), without waiting for write-tree


def _start_diff(repo: Repo, env: dict[str, str], against: str | None) -> tuple[int, list[int]] | None:
    """`diff-index --cached` of the kept index against `against`, started (None: no tree to compare with, a sparse
    checkout, whose index may hold directories, or no process)."""
    if not against or _sparse(str(repo.common_dir), str(repo.git_dir)):
        return None
    try:
        return rawgit.spawn(["-C", str(repo.root), *DIFF_INDEX, against], env, stderr="null")
    except OSError:
        return None


def _finish_diff(repo: Repo, diff: tuple[int, list[int]] | None, against: str | None, found: str | None) -> None:
    """Wait for the started diff; kept (git/record.py's DIFF_MEMO) when it and write-tree (`found`) succeeded."""
    if diff is None:
        return
    pid, (to_git, from_git) = diff
    os.close(to_git)
    with open(from_git, "rb") as stdout:
        raw = stdout.read()
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code == 0 and found is not None and against:
        memo.replace(os.path.join(str(repo.git_dir), "shift", DIFF_MEMO), f"{against} {found}\n".encode() + raw)


def _sparse(common_dir: str, git_dir: str) -> bool:
    """Whether the config may make the index sparse (directories as entries, which diff-tree never lists)."""
    for path in (os.path.join(common_dir, "config"), os.path.join(git_dir, "config.worktree")):
        try:
            with open(path, "rb") as handle:
                if b"sparse" in handle.read().lower():
                    return True
        except OSError:
            continue
    return False


def prestart(cwd: str) -> None:
    """For an agent hook about to start in `cwd`: `Repo.open`'s rev-parse, and the kept index's `add` when `cwd` is
    the top of a work tree that has one (an agent runs its hooks there)."""
    try:
        rawgit.prestart([OPEN], dict(os.environ))
        kept = os.path.join(cwd, ".git", "shift", INDEX)
        folder = kept[:-len(INDEX)]
        if not os.environ.get("GIT_DIR") and os.path.exists(kept) and os.path.exists(folder + RECORD):
            before = _stamp(kept)  # the index `add` begins with: taken before it starts
            started = rawgit.prestart([["-c", CHAIN]], add_env(kept), stderr="stdout", program="sh")  # as `run`: a
            # warning per file fills no pipe
            git_dir = os.path.dirname(folder.rstrip(os.sep))
            try:  # a hint only: nothing here may keep the hook from running (it fails open)
                guess = ("", "") if _sparse(git_dir, git_dir) else _guess(cwd, folder)  # no diff of a sparse index
            except Exception:
                guess = ("", "")
            _BEFORE[kept] = (before, guess)
            try:  # read by the chain once write-tree is done (`add` runs meanwhile)
                started[0].stdin.write(f"{guess[0]} {guess[1]}\n".encode("ascii", "replace"))
                started[0].stdin.flush()
            except OSError:  # it ended early (add failed): the hook finds out
                pass
    except OSError:  # no git, no pipes: the hook runs them itself, and says why
        return


def _chain_parts(code: int, out: bytes) -> tuple[int, bytes, tuple[str | None, bytes | None]]:
    """(add's exit status, its output, (the tree write-tree wrote, the diff against the guess)) from CHAIN's answer;
    None for what did not run or failed."""
    added, sep, rest = out.partition(b"\0")
    if not sep:
        return code or 1, out, (None, None)
    tree_part, sep, diff = rest.partition(b"\0")
    found = tree_part.decode("ascii", "replace").strip()
    tree = found if len(found) in (40, 64) and not found.strip("0123456789abcdef") else None
    return 0, added, (tree, diff if tree is not None and sep and code == 0 else None)


def _guess(cwd: str, folder: str) -> tuple[str, str]:
    """The tree an end of turn will compare the work tree with: the latest checkpoint's, read from the active run's
    ledger (SHIFT_RUN, else this worktree's pointer); else the one the last kept diff compared with when that diff
    was of the recorded tree, else the recorded tree. And the tree the kept diff compared it with (the chain need
    not diff those two again). "" for none. A wrong guess costs the hook its own diff, nothing else: the hook keeps
    the chain's diff only for the tree it compares with."""
    known = _read(folder + RECORD)
    try:
        with open(folder + DIFF_MEMO, "rb") as handle:
            old, _, new = handle.read(160).partition(b"\n")[0].decode("ascii", "replace").partition(" ")
    except OSError:
        old = new = ""
    guess = _checkpoint_tree(cwd, folder)
    if guess is None and known is not None:
        guess = old if old and new == known[1] else known[1]
    return (guess or "", new if guess and old == guess else "")


def _checkpoint_tree(cwd: str, folder: str) -> str | None:
    run = os.environ.get("SHIFT_RUN")
    if not run:
        try:
            with open(folder + "active", encoding="utf-8") as handle:
                run = handle.read().strip()
        except (OSError, ValueError):
            return None
    if not run or "/" in run or run.startswith("."):
        return None
    from shiftgit import rawjson

    try:
        with open(os.path.join(cwd, ".shift", "runs", run, "ledger.json"), "rb") as handle:
            document = rawjson.loads(handle.read())
    except (OSError, ValueError):
        return None
    point = document.get("checkpoint") if isinstance(document, dict) else None
    tree = point.get("tree") if isinstance(point, dict) else None
    return tree if isinstance(tree, str) and len(tree) in (40, 64) and not tree.strip("0123456789abcdef") else None


def add_env(kept: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    env["GIT_INDEX_FILE"] = kept
    return env


def _sources(git_dir: str, common_dir: str, index: object) -> str | None:
    """The state of what a build reads besides the work tree; None when it reads files not listed here."""
    home = os.environ.get("HOME", "")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    configs = [os.path.join(common_dir, "config"), os.path.join(git_dir, "config.worktree"),
               os.environ.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"),
               os.path.join(xdg, "git", "config")]
    if not os.environ.get("GIT_CONFIG_NOSYSTEM"):
        configs.append(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    for path in configs:
        try:
            with open(path, "rb") as handle:
                text = handle.read().lower()
        except OSError:
            continue
        if any(word.encode() in text for word in UNFOLLOWED):
            return None
    files = [str(index), os.path.join(common_dir, "info", "exclude"), os.path.join(common_dir, "info", "attributes"),
             os.path.join(xdg, "git", "ignore"), os.path.join(xdg, "git", "attributes"), *configs]
    settings = sorted((k, v) for k, v in os.environ.items() if k.startswith("GIT_CONFIG"))
    return "|" + "|".join(_stamp(path) for path in files) + f"|{settings}"


def _stamp(path: str) -> str:
    try:
        info = os.stat(path)
    except OSError:
        return "-"
    return f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


def _read(path: str) -> tuple[str, str] | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            key, tree, *_ = handle.read().split("\n")
    except (OSError, ValueError):
        return None
    return key, tree


def _write(path: str, key: str, tree: str) -> None:
    """Memory, not record (shiftgit/memo.py): a failure only costs the next call a build."""
    memo.replace(path, f"{key}\n{tree}\n".encode("utf-8", "surrogateescape"))


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
