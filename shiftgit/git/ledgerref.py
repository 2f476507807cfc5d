"""refs/shift/ledgers/<run>: every checkpoint's working ledger, committed where another machine can fetch it.

Each checkpoint adds a commit whose tree holds one file, `ledger.json` (the working ledger's exact
bytes), parent the previous one, with `Shift-Host` / `Shift-Clone` trailers saying where it was
recorded. The ref is updated compare-and-swap (worktrees and `sync` share it); HEAD, the index and
the files are never touched. `sync` fetches these refs into `refs/shift-remote/<remote>/shift/ledgers/`
and, when two machines' histories diverge, keeps both with the newer ledger (by checkpoint seq) on top.
"""

from __future__ import annotations

import time

from shiftgit import rawjson
from shiftgit.errors import Fenced, GitError
from shiftgit.git import fence, rawgit
from shiftgit.repo import Repo

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import NamedTuple

    from shiftgit.git.shiftrefs import Writer
else:
    from shiftgit.tuples import NamedTuple

LEDGERS = "refs/shift/ledgers/"
TRACKING = "refs/shift-remote/"
FILE = "ledger.json"
KNOWN, KNOWN_KEPT = "ledger-commits.json", 256  # in <common-dir>/shift/: see `known`
RETRIES = 20


def ref_name(run: str) -> str:
    return LEDGERS + run


SEP = "\x1f"
TIP_FORMAT = SEP.join(("%(objectname)", "%(refname)", "%(trailers:separator=%x1e)", "%(committerdate:iso-strict)",
                       "%(authorname) %(authoremail)"))


class Tip(NamedTuple):
    """One ledger ref's tip: where it lives, and where and when it was recorded (its commit's trailers).
    (A NamedTuple: the agent hooks' briefing reads these, and `dataclasses` costs an import of `inspect`.)"""

    run: str
    ref: str
    commit: str
    host: str | None
    clone: str | None
    committed_at: str | None
    author: str | None

    @property
    def remote(self) -> str | None:
        """The remote this copy was fetched from; None for this clone's own ref."""
        return self.ref[len(TRACKING):].split("/", 1)[0] if self.ref.startswith(TRACKING) else None


def commit_ledger(repo: Repo, run: str, data: bytes, clone: str | None = None, by: Writer | None = None,
                  tip: fence.Claim | None = None, what: str = "checkpoint",
                  facts: dict[str, object] | None = None) -> str | None:
    """Commit `data` as the ref's new tip (parent: the old tip). None when the tip already holds these bytes.

    `by` (git/shiftrefs.writer): the blob, tree and commit are written directly (rawgit.write_refs) and the ref
    moved by one `update-ref`, not by four plumbing commands; when that fails or loses the swap, the plumbing
    does it from a fresh look at the tip. `tip`, with `by`: the tip as the caller's fence read it (fence.tips),
    taken for the first try instead of a `for-each-ref` of its own; the caller vouches that DATA is not what the
    tip holds (a new checkpoint). Had the ref moved since, the swap fails and the fresh look follows. The
    commit's (epoch, seq) is remembered (`remember`). WHAT: the subject's words before the seq (an effect's record
    committed between checkpoints: "effects since checkpoint"). FACTS: the `checkpoint` and `lease` of DATA, when
    the caller has them (a ledger of a thousand effects takes milliseconds to parse); then no note is pre-rendered
    either (a checkpoint follows an effect before a commit, and renders it then)."""
    document = _json(data) if facts is None else facts
    commit = _commit(repo, run, data, document, clone, by, tip, what)
    if commit is not None:
        remember(repo, {commit: (epoch_of(document), seq_of(document))})
    if facts is None:
        from shiftgit.git import prenote

        prenote.prerender(str(repo.git_dir), run, data)  # the note of committing these bytes: the gate renders none
    return commit


def known(repo: Repo) -> dict[str, tuple[int, int]]:
    """Ledger commits whose (owner epoch, checkpoint seq) this clone has read or written (`KNOWN`): a commit never
    changes, so the agents' session start compares these with its ledger instead of asking git (agents/published.py)."""
    try:
        with open(repo.common_dir / "shift" / KNOWN, "rb") as handle:
            data = rawjson.loads(handle.read())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: (v[0], v[1]) for k, v in data.items()
            if isinstance(v, list) and len(v) == 2 and all(type(n) is int for n in v)}


def remember(repo: Repo, pairs: dict[str, tuple[int, int]]) -> None:
    """Add these commits' (epoch, seq) to `KNOWN`: a cache, a failed write loses no record."""
    from shiftgit import memo

    seen = known(repo)
    if all(seen.get(commit) == pair for commit, pair in pairs.items()):
        return
    seen.update(pairs)
    kept = {k: list(v) for k, v in list(seen.items())[-KNOWN_KEPT:]}
    memo.replace(str(repo.common_dir / "shift" / KNOWN), rawjson.dumps(kept).encode("utf-8"))


def _commit(repo: Repo, run: str, data: bytes, document: dict[str, object], clone: str | None,
            by: Writer | None, tip: fence.Claim | None, what: str) -> str | None:
    ref = ref_name(run)
    seq = seq_of(document)
    objects: list[tuple[str, bytes]] = []
    if by is not None:
        listing = rawgit.tree_body({FILE: ("100644", rawgit.object_id("blob", data, by.width))})
        objects, tree = [("blob", data), ("tree", listing)], rawgit.object_id("tree", listing, by.width)
    else:
        tree = _tree(repo, data)
    from shiftgit.procs import hostname  # here: reading tips (the briefing) needs no procs

    host = hostname()
    lease = document.get("lease")
    epoch = epoch_of(document)
    where = fence.place(fence.holder_text(lease.get("holder") if isinstance(lease, dict) else None))
    message = (f"shiftgit ledger: {run} {what} {seq}\n\nShift-Host: {host}\n"
               + (f"Shift-Clone: {clone}\n" if clone else "") + fence.trailers(lease))
    guess = tip if by is not None and objects and tip is not None and tip.ref == ref and len(tip.commit) == by.width \
        else None
    previous: str | None
    on_top: fence.Claim | None
    for attempt in range(RETRIES + 1):
        if guess is not None and attempt == 0:
            previous, on_top = guess.commit, guess
        else:
            seen = repo.git("for-each-ref", f"--format=%(objectname) %(tree) {TIP_TRAILERS}", ref).split(" ", 2)
            previous = seen[0] if seen[0] else None
            if seen[1:2] == [tree]:
                return None
            on_top = _claim_of(ref, seen[2] if len(seen) > 2 else "")
        if epoch and on_top is not None and fence.rival(on_top, epoch, where):  # no older or rival epoch on top
            raise Fenced(fence.fenced_line(run, epoch, on_top))
        if objects and by is not None:
            from shiftgit.git.shiftrefs import commit_directly

            made = commit_directly(repo, by, ref, objects, tree, [previous] if previous else [],
                                   message.encode("utf-8", "surrogateescape"), previous,
                                   f"shiftgit checkpoint {run} {seq}", in_files=True)
            if made is not None:
                return made
            objects, tree = [], _tree(repo, data)  # the plumbing from here, from a fresh look at the tip
            continue
        commit = repo.commit_tree(tree, [previous] if previous else [], message)
        try:
            repo.update_ref(ref, commit, previous or repo.null_id, f"shiftgit checkpoint {run} {seq}")
            return commit
        except GitError:
            if attempt == RETRIES:
                raise
            import random

            time.sleep(random.uniform(0, 0.02 * (attempt + 1)))
    raise AssertionError("unreachable")


TIP_TRAILERS = "%(trailers:only,unfold,separator=%x1e)"


def _tree(repo: Repo, data: bytes) -> str:
    """The one-file tree holding `data` as FILE, written by `hash-object` and `mktree`."""
    blob = repo.git("hash-object", "-w", "--stdin", input=data).strip()
    return repo.git("mktree", input=f"100644 blob {blob}\t{FILE}\n").strip()


def _claim_of(ref: str, text: str) -> fence.Claim | None:
    meta = dict(t.partition(": ")[::2] for t in text.strip().split("\x1e") if ": " in t)
    epoch = meta.get("Shift-Epoch", "").strip()
    if not epoch.isdigit():
        return None
    return fence.Claim(int(epoch), meta.get("Shift-Holder", "").strip() or "unknown", ref, "",
                       meta.get("Shift-Lease-Until", "").strip())


def claim_commit(repo: Repo, run: str, data: bytes, clone: str | None, parents: list[str]) -> str:
    """The commit an owner-epoch claim puts on the ledger ref (runs/lease.py makes it the tip compare-and-swap)."""
    from shiftgit.procs import hostname

    document = _json(data)
    tree = _tree(repo, data)
    message = (f"shiftgit ledger: {run} owner epoch {epoch_of(document)}\n\nShift-Host: {hostname()}\n"
               + (f"Shift-Clone: {clone}\n" if clone else "") + fence.trailers(document.get("lease")))
    return repo.commit_tree(tree, parents, message)


def listing(repo: Repo, *also: str) -> str:
    """One `for-each-ref` of the ledger refs and every ref under refs/shift-remote/, and of the refs ALSO names:
    what `tips` reads, and `names` (a report that needs both asks git once). Without the subprocess module: an
    agent's session start asks git nothing else that needs it (notestree.run_git)."""
    import os

    from shiftgit.git.notestree import run_git

    argv = ["for-each-ref", f"--format={TIP_FORMAT}", LEDGERS, TRACKING, *also]
    proc = run_git(repo.root, dict(os.environ), argv)
    if proc.returncode != 0:
        raise GitError(argv, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout.decode("utf-8", "surrogateescape")


def names(out: str) -> set[str]:
    """The refs a `listing` holds."""
    return {fields[1] for fields in (line.split(SEP) for line in out.split("\n")) if len(fields) == 5}


def tips(repo: Repo, out: str | None = None) -> dict[str, list[Tip]]:
    """Every run's ledger refs here (one git call, or what `listing` gave: OUT): this clone's own first, then each
    remote's fetched copy."""
    out = listing(repo) if out is None else out
    found: dict[str, list[Tip]] = {}
    for line in out.split("\n"):  # not splitlines(): it also splits at the \x1e between trailers
        fields = line.split(SEP)
        if len(fields) != 5:
            continue
        commit, ref, trailers, when, author = fields
        run = run_of(ref)
        if run is None:
            continue
        meta = dict(t.partition(": ")[::2] for t in trailers.split("\x1e") if ": " in t)
        found.setdefault(run, []).append(Tip(run, ref, commit, meta.get("Shift-Host") or None,
                                             meta.get("Shift-Clone") or None, when or None, author.strip() or None))
    for entries in found.values():
        entries.sort(key=lambda tip: (tip.remote is not None, tip.ref))
    return found


def run_of(ref: str) -> str | None:
    if ref.startswith(LEDGERS):
        return ref[len(LEDGERS):] or None
    head, sep, run = ref.rpartition("/shift/ledgers/")
    return run if sep and head.startswith(TRACKING) and "/" not in head[len(TRACKING):] and run else None


def seq_of(document: dict[str, object]) -> int:
    """The checkpoint seq a ledger document holds; 0 when it holds none."""
    point = document.get("checkpoint")
    seq = point.get("seq") if isinstance(point, dict) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else 0


def epoch_of(document: dict[str, object]) -> int:
    """The owner epoch a ledger document's lease holds; 0 when it has no lease (runs/lease.py)."""
    lease = document.get("lease")
    epoch = lease.get("epoch") if isinstance(lease, dict) else None
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else 0


def lease_of(data: bytes) -> object:
    return _json(data).get("lease")


def newer_tree(repo: Repo, mine: str, theirs: str) -> str:
    """For a merge of two diverged ledger refs: the tree of the side whose ledger is newer (epoch, seq, time)."""
    def rank(commit: str) -> tuple[int, int, str]:
        document = _json(repo.show(f"{commit}:{FILE}") or b"")
        point = document.get("checkpoint")
        return epoch_of(document), seq_of(document), str(point.get("at") if isinstance(point, dict) else "")

    winner = theirs if rank(theirs) > rank(mine) else mine
    return repo.git("rev-parse", f"{winner}^{{tree}}").strip()


def _json(data: bytes) -> dict[str, object]:
    try:
        document = rawjson.loads(data)
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}
