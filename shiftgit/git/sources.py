"""Which record of a run is the newest: the working ledger, the committed one, or a published one.

A run's state can live in four places: the ledger file in this work tree (`working`), the same file
as HEAD commits it (`committed`), this clone's `refs/shift/ledgers/<run>` and each remote's copy that
`sync` fetched (`published`). The newest by checkpoint seq wins; on a tie the file here wins (it is
what this work tree holds). Used by resume, status, log and the briefing, so all four say the same
thing: "checkpoint #5 published from host A at 10:42, not committed".
"""

from __future__ import annotations

from shiftgit import rawjson, textsafe
from shiftgit.git import ledgerref, rawgit
from shiftgit.git.notestree import CatFile, run_git
from shiftgit.git.view import RUNS, ledger_path
from shiftgit.ledger.canonical import is_ref_name
from shiftgit.ledger.store import Store, run_id_problem, validate_run_id
from shiftgit.ledger.validated import blob_id
from shiftgit.procs import clone_id
from shiftgit.repo import Repo, clean_env

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from shiftgit.tuples import NamedTuple

PREFERENCE = {"working": 2, "committed": 2, "published": 1}
_LISTED = 16  # runs named to `ls-tree` one by one; more: the runs directory listed once (its subtrees)


class Source(NamedTuple):
    """One record of a run's ledger. (A NamedTuple: see ledgerref.Tip.)"""

    kind: str                 # working | committed | published
    seq: int                  # its checkpoint seq (0: no checkpoint yet)
    at: str | None            # its checkpoint's time
    data: bytes
    committed_seq: int        # the seq HEAD's committed ledger holds (0: none)
    ref: str | None = None    # published: the ref it was read from
    commit: str | None = None  # published: the ledger commit
    host: str | None = None
    clone: str | None = None
    remote: str | None = None  # published: the remote it was fetched from (None: this clone's own ref)
    author: str | None = None
    committed_at: str | None = None
    ours: bool = True         # recorded by this clone
    epoch: int = 0            # the owner epoch its lease holds (a newer owner's record wins over a longer one)
    document: dict[str, Any] | None = None  # DATA parsed (None: not JSON); unchecked: `Store.document` checks it
    committed: bytes | None = None  # working, committed: the bytes HEAD's ledger holds (None: HEAD has none)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "seq": self.seq, "host": self.host, "at": self.at, "ref": self.ref,
                "commit": self.commit, "remote": self.remote, "clone": self.clone, "committed": self.is_committed}

    @property
    def is_committed(self) -> bool:
        return self.seq <= self.committed_seq

    @property
    def parsed(self) -> dict[str, Any]:
        """DATA's JSON object ({} when it is none), unchecked: `document`, or a parse of DATA when it was not kept."""
        return self.document if self.document is not None else _document(self.data) or {}

    def describe(self) -> str:
        """E.g. "checkpoint #5 published from host a (another clone) at 2026-01-02T10:42:00Z, not committed"."""
        what = f"checkpoint #{self.seq}" if self.seq else "no checkpoint yet"
        if self.kind == "published":
            clone = "" if self.ours else ", another clone"
            via = f" via {self.remote}" if self.remote else ""
            host = textsafe.quote(self.host) if self.host else "unknown"  # the ledger's text: quoted
            what += f" published from host {host}{clone}{via}" + (f" at {self.at}" if self.at else "")
        elif self.kind == "working":
            what += " in this work tree's ledger" + (f" (at {self.at})" if self.at else "")
        else:
            return what + " in the ledger committed at HEAD" + (f" (at {self.at})" if self.at else "")
        if self.seq:
            what += ", committed" if self.is_committed else ", not committed"
        return what


def candidates(store: Store, run: str) -> list[Source]:
    """Every record of the run here: the file in the work tree first, then the published copies."""
    return collect(store, [run])[run]


def collect(store: Store, runs: list[str], listing: str | None = None,
            working: dict[str, bytes | None] | None = None) -> dict[str, list[Source]]:
    """The records of many runs at once (WORKING: their ledger files' bytes, when the caller read them with
    `Store.ledger_files`): one `for-each-ref` (or what `ledgerref.listing` gave: LISTING) and one
    `cat-file --batch` in all (HEAD's ledger of each run and every published one); for more than _LISTED runs, one
    `ls-tree` first, and the cat-file only when a committed ledger differs from the work tree's or a run was
    published."""
    repo = store.repo
    tips = ledgerref.tips(repo, listing)
    wanted = [(run, tips.get(run, [])) for run in runs]
    working = store.ledger_files(runs) if working is None else working
    at_head = [f"HEAD:{ledger_path(validate_run_id(run))}" for run in runs] if len(runs) <= _LISTED else []
    blobs = _committed_blobs(repo, runs, working) if not at_head else {}
    same = {run: _same_blob(working[run], blob) for run, blob in blobs.items()}
    names = [*at_head, *(blobs[run] for run in runs if run in blobs and not same[run])]
    names += [f"{tip.commit}:{ledgerref.FILE}" for _, found in wanted for tip in found]
    answers: dict[str, bytes | None] = {}
    if names:
        with CatFile(repo.root, clean_env()) as cat:
            for name, answer in zip(names, cat.get(names), strict=True):
                answers[name] = answer[2] if answer is not None else None
                if name in at_head and answer is not None and answer[1] == "blob":  # as `ls-tree` names it
                    run = runs[at_head.index(name)]
                    blobs[run], answers[answer[0]] = answer[0], answer[2]
                    same[run] = working[run] == answer[2]
    published = {tip.ref: answers.get(f"{tip.commit}:{ledgerref.FILE}") for _, found in wanted for tip in found}
    clone = clone_id(repo) if tips else None
    out = {}
    for run, found in wanted:
        blob = blobs.get(run)
        committed = None if blob is None else working[run] if same[run] else answers.get(blob)
        out[run] = _sources(run, working[run], found, committed, published, clone)
    return out


def _committed_blobs(repo: Repo, runs: list[str], working: dict[str, bytes | None]) -> dict[str, str]:
    """Each run's ledger blob id as HEAD commits it (a run HEAD lacks is not in it), with one `ls-tree` of
    the runs directory: a run directory whose tree id is the one a tree holding only this work tree's
    ledger file would have holds exactly that file (its blob id is the working file's); any other is
    looked up by path, once for all of them."""
    if not runs:
        return {}
    paths = {ledger_path(validate_run_id(run)): run for run in runs}
    found: dict[str, str] = {}
    rest = list(paths)
    if len(runs) > _LISTED:
        out = _ls_tree(repo, f"{RUNS}/")  # no HEAD: none
        trees = {}
        for entry in out.split("\0"):
            meta, _, path = entry.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "tree":
                trees[path.rpartition("/")[2]] = parts[2]
        rest = []
        for path, run in paths.items():
            data, tree = working.get(run), trees.get(run)
            if tree is None:
                continue  # HEAD has no such directory, so no such file
            blob = None if data is None else blob_id(data, sha256=len(tree) == 64)
            if blob is not None and _tree_of(blob) == tree:
                found[run] = blob
            else:
                rest.append(path)
    if rest:
        out = _ls_tree(repo, *rest)
        for entry in out.split("\0"):
            meta, _, path = entry.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob" and path in paths:
                found[paths[path]] = parts[2]
    return found


def _ls_tree(repo: Repo, *paths: str) -> str:
    """HEAD's entries at PATHS (`ls-tree -z`; nothing when HEAD or a path is missing), git started without the
    subprocess module where it can be (notestree.run_git): `status` then never loads it."""
    import os

    proc = run_git(repo.root, dict(os.environ), ["ls-tree", "--full-tree", "-z", "HEAD", "--", *paths])
    return proc.stdout.decode("utf-8", "surrogateescape")


def _tree_of(blob: str) -> str:
    """The id of a tree holding one file, `ledger.json` (mode 100644), with blob id BLOB."""
    body = b"100644 " + ledgerref.FILE.encode() + b"\0" + bytes.fromhex(blob)
    return rawgit.object_id("tree", body, len(blob))  # CPython's own sha modules: no OpenSSL


def _same_blob(data: bytes | None, blob: str) -> bool:
    """Whether DATA is the blob BLOB (hashed the way its repository hashes: sha1 or sha256)."""
    return data is not None and blob_id(data, sha256=len(blob) == 64) == blob


def _sources(run: str, working: bytes | None, tips: list[ledgerref.Tip], committed: bytes | None,
             published: dict[str, bytes | None], clone: str | None) -> list[Source]:
    found: list[Source] = []
    document = _document(working)  # parsed once for its seq and its time (and the committed one's, when equal)
    committed_seq = _seq(committed, document if committed == working else None)
    if working is not None:
        found.append(Source("committed" if working == committed else "working", _seq(working, document),
                            _at(working, document), working, committed_seq, epoch=_epoch(working, document),
                            document=document, committed=committed))
    for tip in tips:
        data = published.get(tip.ref)
        if data is None:
            continue
        found.append(Source("published", _seq(data), _at(data), data, committed_seq, ref=tip.ref, commit=tip.commit,
                            host=tip.host, clone=tip.clone, remote=tip.remote, author=tip.author,
                            committed_at=tip.committed_at, ours=tip.clone is None or tip.clone == clone,
                            epoch=_epoch(data)))
    return found


def newest(store: Store, run: str) -> Source | None:
    """The newest record by owner epoch, then checkpoint seq; on a tie the work tree's file, then this clone's ref."""
    return pick(candidates(store, run))


def pick(found: list[Source]) -> Source | None:
    if not found:
        return None
    return max(found, key=lambda s: (s.epoch, s.seq, PREFERENCE[s.kind], s.remote is None))


def newer_published(store: Store, run: str) -> Source | None:
    """A published record newer than the work tree's ledger (what `resume --adopt` would restore), if any. The
    (epoch, seq) of each published copy read is remembered (ledgerref.known: the session start's quick look)."""
    found = candidates(store, run)
    copies = {s.commit: (s.epoch, s.seq) for s in found if s.kind == "published" and s.commit}
    if copies:
        ledgerref.remember(store.repo, copies)
    best = pick(found)
    return best if best is not None and best.kind == "published" else None


def _seq(data: bytes | None, document: dict[str, Any] | None = None) -> int:
    document = _document(data) if document is None else document
    return ledgerref.seq_of(document) if document is not None else 0


def _epoch(data: bytes | None, document: dict[str, Any] | None = None) -> int:
    document = _document(data) if document is None else document
    return ledgerref.epoch_of(document) if document is not None else 0


def _at(data: bytes | None, document: dict[str, Any] | None = None) -> str | None:
    document = _document(data) if document is None else document
    point = document.get("checkpoint") if document else None
    value = point.get("at") if isinstance(point, dict) else None
    return value if isinstance(value, str) else None


def _document(data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        document = rawjson.loads(data)  # json.loads without json's import (re, enum, functools)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def published_only(store: Store, listing: str | None = None, here: frozenset[str] = frozenset()) -> dict[str, Source]:
    """The newest published record of each run that has ledger refs here (this clone's or a remote's fetched copy)
    but no ledger file in this work tree (HERE: runs the caller knows have one): a machine published a checkpoint
    whose commits never reached this branch. (An archived run's refs stay too: the caller tells it apart.)"""
    tips = ledgerref.tips(store.repo, listing)
    runs = sorted(run for run in tips if run not in here and run_id_problem(run) is None and not store.exists(run))
    if not runs:
        return {}
    found = collect(store, runs, listing, dict.fromkeys(runs))
    return {run: best for run in runs if (best := pick(found[run])) is not None and best.kind == "published"}


def lost_runs(store: Store, listing: str | None = None, here: frozenset[str] = frozenset()) -> dict[str, Source]:
    """`published_only`'s runs whose newest record says `active` and whose ledger no branch here commits: what a
    machine that died left only in its published checkpoints (a run on another branch here is not lost)."""
    return {run: source for run, source in published_only(store, listing, here).items()
            if source.parsed.get("status") == "active" and branch_holding(store.repo, run, source) is None}


def plain_branch(name: object) -> str | None:
    """NAME when it is a branch name a shell and a ref pattern take as it is (it goes into the commands shown)."""
    if not isinstance(name, str) or not is_ref_name(name) or name.startswith("-"):
        return None
    return name if all(c.isascii() and (c.isalnum() or c in "._/-") for c in name) else None


def branch_holding(repo: Repo, run: str, source: Source) -> str | None:
    """The branch (local, or a remote's) that commits the run's ledger, of the one SOURCE says the run was last
    checkpointed on: then the run lives on that branch, not checked out here (`git switch` it); None: no branch
    here has it (its commits never left the machine that published SOURCE)."""
    point = source.parsed.get("checkpoint")
    branch = plain_branch(point.get("branch") if isinstance(point, dict) else None)
    if branch is None:
        return None
    refs = repo.git("for-each-ref", "--format=%(refname)", f"refs/heads/{branch}", f"refs/remotes/*/{branch}",
                    check=False).split()
    path = ledger_path(validate_run_id(run))
    found = repo.git("cat-file", "--batch-check", input="".join(f"{ref}:{path}\n" for ref in refs),
                     check=False).splitlines() if refs else []
    return branch if any(not line.endswith(" missing") for line in found) else None  # `git switch` takes it


def newest_local(store: Store, run: str) -> Source | None:
    """The work tree's own record (working or committed), ignoring published ones."""
    found = [s for s in candidates(store, run) if s.kind != "published"]
    return found[0] if found else None


def local_files(found: list[Source]) -> tuple[bytes, bytes | None] | None:
    """The work tree's ledger bytes and HEAD's (None: HEAD has none) from a run's records; None: no file here."""
    here = next((s for s in found if s.kind != "published"), None)
    return (here.data, here.committed) if here is not None else None
