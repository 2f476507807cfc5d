"""Git hook entry points: the commit gate, trailers, handoff notes. The I/O around pure rules.

The shims run `python -S` and land in `run_hook` (through `__main__.hook_main`) without importing click; the modules
used here import only the stdlib (jsonschema loads only for a ledger blob shiftgit never validated, and site with
it). Hooks read the index git hands them (`GIT_INDEX_FILE`), never modify a tracked file, and never stash, reset or
check out anything. Git processes per checkpointed commit: pre-commit 1 (`diff-index`, started before the imports;
objects come from the loose files, git/looseread.py, else one `cat-file --batch`; `config` where the config files
do not settle the trailer settings); commit-msg 0 or 1 (the shim appends the trailers to a plain message, else
`interpret-trailers`; this module's commit-msg serves the pre-commit framework and SHIFT_SKIP); post-commit 0 when
the gate's waiting child writes the note (git/waiter.py, git/quicknote.py, git/prenote.py), else 3 (`diff-tree`,
`cat-file`, `update-ref`). `post_commit` here is the general way (notes.write_handoff) for any other commit.
"""

from __future__ import annotations

import os
import sys

from shiftgit.errors import ShiftError
from shiftgit.git import fence, gate, looseread, trailerconf, waiter
from shiftgit.git import view as gitview
from shiftgit.git.context import Context
from shiftgit.git.rawledger import checkpoint_of
from shiftgit.git.view import Objects
from shiftgit.ledger import validated

TYPE_CHECKING = False  # typing and pathlib cost ~4 and ~5 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import TextIO

BLOCKING = ("pre-commit", "commit-msg", "pre-push")  # their failure stops the commit or the push
ARCHIVE_REF = "refs/shift/archive"  # = ledger.store.ARCHIVE_REF (not imported: the commit path stays light)
TRAILERS = "trailers"  # <git-dir>/shift/trailers: the parent pid of the pre-commit that passed [plain], then trailers


def run_hook(name: str, args: list[str], *, cwd: str | Path | None = None, environ: Mapping[str, str] | None = None,
             stdin: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run one git hook; its exit code (only pre-commit and commit-msg ever refuse)."""
    env = os.environ if environ is None else environ
    err = stderr or sys.stderr
    try:
        root = _root(os.fspath(cwd or os.getcwd()), env)
    except ShiftError as exc:  # run by hand outside a work tree, or in a bare repository: nothing to judge
        print(f"shiftgit {name}: not inside a git work tree, nothing to do ({_line(str(exc))})", file=err)
        return 0
    ctx = Context(root, env, args, stdin or sys.stdin, err)
    handler = HANDLERS.get(name)
    try:
        if handler is None or not ctx.initialized():
            return 0
        return handler(ctx)
    except (ShiftError, OSError, UnicodeError) as exc:  # one line; a blocking hook refuses, the others let go
        ctx.say(f"shiftgit {name}: {_line(str(exc))}")
        return 1 if name in BLOCKING else 0


def _line(text: str) -> str:
    from shiftgit import textsafe

    return textsafe.one_line(text, 600)


def _root(cwd: str, environ: Mapping[str, str]) -> str:
    """Git runs hooks at the top of the work tree; a hand-run hook may be below it."""
    if environ.get("GIT_DIR") or os.path.exists(os.path.join(cwd, ".git")):
        return cwd
    return gitview.git(cwd, gitview.hook_env(environ), "rev-parse", "--show-toplevel").strip()


# -- pre-commit: the gate ---------------------------------------------------------------------------

def pre_commit(ctx: Context) -> int:
    reason = ctx.environ.get("SHIFT_SKIP")
    if reason:
        ctx.say(f"shiftgit: commit gate skipped (SHIFT_SKIP): {reason} — the reason goes into this commit's note")
        return 0
    gitdir = gitview.git_dir(ctx.root, ctx.environ)
    run = gitview.active_run(ctx.root, gitdir, ctx.environ)
    if run is None:
        return _scan_ledgers(ctx, gitdir)
    changes: list[tuple[str, str | None, str | None]] = []
    with Objects(ctx.root, ctx.env, looseread.for_hook(ctx.root, gitdir, ctx.environ, ctx.env)) as objects:
        staging = read_staging(ctx, gitdir, run, objects, changes)

        def rest() -> tuple[list[str], str, str] | None:  # once the gate passed
            _remember_validated(gitdir, staging)
            return _prepare_note(gitdir, staging, changes)

        problems = gate.judge(staging)
        if problems:
            ctx.say(gate.render(staging, problems))
            return 1
        ledger = staging.ledgers[run]  # all of its own work before the fork: each page it writes after is copied
        trailerconf.leave(os.path.join(gitdir, "shift", TRAILERS), trailers(run, ledger.staged, ledger.head,
                                                                            staging.config),
                          trailerconf.plain_trailer_config(ctx.env, ctx.root))
        passed = waiter.leave(gitdir, rest, ctx.environ, changes, objects.cat)  # forked once it passed: see there
    (passed or rest)()  # the child does the rest and writes the note: git goes on
    return 0


def _prepare_note(gitdir: str, staging: gate.Staging,
                  changes: list[tuple[str, str | None, str | None]]) -> tuple[list[str], str, str] | None:
    """The commit's handoff note, from the ledgers the gate holds (or as the checkpoint rendered it: git/prenote.py),
    prepared for post-commit to write (git/quicknote.py); post-commit renders it itself when this is missing or keyed
    otherwise. Returns (key, note, record), or None when there is no note to prepare."""
    from shiftgit.git import prenote  # in the child git/waiter.py forks, when it is there

    return prenote.note_of(gitdir, changes, lambda runs: {run: (staging.ledgers[run].head, staging.ledgers[run].staged)
                                                          for run in runs})


def _scan_ledgers(ctx: Context, gitdir: str) -> int:
    """No active run here: no gate, but no staged ledger may carry a secret into git either."""
    env = ctx.env
    with Objects(ctx.root, env) as objects:
        head, changes = gitview.staged_on_head(objects, ctx.root, env)
        touched = [(name, c) for c in changes if (name := gitview.ledger_run(c.path)) and c.new]
        blobs = objects.read([c.new for _, c in touched if c.new])
    ledgers = [gate.Ledger(run, c.path, data, c.new, None, True) for (run, c), data in zip(touched, blobs, strict=True)]
    _, clean, written = validated.marks_of(gitdir, {x.blob: x.staged for x in ledgers if x.blob})  # as the gate
    problems = gate.secret_problems([x for x in ledgers if x.blob not in clean], written)
    if problems:
        ctx.say(gate.render_secrets(problems))
        return 1
    fenced = [p for ledger in ledgers for p in gate.fenced_ledger(ledger, _claim(ctx, ledger.run))]
    if fenced:
        ctx.say(gate.render(gate.Staging(fenced[0].details[0], None, {}, {}, {}), fenced))
        return 1
    return 0


def _claim(ctx: Context, run: str) -> fence.Claim | None:
    return fence.newest(lambda *argv: gitview.git(ctx.root, ctx.env, *argv), run)


def read_staging(ctx: Context, gitdir: str, run: str, objects: Objects,
                 ledger_changes: list[tuple[str, str | None, str | None]] | None = None) -> gate.Staging:
    """The index git hands the hook as the gate needs it (a diff-index, `objects`); `ledger_changes` gets each staged
    ledger's (path, HEAD's blob, staged blob)."""
    head, changes = gitview.staged_on_head(objects, ctx.root, ctx.env)
    objects.note_staged(changes)
    paths = {c.path: c.new for c in changes if not gitview.is_shift_path(c.path)}
    touched = {name: c for c in changes if (name := gitview.ledger_run(c.path))}
    if ledger_changes is not None:
        ledger_changes += [(c.path, c.old, c.new) for c in touched.values()]
    own = f"{fence.LEDGERS}{run}"  # the config, the published ledger and its commit: read with the ledgers
    ledgers, (config, published, tip) = _ledgers(objects, run, touched,
                                                 [f":{gitview.CONFIG}", f"{own}:ledger.json", own])
    claim = _claims(objects, run, gitview.parse_config(config), tip) if paths else None
    worktree = os.path.join(ctx.root, gitview.ledger_path(run))
    checked, clean, written = validated.marks_of(gitdir, {x.blob: x.staged for x in ledgers.values() if x.blob})
    return gate.Staging(run=run, head=head, paths=paths, ledgers=ledgers, config=gitview.parse_config(config),
                        validated=checked, clean=clean, written=written,
                        worktree_ledger=_read(worktree) if os.path.isfile(worktree) else None, newest_claim=claim,
                        published=published)


def _claims(objects: Objects, run: str, config: Mapping[str, object], tip: bytes | None) -> fence.Claim | None:
    """The newest owner epoch on this clone's ledger ref (its commit: `tip`) and the publish remote's fetched copy."""
    refs, data = [f"{fence.LEDGERS}{run}"], [tip]
    remote = config.get("publish")
    if isinstance(remote, str) and remote:
        refs.append(f"{fence.TRACKING}{remote}/shift/ledgers/{run}")
        data += objects.read(refs[1:])
    found = [fence.claim_of_commit(ref, commit) for ref, commit in zip(refs, data, strict=True)]
    claims = [c for c in found if c is not None]
    return max(claims, key=lambda c: c.epoch) if claims else None


def _ledgers(objects: Objects, run: str, touched: Mapping[str, gitview.Change],
             also: list[str]) -> tuple[dict[str, gate.Ledger], list[bytes | None]]:
    """Staged and HEAD versions of every changed ledger, and of the active run's in any case; and what `also` names,
    in the same round trip."""
    wanted: list[tuple[str, str | None, str | None]] = [(r, c.new, c.old) for r, c in sorted(touched.items())]
    names = [n for _, new, old in wanted for n in (new, old) if n]
    if run not in touched:
        names.append(f":{gitview.ledger_path(run)}")
    deleted = [f"{ARCHIVE_REF}:{r}/ledger.json" for r, new, _ in wanted if not new]  # finished: archived?
    keys = names + deleted
    answers = objects.read(keys + also)
    found = dict(zip(keys, answers[:len(keys)], strict=True))
    ledgers = {r: gate.Ledger(r, gitview.ledger_path(r), found.get(new) if new else None, new,
                              found.get(old) if old else None, True,
                              None if new else found.get(f"{ARCHIVE_REF}:{r}/ledger.json"))
               for r, new, old in wanted}
    if run not in touched:
        same = found[f":{gitview.ledger_path(run)}"]
        from shiftgit.ledger.validated import blob_id  # sha1: the validated file lists both ids of a ledger

        blob = blob_id(same) if same is not None else None
        ledgers[run] = gate.Ledger(run, gitview.ledger_path(run), same, blob, same, False)
    return ledgers, answers[len(keys):]


def _remember_validated(gitdir: str, staging: gate.Staging) -> None:
    """Ledgers the gate just schema-checked need no second check (a refused commit is often retried)."""
    fresh = [ledger.staged for ledger in staging.ledgers.values()
             if ledger.staged is not None and ledger.blob not in staging.validated]
    if fresh:
        validated.record(gitdir, fresh)


# -- commit-msg: Shift-Run / Shift-Checkpoint trailers ----------------------------------------------

def trailers(run: str, staged: bytes | None, head: bytes | None, config: Mapping[str, object]) -> list[str]:
    """The trailers of a commit whose staged ledger carries a checkpoint HEAD's does not (config `trailers`)."""
    point, before = (checkpoint_of(gate.parsed_ledger(data)) for data in (staged, head))  # as the gate parsed them
    if not config.get("trailers", True) or point is None or (before and before.get("id") == point.get("id")):
        return []
    return [f"Shift-Run: {run}", f"Shift-Checkpoint: {point['id']}"]


def commit_msg(ctx: Context) -> int:
    """Add the trailers (the shim does it without Python when pre-commit left them; this is the rest)."""
    gitdir = gitview.git_dir(ctx.root, ctx.environ)
    run = gitview.active_run(ctx.root, gitdir, ctx.environ)
    if not ctx.args or run is None:
        return 0
    message = os.path.join(ctx.root, ctx.args[0])
    if not _has_content(_read(message) or b""):
        return 0  # an empty message aborts the commit: a trailer must not rescue it
    path = gitview.ledger_path(run)
    with Objects(ctx.root, ctx.env) as objects:
        staged, head, config = objects.read([f":{path}", f"HEAD:{path}", f":{gitview.CONFIG}"])
    lines = trailers(run, staged, head, gitview.parse_config(config))
    if lines:
        args = [a for line in lines for a in ("--trailer", line)]
        gitview.git(ctx.root, ctx.env, "interpret-trailers", "--in-place", "--if-exists", "replace", *args,
                    message)
    return 0


def _has_content(message: bytes) -> bool:
    for line in message.decode("utf-8", "replace").splitlines():
        if line.startswith("# ") and ">8" in line:
            break  # the scissors line of `commit -v`: what follows is never part of the message
        if line.strip() and not line.startswith("#"):
            return True
    return False


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


# -- post-commit and post-rewrite: the handoff note -------------------------------------------------

def post_commit(ctx: Context) -> int:
    from shiftgit.git import handoff, notes

    with Objects(ctx.root, ctx.env) as objects:
        commit = objects.resolve("HEAD")
        if commit is None:
            return 0
        document = handoff.note_document(gitview.ledger_changes(objects, commit), ctx.environ.get("SHIFT_SKIP") or None)
    if document is not None:
        notes.write_handoff(ctx.root, {commit: handoff.pair(document)}, f"shiftgit: handoff of {commit[:12]}")
    return 0


def post_rewrite(ctx: Context) -> int:
    from shiftgit.git import rewrite

    return rewrite.post_rewrite(ctx)


def post_merge(ctx: Context) -> int:
    """A merge commit that merged ledgers gets its note like any commit (not a squash: no commit yet); the run
    hooks are added when a ledger says its run is active."""
    if ctx.args[:1] == ["1"]:
        return 0
    code = post_commit(ctx)
    from shiftgit.git import runhooks

    runhooks.after_merge(ctx.root)  # a ledger it brought may say a run is active: git/runhooks.py
    return code


# -- pre-push: the gate, again, over what is pushed -------------------------------------------------

def pre_push(ctx: Context) -> int:
    """Refuse a push whose commits break the gate (see `git/ci.py`); SHIFT_SKIP passes, kept in notes."""
    from pathlib import Path

    from shiftgit.git import ci

    specs = push_ranges(ctx)
    root = Path(ctx.root)
    commits = list(dict.fromkeys(c for spec in specs for c in ci.commits_in(root, ctx.env, spec)))
    verdicts = ci.judge(root, ctx.env, commits) if commits else []
    failed = [v for v in verdicts if v.status == "failed"]
    if not failed:
        return 0
    reason = ctx.environ.get("SHIFT_SKIP")
    if reason:
        ci.record_skip(root, [v.commit for v in failed], reason)
        ctx.say(f"shiftgit: push gate skipped (SHIFT_SKIP): {reason} — kept in the notes of {len(failed)} "
                "commit(s); `shiftgit sync` shares those notes with the remote (and with CI)")
        return 0
    ctx.say(ci.render(" ".join(specs), verdicts, title="shiftgit pre-push"))
    ctx.say('  to push anyway, the reason kept in each failing commit\'s note: SHIFT_SKIP="<reason>" git push ...')
    return 1


def push_ranges(ctx: Context) -> list[str]:
    """Each pushed ref's new commits: `<remote sha>..<local sha>`, or for a new branch those on no remote ref.

    git gives "<local ref> <local sha> <remote ref> <remote sha>" lines on stdin; the pre-commit
    framework gives PRE_COMMIT_FROM_REF / PRE_COMMIT_TO_REF instead.
    """
    pairs = [(f[1], f[3]) for f in (line.split() for line in ctx.stdin.read().splitlines()) if len(f) == 4]
    if not pairs and ctx.environ.get("PRE_COMMIT_TO_REF"):
        pairs = [(ctx.environ["PRE_COMMIT_TO_REF"], ctx.environ.get("PRE_COMMIT_FROM_REF", ""))]
    remote = ctx.args[0] if ctx.args else ""
    specs = []
    with Objects(ctx.root, ctx.env) as objects:
        for local, theirs in pairs:
            if not local.strip("0"):
                continue  # a deletion pushes no commit
            if theirs.strip("0") and objects.resolve(theirs) is not None:
                specs.append(f"{theirs}..{local}")
            else:
                remotes = f"--remotes={remote}" if remote and "/" not in remote and ":" not in remote else "--remotes"
                specs.append(f"{local} --not {remotes}")
    return specs


HANDLERS: dict[str, Callable[[Context], int]] = {
    "pre-commit": pre_commit, "commit-msg": commit_msg, "post-commit": post_commit,
    "post-rewrite": post_rewrite, "post-merge": post_merge, "pre-push": pre_push,
}
