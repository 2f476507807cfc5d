"""Every checkpoint of a run, not just the latest: per-step diffs and rollback to an earlier step.

A checkpoint's full record (its tree, snapshot and checks) is on `refs/shift/ledgers/<run>`: each
checkpoint commits the working ledger there (git/ledgerref.py), so the chain holds one ledger per
checkpoint. The run's working ledger adds the latest one. `diff` compares two checkpoints' trees
(the work tree as recorded, `.shift/` left out); `rollback --to N` / `--last-green` restore one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shiftgit import rawjson
from shiftgit.errors import UsageError
from shiftgit.git import ledgerref, record
from shiftgit.git.notestree import CatFile
from shiftgit.ledger.model import Checkpoint
from shiftgit.ledger.store import Store
from shiftgit.repo import SHIFT_DIR, clean_env

MAX_CHAIN = 2000  # ledger commits read at most


def checkpoints(store: Store, run: str) -> dict[int, Checkpoint]:
    """seq -> checkpoint, for every checkpoint this clone knows of (the newest record of a seq wins)."""
    repo = store.repo
    found: dict[int, Checkpoint] = {}
    current = store.read(run).checkpoint
    if current is not None:
        found[current.seq] = current
    ref = ledgerref.ref_name(run)
    if repo.ref(ref) is None:
        return found
    commits = repo.git("rev-list", f"--max-count={MAX_CHAIN}", ref).split()
    with CatFile(repo.root, clean_env()) as cat:
        answers = cat.get([f"{c}:{ledgerref.FILE}" for c in commits])
    for answer in answers:
        point = _point(answer[2] if answer else None)
        if point is not None and point.seq not in found:
            found[point.seq] = point
    return dict(sorted(found.items()))


def _point(data: bytes | None) -> Checkpoint | None:
    try:
        raw = rawjson.loads(data) if data else None
        point = raw.get("checkpoint") if isinstance(raw, Mapping) else None
        return Checkpoint.from_dict(point) if isinstance(point, Mapping) else None
    except (ValueError, TypeError, KeyError):
        return None


def pick(store: Store, run: str, seq: int) -> Checkpoint:
    known = checkpoints(store, run)
    if seq not in known:
        have = ", ".join(f"#{s}" for s in known) or "none"
        raise UsageError(f"run {run!r} has no checkpoint #{seq} in this clone (it has {have}); "
                         "list them with `shiftgit log`")
    return known[seq]


def is_green(point: Checkpoint) -> bool:
    """Every check (the latest of each name) passed on the checkpoint's own tree."""
    latest: dict[str, Any] = {}
    for check in point.checks:
        latest[check.name] = check
    return bool(latest) and all(c.exit_code == 0 and not c.timed_out and c.fresh is not False
                                for c in latest.values())


def last_green(store: Store, run: str) -> Checkpoint:
    green = [p for p in checkpoints(store, run).values() if is_green(p)]
    if not green:
        raise UsageError(f"run {run!r} has no checkpoint whose checks all passed on its own tree; name one with "
                         "`shiftgit rollback --to N` (see `shiftgit log`)")
    return green[-1]


def parse_span(text: str | None, latest: int) -> tuple[int, int]:
    """`N` (N-1..N, the step N made; 0 is the first checkpoint's base commit), `N..M`, or nothing (the latest step)."""
    try:
        if not text:
            return latest - 1, latest
        if ".." in text:
            left, right = text.split("..", 1)
            return int(left), int(right) if right else latest
        seq = int(text)
        return seq - 1, seq
    except ValueError:
        raise UsageError(f"{text!r} is not a checkpoint number or range; give N or N..M, e.g. `shiftgit diff 2..4`") \
            from None


def _base_point(store: Store, base: str | None) -> Checkpoint:
    tree = store.repo.git("rev-parse", f"{base}^{{tree}}").strip() if base else store.repo.empty_tree
    return Checkpoint(id="base", seq=0, at="", tree=tree, base=base)


def diff(store: Store, run: str, span: str | None, stat: bool = False) -> tuple[int, int, str]:
    """(from seq, to seq, `git diff` text) between two checkpoints' trees, `.shift/` left out."""
    known = checkpoints(store, run)
    if not known:
        raise UsageError(f"run {run!r} has no checkpoint yet; record one with `shiftgit checkpoint`")
    first, last = parse_span(span, max(known))
    if first == 0 and 1 in known:  # the first step: from the commit the run started on
        base = known[1].base
        known = {0: _base_point(store, base), **known}
    missing = [seq for seq in (last, first) if seq not in known]
    if missing:
        have = ", ".join(f"#{s}" for s in known)
        raise UsageError(f"run {run!r} has no checkpoint #{missing[0]} in this clone (it has {have})")
    trees = []
    for seq in (first, last):
        tree = record.checkpoint_tree(store.repo, known[seq])
        if tree is None:
            raise UsageError(f"the content of checkpoint #{seq} is not in this clone; fetch it with `shiftgit sync`")
        trees.append(tree)
    mode = ["--stat"] if stat else ["--patch"]
    text = store.repo.git("diff", "--no-color", "--no-ext-diff", *mode, trees[0], trees[1], "--", ".",
                          f":(exclude){SHIFT_DIR}")
    return first, last, text
