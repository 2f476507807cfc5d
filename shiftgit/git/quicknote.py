"""A commit's handoff note the fast way: the gate (pre-commit) prepares it, post-commit only writes it.

The note and its record (git/handoff.py) are a pure function of the commit's ledger changes against its first
parent, and the gate holds those ledgers when it passes. So it renders both then (or finds them rendered by
the checkpoint: git/prenote.py), into `<git-dir>/shift/handoff`, keyed by those changes: for each valid run's
ledger whose blob changed, its blob id before and after and its path. Post-commit compares the key with what
the commit really changed (`git diff-tree` against the first parent: the shim's, in SHIFT_HOOK_DIFF, else its
own) and, when they agree, writes both notes refs in one compare-and-swap: it reads with one `cat-file --batch`
(git/waiter.py's child has the gate's), writes the blobs, trees and commits as loose objects itself
(`unpack-objects` of one pack where the config may ask git for more), and moves both refs in the files
(git/refswap.py; else by one `update-ref --stdin`, which the child starts before the commit is made).
Its imports are os, zlib and a sha module: no subprocess (it loads re and locale; processes start with
`os.posix_spawnp`), no json, no pathlib. Both notes commits, and their reflog lines, carry the annotated
commit's own committer line (name, email, date), where git would have put the same identity a moment later.

Anything else goes the general way (hooks.post_commit, which reads the ledgers and writes through
notes.write_handoff, with its retries): no prepared note or another key (`commit --no-verify`, a hook
that changed the index after ours, SHIFT_SKIP), GIT_DIR set, a notes tree not in plain 2-hex fanout,
a lost swap, a git failure. The key holds everything the note depends on, so a prepared note left by
an earlier, aborted commit is still right for any commit with the same key.
"""

from __future__ import annotations

import os

from shiftgit.git import refswap
from shiftgit.git.rawgit import (
    TREE,
    CatFile,
    Process,
    commit_body,
    communicate,
    object_id,
    pack,
    parse_tree,
    run,
    tree_body,
    write_loose,
)
from shiftgit.git.rawledger import is_run_id
from shiftgit.git.spares import Spares
from shiftgit.objectdir import object_dir

TYPE_CHECKING = False  # typing costs ~4 ms to import
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from shiftgit.git import notestree
    from shiftgit.git.looseread import Loose

    Cat = CatFile | notestree.CatFile | Loose  # this module's, or the gate's handed over (git/waiter.py)

PREPARED = "handoff"  # <git-dir>/shift/handoff
MAGIC = b"shiftgit handoff 1"  # then the pid of the `git commit` the gate ran under
NOTES_REF = "refs/notes/shift"  # = notes.NOTES_REF (not imported: this path stays light)
DATA_REF = "refs/notes/shift-data"  # = notes.DATA_REF
DIFF_VAR = "SHIFT_HOOK_DIFF"
_RUNS = ".shift/runs/"
_LEDGER = "/ledger.json"
_HEX = frozenset("0123456789abcdef")
_NOTE = "100644"
_REPO_VARS = ("GIT_DIR", "GIT_WORKTREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_PREFIX",
              "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES")


# -- the key and the prepared note ------------------------------------------------------------------

def ledger_path(run: str) -> str:
    return f"{_RUNS}{run}{_LEDGER}"


def ledger_run(path: str) -> str | None:
    """The run of `.shift/runs/<run>/ledger.json` when <run> is a valid run id, else None."""
    if not (path.startswith(_RUNS) and path.endswith(_LEDGER)):
        return None
    run = path[len(_RUNS):-len(_LEDGER)]
    return run if is_run_id(run) else None


def key(changes: Iterable[tuple[str, str | None, str | None]], width: int) -> list[str]:
    """The key of (path, old blob, new blob) changes: "old new path" for valid runs' changed ledgers, sorted."""
    zero = "0" * width
    return sorted(f"{old or zero} {new or zero} {path}" for path, old, new in changes
                  if ledger_run(path) and (old or zero) != (new or zero))


def prepare(gitdir: str | os.PathLike[str], lines: list[str], note: str, data: str, pid: int | None = None) -> None:
    """Leave the note of the commit about to be made for post-commit (written whole, then renamed); `pid`: the
    `git commit` whose gate prepared it (default: our parent's; 0: none, a checkpoint's `prerender`)."""
    if not lines:
        return
    body = [note.encode("utf-8"), data.encode("utf-8")]
    text = (b"%s %d\n" % (MAGIC, os.getppid() if pid is None else pid) + "".join(f"{line}\n" for line in lines).encode()
            + b"\n%d %d\n" % tuple(map(len, body)))
    folder = os.path.join(gitdir, "shift")
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, PREPARED)
    tmp = f"{target}.{os.getpid()}.tmp"
    with open(tmp, "wb") as out:
        out.write(text + b"".join(body))
    os.replace(tmp, target)


def read_prepared(gitdir: str) -> tuple[list[str], str, str] | None:
    """(key, note, record) prepared by the gate, or None (absent, unreadable, another format)."""
    try:
        with open(os.path.join(gitdir, "shift", PREPARED), "rb") as src:
            raw = src.read()
        first, _, rest = raw.partition(b"\n")
        head, sep, rest = rest.partition(b"\n\n")
        sizes, _, texts = rest.partition(b"\n")
        note, data = (int(n) for n in sizes.split())
        if first.split()[:3] != MAGIC.split() or not sep or len(texts) != note + data:
            return None
        return head.decode().splitlines(), texts[:note].decode("utf-8"), texts[note:].decode("utf-8")
    except (OSError, ValueError):
        return None


def parse_diff(text: str) -> tuple[str, list[str]] | None:
    """(commit, key) from `git diff-tree -r --root HEAD -- .shift/runs` (its first line names the commit);
    None when a ledger path holds a submodule (the general way judges that)."""
    lines = text.splitlines()
    commit = lines[0].strip() if lines else ""
    if len(commit) not in (40, 64) or not _HEX.issuperset(commit):
        return None
    changes = []
    for line in lines[1:]:
        meta, tab, path = line.partition("\t")
        fields = meta.split(" ")
        if not tab or len(fields) != 5 or not ledger_run(path):
            continue
        if "160000" in (fields[0].lstrip(":"), fields[1]):
            return None
        changes.append((path, fields[2], fields[3]))
    return commit, key(changes, len(commit))


# -- post-commit ------------------------------------------------------------------------------------

def post_commit(environ: Mapping[str, str] | None = None) -> bool:
    """Write the prepared note of HEAD if it is the right one; False: nothing done, go the general way."""
    env = os.environ if environ is None else environ
    if env.get("SHIFT_SKIP") or env.get("GIT_DIR") or not hasattr(os, "posix_spawnp"):
        return False
    gitdir = _git_dir()
    prepared = read_prepared(gitdir) if gitdir and os.path.isfile(".shift/config.json") else None
    if prepared is None:
        return False
    lines, note, data = prepared
    diff = env.get(DIFF_VAR)
    found = parse_diff(diff) if diff is not None else None
    if diff is not None and (found is None or found[1] != lines):
        return False
    return write_checked(lines, note, data, env, found[0] if found else None)


def write_checked(lines: list[str], note: str, data: str, environ: Mapping[str, str], commit: str | None = None,
                  cat: Cat | None = None, refs: Process | None = None, spares: Spares | None = None) -> bool:
    """Write a prepared note on HEAD when its key is what HEAD changed (read from HEAD's trees unless the shim's
    diff named `commit` with that key); False: nothing done. Also git/waiter.py's child, once woken, with the
    `cat` (the gate's, or from `cat_file`), `refs` (from `ref_updates`) and `spares` it holds while it waits."""
    git_env = git_environ(environ)
    try:
        with cat or CatFile(git_env) as objects:
            return _write(objects, commit, lines, note.encode("utf-8"), data.encode("utf-8"), git_env, refs, spares)
    except (OSError, ValueError):
        return False


def store_blobs(lines: list[str], note: str, data: str, environ: Mapping[str, str]) -> None:
    """Write the blobs of a prepared note and its record now: they need no commit id, so git/waiter.py's child writes
    them before the commit is made, and once woken `write_checked` adds only the trees and commits (an object
    already there is not written again). A blob no commit comes to name is left for git's gc, as git leaves one."""
    width = len(lines[0].split(" ", 1)[0]) if lines else 40  # the key's blob ids: the repository's hash
    _store([("blob", text.encode("utf-8")) for text in (note, data)], width, git_environ(environ))


def git_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of this module's git processes: the repository found from the work tree, git speaks C."""
    return {**{k: v for k, v in environ.items() if k not in _REPO_VARS}, "LC_ALL": "C"}


def cat_file(environ: Mapping[str, str]) -> CatFile:
    """A `git cat-file --batch` to pass to `write_checked` (it reads refs and objects afresh at each request)."""
    return CatFile(git_environ(environ))


def spares(environ: Mapping[str, str], refs: bool) -> Spares | None:
    """Files made ahead (git/spares.py) for the trees and commits `write_checked` writes loose, and for the locks of
    the notes refs it moves itself (REFS); None where git writes the objects."""
    objects_dir = object_dir(refswap.common_dir(_git_dir()), git_environ(environ))
    return Spares(objects_dir, {0o444: 6, 0o666: 2 if refs else 0}) if objects_dir else None


def ref_updates(environ: Mapping[str, str]) -> Process:
    """A `git update-ref --stdin` for `write_checked` where `refs_in_files` is False: it swaps all the updates at the
    end of its input (each old value checked under its lock), none when it got none; no commit id in its message."""
    return Process(["update-ref", "-m", "shiftgit: handoff", "--stdin"], git_environ(environ))


def _git_dir() -> str | None:
    """This worktree's git dir (git runs the hook at the top of the work tree), or None."""
    if os.path.isdir(".git"):
        return ".git"
    try:
        with open(".git", encoding="utf-8") as src:
            text = src.read().strip()
    except (OSError, UnicodeError):
        return None
    return text[len("gitdir:"):].strip() if text.startswith("gitdir:") else None


def refs_in_files(environ: Mapping[str, str]) -> bool:
    """Whether `write_checked` moves the notes refs itself (git/refswap.py): no `update-ref` to start for it."""
    common = refswap.common_dir(_git_dir())
    return bool(common) and refswap.in_files(common or "", [NOTES_REF, DATA_REF], environ, os.getcwd())


def _write(cat: Cat, commit: str | None, lines: list[str], note: bytes, data: bytes,
           env: dict[str, str], refs: Process | None, spares: Spares | None = None) -> bool:
    """Write the notes of HEAD (`commit`, when the shim's diff named it; else its key is read from its trees). Two
    round trips to `cat`: HEAD and the notes refs, then every tree this reads (`_tree_names`)."""
    head, *tips = cat.get(["HEAD", NOTES_REF, DATA_REF])
    if head is None or head[1] != "commit" or head[0] != (commit or head[0]):
        return False
    checked, commit = commit is not None, head[0]
    width = len(commit)
    ident = _committer(head[2])
    wanted = [(ref, tip[0] if tip else None) for ref, tip in zip((NOTES_REF, DATA_REF), tips, strict=True)]
    if any(tip is not None and tip[1] != "commit" for tip in tips) or ident is None:
        return False
    names = [name for _, tip in wanted if tip for name in (f"{tip}^{{tree}}", f"{tip}:{commit[:2]}")]
    trees = [] if checked else _tree_names(commit, lines)
    found = cat.get(names + trees)
    if trees and _tree_key(cat, commit, dict(zip(trees, found[len(names):], strict=True))) != lines:
        return False
    answers = iter(found[:len(names)])
    blobs = {ref: (object_id("blob", body, width), body) for ref, body in ((NOTES_REF, note), (DATA_REF, data))}
    message = f"shiftgit: handoff of {commit[:12]}".encode()
    objects: list[tuple[str, bytes]] = []
    swaps: list[tuple[str, str, str | None]] = []
    for ref, tip in wanted:
        root, sub = (next(answers), next(answers)) if tip else (None, None)
        planned = _plan(commit, blobs[ref][0], root, sub, width)
        if planned is None:
            return False
        if not planned:
            continue  # the note is there already
        objects.append(("blob", blobs[ref][1]))
        objects += [("tree", body) for body in planned]
        body = commit_body(planned[-1], width, tip, ident, ident, message + b"\n")
        objects.append(("commit", body))
        swaps.append((ref, object_id("commit", body, width), tip))
    if not swaps:
        return True
    if not _store(objects, width, env, spares):
        return False
    if refs is None and refs_in_files(env):  # no update-ref: git/refswap.py
        moved = refswap.swap(refswap.common_dir(_git_dir()) or "", swaps, ident, message.decode(), spares)
        if moved is not None:
            return moved
    text = "".join(f"update {ref} {new} {old or '0' * width}\n" for ref, new, old in swaps).encode()
    if refs is not None:
        return communicate(refs, text)[0] == 0
    return run(["update-ref", "-m", message.decode(), "--stdin"], env, text)[0] == 0


def _store(objects: list[tuple[str, bytes]], width: int, env: dict[str, str], spares: Spares | None = None) -> bool:
    """Put the objects into the repository (at the top of its work tree): written loose here, one git process
    less, where shiftgit may write them itself (objectdir.py); else through `git unpack-objects`."""
    common = refswap.common_dir(_git_dir())
    try:
        if common is None:
            raise OSError("no git dir")
        objects_dir = object_dir(common, env)
        if objects_dir is None:
            raise OSError("git writes the objects")
        write_loose(objects, width, objects_dir, spares)
        return True
    except (OSError, UnicodeError):
        rc, _ = run(["unpack-objects", "-q"], env, pack(objects, width))
        return rc == 0


def _tree_names(commit: str, lines: list[str]) -> list[str]:
    """The trees `_tree_key` reads: `.shift/runs` in `commit` and in its first parent, and the folder of each run the
    key names in both (what a commit so keyed changed; were the key wrong, `_tree_key` reads the rest)."""
    runs = sorted({run for line in lines if (run := ledger_run(line.split(" ", 2)[-1]))})
    return [f"{commit}{side}:{_RUNS}{run}".rstrip("/") for side in ("", "^") for run in ("", *runs)]


def _tree_key(cat: Cat, commit: str, read: Mapping[str, tuple[str, str, bytes] | None] | None = None,
              ) -> list[str] | None:
    """The key of what `commit` changed in valid runs' ledgers against its first parent, read from the trees
    (what `git diff-tree -r` would list), `read` holding those `_tree_names` named (else read here); None when a
    ledger path holds a tree or a submodule."""
    width = len(commit)
    if read is None:
        names = _tree_names(commit, [])
        read = dict(zip(names, cat.get(names), strict=True))
    new, old = (_listing(read.get(f"{commit}{side}:{_RUNS[:-1]}"), width) for side in ("", "^"))
    runs = sorted(r for r in new.keys() | old.keys() if new.get(r) != old.get(r) and ledger_run(f"{_RUNS}{r}{_LEDGER}"))
    trees = sorted({side[r][1] for r in runs for side in (old, new) if r in side and side[r][0] == TREE})
    listed = {answer[0]: _listing(answer, width) for answer in read.values() if answer is not None}
    missing = [oid for oid in trees if oid not in listed]
    listed.update({oid: _listing(answer, width) for oid, answer in zip(missing, cat.get(missing), strict=True)})
    changes = []
    for name in runs:
        ends = []
        for side in (old, new):
            entry = listed.get(side[name][1], {}).get(_LEDGER[1:]) if side.get(name, ("",))[0] == TREE else None
            if entry is not None and entry[0] in (TREE, "160000"):
                return None
            ends.append(entry[1] if entry else None)
        changes.append((f"{_RUNS}{name}{_LEDGER}", ends[0], ends[1]))
    return key(changes, width)


def _listing(answer: tuple[str, str, bytes] | None, width: int) -> dict[str, tuple[str, str]]:
    return parse_tree(answer[2], width) if answer is not None and answer[1] == "tree" else {}


def _committer(commit: bytes) -> bytes | None:
    for line in commit.split(b"\n\n", 1)[0].split(b"\n"):
        if line.startswith(b"committer "):
            return line[len(b"committer "):]
    return None


def _plan(commit: str, blob: str, root: tuple[str, str, bytes] | None, sub: tuple[str, str, bytes] | None,
          width: int) -> list[bytes] | None:
    """The new fanout subtree and root tree bodies ([] if the note is there already); None when the notes tree
    is not in plain 2-hex fanout (flat notes at the root, deeper fanout): notes.write_handoff rewrites it."""
    top = parse_tree(root[2], width) if root else {}
    prefix, rest = commit[:2], commit[2:]
    if any(len(name) == width and _HEX.issuperset(name) for name in top):
        return None
    if prefix in top and (top[prefix][0] != TREE or sub is None or sub[1] != "tree"):
        return None
    below = parse_tree(sub[2], width) if sub and prefix in top else {}
    if any(mode == TREE for mode, _ in below.values()):
        return None
    if below.get(rest) == (_NOTE, blob):
        return []
    below[rest] = (_NOTE, blob)
    sub_body = tree_body(below)
    top[prefix] = (TREE, object_id("tree", sub_body, width))
    return [sub_body, tree_body(top)]
