"""refs/shift/ledgers/<run>: every checkpoint's working ledger, committed where another machine can fetch it.

Each checkpoint adds a commit whose tree holds one file, `ledger.json` (the working ledger's exact
bytes), parent the previous one, with `Shift-Host` / `Shift-Clone` trailers saying where it was
recorded. The ref is updated compare-and-swap (worktrees and `sync` share it); HEAD, the index and
the files are never touched. `sync` fetches these refs into `refs/shift-remote/<remote>/shift/ledgers/`
and, when two machines' histories diverge, keeps both with the newer ledger (by checkpoint seq) on top.
"""

from __future__ import annotations

import json
import random
import socket
import time
from dataclasses import dataclass

from shiftgit.errors import GitError
from shiftgit.repo import Repo

LEDGERS = "refs/shift/ledgers/"
TRACKING = "refs/shift-remote/"
FILE = "ledger.json"
RETRIES = 20
ZERO = "0" * 40


def ref_name(run: str) -> str:
    return LEDGERS + run


@dataclass(frozen=True)
class Published:
    """One ledger ref's tip: where it lives, the ledger's bytes and checkpoint seq, where it was recorded."""

    ref: str
    commit: str
    data: bytes
    seq: int
    checkpoint_id: str | None
    at: str | None             # the checkpoint's time
    host: str | None
    clone: str | None
    committed_at: str | None   # when the ledger commit was made
    author: str | None

    @property
    def remote(self) -> str | None:
        """The remote this copy was fetched from; None for this clone's own ref."""
        return self.ref[len(TRACKING):].split("/", 1)[0] if self.ref.startswith(TRACKING) else None


def commit_ledger(repo: Repo, run: str, data: bytes, clone: str | None = None) -> str | None:
    """Commit `data` as the ref's new tip (parent: the old tip). None when the tip already holds these bytes."""
    ref = ref_name(run)
    seq = seq_of(_json(data))
    blob = repo.git("hash-object", "-w", "--stdin", input=data).strip()
    tree = repo.git("mktree", input=f"100644 blob {blob}\t{FILE}\n").strip()
    host = socket.gethostname()
    message = (f"shiftgit ledger: {run} checkpoint {seq}\n\nShift-Host: {host}\n"
               + (f"Shift-Clone: {clone}\n" if clone else ""))
    for attempt in range(RETRIES + 1):
        previous = repo.ref(ref)
        if previous is not None and repo.git("rev-parse", f"{previous}^{{tree}}").strip() == tree:
            return None
        commit = repo.commit_tree(tree, [previous] if previous else [], message)
        try:
            repo.update_ref(ref, commit, previous or ZERO, f"shiftgit checkpoint {run} {seq}")
            return commit
        except GitError:
            if attempt == RETRIES:
                raise
            time.sleep(random.uniform(0, 0.02 * (attempt + 1)))
    raise AssertionError("unreachable")


def refs_of(repo: Repo, run: str) -> list[tuple[str, str]]:
    """(ref, commit) of every copy of the run's ledger ref here: ours first, then each remote's fetched one."""
    out = repo.git("for-each-ref", "--format=%(objectname) %(refname)", ref_name(run), TRACKING)
    found = [(name, oid) for oid, name in (line.split(" ", 1) for line in out.splitlines())]
    suffix = "/shift/ledgers/" + run
    return sorted(((n, o) for n, o in found if n == ref_name(run) or n.endswith(suffix)),
                  key=lambda pair: (pair[0] != ref_name(run), pair[0]))


def read(repo: Repo, ref: str, commit: str) -> Published | None:
    """The ledger a ref's tip holds (None when it holds no readable ledger.json)."""
    data = repo.show(f"{commit}:{FILE}")
    if data is None:
        return None
    document = _json(data)
    raw = document.get("checkpoint")
    point: dict[str, object] = raw if isinstance(raw, dict) else {}
    meta = repo.git("log", "-1", "--format=%(trailers:key=Shift-Host,valueonly,separator=%x2c)%x1f"
                    "%(trailers:key=Shift-Clone,valueonly,separator=%x2c)%x1f%cI%x1f%an <%ae>", commit,
                    check=False).strip("\n").split("\x1f")
    host, clone, when, author = (meta + ["", "", "", ""])[:4]
    return Published(ref=ref, commit=commit, data=data, seq=seq_of(document), checkpoint_id=_str(point.get("id")),
                     at=_str(point.get("at")), host=host.strip() or None, clone=clone.strip() or None,
                     committed_at=when or None, author=author or None)


def published(repo: Repo, run: str) -> list[Published]:
    """Every readable copy of the run's published ledger here."""
    found = (read(repo, ref, commit) for ref, commit in refs_of(repo, run))
    return [p for p in found if p is not None]


def seq_of(document: dict[str, object]) -> int:
    """The checkpoint seq a ledger document holds; 0 when it holds none."""
    point = document.get("checkpoint")
    seq = point.get("seq") if isinstance(point, dict) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else 0


def newer_tree(repo: Repo, mine: str, theirs: str) -> str:
    """For a merge of two diverged ledger refs: the tree of the side whose ledger is newer (seq, then time)."""
    def rank(commit: str) -> tuple[int, str]:
        document = _json(repo.show(f"{commit}:{FILE}") or b"")
        point = document.get("checkpoint")
        return seq_of(document), str(point.get("at") if isinstance(point, dict) else "")

    winner = theirs if rank(theirs) > rank(mine) else mine
    return repo.git("rev-parse", f"{winner}^{{tree}}").strip()


def _json(data: bytes) -> dict[str, object]:
    try:
        document = json.loads(data)
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
