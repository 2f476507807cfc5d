"""`checkpoint`: the state at a step boundary, read from git (never from the caller)."""


from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from shiftgit.errors import GitError, UsageError
from shiftgit.git import secretscan
from shiftgit.git.scope import in_scope as in_scope  # re-exported: runs.in_scope
from shiftgit.ledger.checkstates import carry
from shiftgit.ledger.model import (
    DECISIONS_CAP,
    DONE_CAP,
    HISTORY_CAP,
    Checkpoint,
    Decision,
    FileChange,
    HistoryEntry,
    Item,
    Ledger,
    NextAction,
    Spend,
)
from shiftgit.ledger.record import replace
from shiftgit.ledger.store import Store
from shiftgit.repo import Repo, TreeBuild, files_of
from shiftgit.runs.contract import new_id, now_iso
from shiftgit.runs.reviews import request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple

    from shiftgit.git.fence import Claim
    from shiftgit.git.shiftrefs import Writer
else:
    from shiftgit.tuples import NamedTuple  # typing's class without importing typing or dataclasses

SNAPSHOT_RETRIES = 20
ITEM_KINDS = ("done", "doing", "blocked", "questions", "decisions")
RESOLVED_CAP = 200

# -- checkpoint ----------------------------------------------------------------------------

class CheckpointInput(NamedTuple):
    step: str | None = None
    next_action: str | None = None
    done_when: str | None = None
    done: tuple[str, ...] = ()
    doing: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()
    resolve: tuple[str, ...] = ()
    reason: str | None = None  # why the --resolve items are closed (recorded)
    decisions: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()
    note: str | None = None
    phase: str | None = None
    milestone: bool = False
    confirm: bool = False  # the milestone awaits its owner's confirmation (runs/reviews.py)
    tokens: int = 0
    cost: float = 0.0
    turn: int | None = None
    auto: str | None = None  # an agent hook records it by itself (the event); see recovery/freshness.py
    unrecorded: tuple[str, ...] = ()
    session: str | None = None


def checkpoint(store: Store, run: str, spec: CheckpointInput, *, checked: bool = True,
               worktree: TreeBuild | None = None) -> Checkpoint:
    """Record what the tree holds now (from git, never from the caller), with the evidence since.

    `checked=False` (the agent hooks) writes without the schema check: see `Store.write`. `worktree`: the
    work tree's tree, begun by the caller (`Repo.start_worktree_tree`; the caller closes it on an error)."""
    if spec.tokens < 0 or spec.cost < 0 or (spec.turn is not None and spec.turn < 0):
        raise UsageError("--tokens, --cost and --turn cannot be negative")
    if spec.confirm and not spec.milestone:
        raise UsageError("--confirm asks the owner to confirm a milestone: add --milestone; nothing was recorded")
    if spec.resolve and not (spec.reason or "").strip():
        raise UsageError("--resolve needs a reason: `shiftgit checkpoint --resolve TEXT --reason R`; nothing was "
                         "written")
    from shiftgit.git.shiftrefs import ask_writer

    writer = ask_writer(store.repo)  # one `git var -l`, beside what follows: who the snapshot and ledger commits are by
    read = store.read(run)  # fail on a broken ledger before any ref or ledger is written
    from shiftgit.ledger.chain import history_link
    from shiftgit.runs.lease import guard

    ticket = guard(store, run, fetch=spec.auto is None)  # a fenced writer stops here (exit 4)
    from shiftgit.git.runhooks import add_repo_run_hooks

    # the run is active here now, found by discovery or SHIFT_RUN too: the commit that follows may skip the
    # pre-commit shim that would add them (`--no-verify`, a cherry-pick); two file reads when they are there
    add_repo_run_hooks(store.repo)
    from shiftgit.runs.foreign import absorb

    absorb(store, run, ticket.commits or None)  # effects another clone published are carried by this checkpoint
    repo = store.repo
    head, branch = _head_and_branch(repo)
    if checked:  # what the write below loads, loaded while git may still be building the tree
        import shiftgit.ledger.budgets
        import shiftgit.ledger.schema
        import shiftgit.ledger.secrets  # noqa: F401
    # what the scan, the writes and the next commit's note load, and the last checkpoint's chain link (a digest of
    # its 1,000 file records: ~2 ms), while git may still be building the tree
    import bisect  # noqa: F401
    import zlib  # noqa: F401

    import shiftgit.git.handoff
    import shiftgit.git.prenote  # noqa: F401
    early = read.checkpoint
    early_link = history_link(early.to_dict()) if early is not None else {}
    tree = (worktree or repo.start_worktree_tree()).result()
    changes = repo.changes(head, tree)  # one diff-tree: the files recorded, and those the scanner reads
    files = tuple(FileChange(path=e.path, id=e.blob, status=e.status) for e in files_of(changes))
    kept, held = secretscan.clean_tree(repo, head, tree, changes)  # the snapshot (pushed by sync) holds no secret
    withheld = {"withheld": [w.to_dict() for w in held]} if held else {}
    made: list[Checkpoint] = []
    by = writer()

    def change(ledger: Ledger) -> Ledger:
        at = now_iso()
        previous = ledger.checkpoint
        seq = (previous.seq if previous else 0) + 1
        resolutions = _resolutions(previous, spec, seq, at)  # an unknown --resolve: refused before any write
        snapshot = _snapshot(store, ledger.run, kept, head, seq, previous.snapshot if previous else "", by)
        checks = carry(previous.checks if previous else (), ledger.pending_checks, ledger.retired, seq, tree)
        link = early_link if previous is early else history_link(previous.to_dict()) if previous else {}
        spend = _add_spend(ledger, spec, at)
        point = Checkpoint(
            id=new_id(f"p{seq}"), seq=seq, at=at, step=spec.step,
            phase=spec.phase or (previous.phase if previous else None),
            milestone=spec.milestone, base=head, branch=branch, tree=tree, snapshot=snapshot, files=files,
            checks=checks,
            next=_next(previous, spec), note=spec.note, spend=spend,
            extra={**withheld, "prev": link.get("digest"), "epoch": ticket.epoch, "ledger": ticket.ledger},  # chain
            turn=spec.turn, auto=spec.auto, unrecorded=spec.unrecorded, session=spec.session,
            **_carried_items(previous, spec, seq),
        )
        history = ledger.history
        if previous is not None:
            entry = HistoryEntry(id=previous.id, seq=previous.seq, at=previous.at, step=previous.step,
                                 base=previous.base, turn=previous.turn,
                                 extra={**link, **({"milestone": True} if previous.milestone else {})})
            history = (*history, entry)[-HISTORY_CAP:]
        made.append(point)
        retired = tuple(r if r.checkpoint is not None else replace(r, checkpoint=seq) for r in ledger.retired)
        ledger = replace(ledger, checkpoint=point, pending_checks=(), history=history, spend=spend, updated_at=at,
                         retired=retired, resolved=(*ledger.resolved, *resolutions)[-RESOLVED_CAP:],
                         extra=_unverified_sessions(ledger, spec.auto), **_close_stop(ledger, seq))
        return request(ledger, seq, spec.step, at) if spec.confirm else ledger

    store.update(run, change, checked=checked)
    publish(store, run, by, ticket.tip)  # the ledger holds a new checkpoint: never the bytes on the ref's tip
    return made[0]


def publish(store: Store, run: str, by: Writer | None = None, tip: Claim | None = None) -> None:
    """Commit the working ledger to refs/shift/ledgers/<run>; with `"publish"` configured, push it in the background.

    The push never blocks or fails the checkpoint: its result is recorded for `status` and the briefing. `tip`:
    see ledgerref.commit_ledger.
    """
    from shiftgit.git import ledgerref
    from shiftgit.git import publish as publisher
    from shiftgit.procs import clone_id

    with store.lock(run):  # the file's bytes as this checkpoint (or a later one) left them
        data = store.ledger_path(run).read_bytes()
        commit = ledgerref.commit_ledger(store.repo, run, data, clone_id(store.repo), by, tip)
    if commit is not None:
        from shiftgit.runs.foreign import mark_seen

        mark_seen(store, [commit])  # its effects are this ledger's own: never read back
    publisher.start_configured(store)


def _head_and_branch(repo: Repo) -> tuple[str | None, str | None]:
    """`repo.head()` and `repo.branch()` from the git dir's files (git/headref.py), else in one git process (a git
    process is most of a small checkpoint)."""
    from shiftgit.git import headref

    found = headref.head_and_branch(str(repo.git_dir), str(repo.common_dir))
    if not isinstance(found, str):  # not ASK_GIT
        return found
    out = repo.git("rev-parse", "HEAD^{commit}", "--abbrev-ref", "HEAD", check=False).split()
    if len(out) == 2 and len(out[0]) in (40, 64) and not out[0].startswith("HEAD"):
        return out[0], None if out[1] == "HEAD" else out[1]  # `HEAD`: detached
    return repo.head(), repo.branch()  # no commit yet (or a surprise): as those say


def _snapshot(store: Store, run: str, tree: str, head: str | None, seq: int, guess: str | None,
              by: Writer | None) -> str:
    """Keep the working tree as a commit under refs/shift/ (HEAD, index and files untouched).

    The ref is shared by worktrees and `sync`, so it moves compare-and-swap. `guess`: what it most likely holds
    (the last checkpoint's snapshot; "" for none): with a writer (git/shiftrefs.writer), the commit is written
    by one `unpack-objects` and the ref moved by one `update-ref` against that guess (rawgit.write_refs); when
    the guess was wrong, or that way fails, the plumbing does it from what the ref holds."""
    ref = f"refs/shift/snapshots/{run}"
    message = f"shiftgit snapshot: {run} checkpoint {seq}"
    reflog = f"shiftgit checkpoint {run} {seq}"
    if by is not None and guess is not None and len(guess) in (0, by.width):
        from shiftgit.git.shiftrefs import commit_directly

        parents = list(dict.fromkeys(p for p in (head, guess) if p))
        made = commit_directly(store.repo, by, ref, [], tree, parents, message.encode() + b"\n", guess, reflog,
                               in_files=True)
        if made is not None:
            return made
    for attempt in range(SNAPSHOT_RETRIES + 1):
        previous = store.repo.ref(ref)
        parents = [p for p in (head, previous) if p]
        commit = store.repo.commit_tree(tree, list(dict.fromkeys(parents)), message)
        try:
            store.repo.update_ref(ref, commit, previous or store.repo.null_id, reflog)
            return commit
        except GitError:
            if attempt == SNAPSHOT_RETRIES:
                raise
            import secrets  # here: the first try nearly always wins

            time.sleep(secrets.randbelow(20 * (attempt + 1)) / 1000)
    raise AssertionError("unreachable")


def _resolutions(previous: Checkpoint | None, spec: CheckpointInput, seq: int, at: str) -> list[dict[str, Any]]:
    """Each `--resolve TEXT` names an open item, question or decision; an unknown one is a usage error."""
    found: list[dict[str, Any]] = []
    for text in spec.resolve:
        kinds = [kind for kind in ITEM_KINDS if previous is not None
                 and any(i.text == text for i in getattr(previous, kind))]
        if not kinds:
            open_items = [i.text for kind in ITEM_KINDS for i in (getattr(previous, kind) if previous else ())]
            raise UsageError(f"--resolve {text!r}: no open item, question or decision has that text (open: "
                             f"{'; '.join(repr(t) for t in open_items[:10]) or 'none'}); nothing was written")
        found += [{"id": new_id("r"), "kind": kind, "text": text, "reason": spec.reason, "at": at, "checkpoint": seq}
                  for kind in kinds]  # an id: the merge driver unions records by id
    return found


def _unverified_sessions(ledger: Ledger, auto: str | None) -> Any:
    """An open agent session whose first checkpoint comes before any verify built on an unverified handoff."""
    sessions = ledger.extra.get("sessions")
    if auto is not None or not isinstance(sessions, list):
        return ledger.extra
    marked = [dict(s, verified_first=False) if isinstance(s, dict) and s.get("ended_at") is None
              and s.get("verified_first") is None else s for s in sessions]
    return dict(ledger.extra, sessions=marked) if marked != sessions else ledger.extra


def _close_stop(ledger: Ledger, seq: int) -> dict[str, Any]:
    """A stop record is closed by the next checkpoint: work went on (the record stays, marked closed)."""
    stop = ledger.stop
    if stop is None or stop.closed is not None or ledger.status not in ("active", "stopped"):
        return {}
    return {"stop": replace(stop, closed=seq), "status": "active"}


def _add_spend(ledger: Ledger, spec: CheckpointInput, at: str) -> Spend:
    """Tokens and cost from the caller; wall minutes since the last write by the budgets' idle rule."""
    from shiftgit.ledger.budgets import gap_minutes

    spent = ledger.spend
    return Spend(tokens=spent.tokens + spec.tokens, cost=round(spent.cost + spec.cost, 6),
                 minutes=round(spent.minutes + gap_minutes(ledger.updated_at, at), 3))


def _next(previous: Checkpoint | None, spec: CheckpointInput) -> NextAction:
    old = previous.next if previous else NextAction()
    if spec.next_action is not None:
        return NextAction(action=spec.next_action, done_when=spec.done_when)
    if spec.done_when is not None:
        return replace(old, done_when=spec.done_when)
    return old


def _carried_items(previous: Checkpoint | None, spec: CheckpointInput, seq: int) -> dict[str, Any]:
    """Open items persist until resolved; a checkpoint adds to them and need not repeat them."""
    resolved = set(spec.resolve)

    def keep(old: Sequence[Item], new: Sequence[str], cap: int | None = None) -> tuple[Item, ...]:
        items = [i for i in old if i.text not in resolved]
        items += [Item(text=t, seq=seq) for t in new if t not in {i.text for i in items}]
        return tuple(items[-cap:] if cap else items)

    old_decisions = [d for d in (previous.decisions if previous else ()) if d.text not in resolved]
    new_decisions = [_decision(text, seq) for text in spec.decisions]
    return {
        "done": keep(previous.done if previous else (), spec.done, DONE_CAP),
        "doing": keep(previous.doing if previous else (), spec.doing),
        "blocked": keep(previous.blocked if previous else (), spec.blocked),
        "questions": keep(previous.questions if previous else (), spec.questions),
        "decisions": tuple((old_decisions + new_decisions)[-DECISIONS_CAP:]),
    }


def _decision(text: str, seq: int) -> Decision:
    """`--decision "keep the API -- callers depend on it"`: text, then the rationale after ' -- '."""
    what, _, why = text.partition(" -- ")
    return Decision(text=what.strip(), rationale=why.strip() or None, seq=seq)


