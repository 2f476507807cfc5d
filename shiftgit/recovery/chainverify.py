"""`verify --chain`: walk a run's checkpoint chain across every record of it and name the first break.

The records: this work tree's ledger, the ledger as committed along HEAD's history, every commit of
`refs/shift/ledgers/<run>` (this clone's and each remote's fetched copy) and the handoff notes on
HEAD's history. Each full checkpoint is digested (ledger/chain.py); a break is a ledger whose own
links or epochs do not hold, one checkpoint (by its id) recorded two different ways,
a checkpoint whose `prev` matches no record of the one before it, or a history entry whose digest
matches no record of the checkpoint it summarises, or a checkpoint whose `ledger` (the ledger-ref commit it
was written onto) is not a commit before it on the ledger ref, holding an earlier checkpoint. Signed
ledger-ref and snapshot commits have their signatures checked by git (`%G?`): a bad one is a break. Nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from shiftgit import rawjson
from shiftgit.git import handoff
from shiftgit.git.notes import DATA_REF, NOTES_REF, note_blobs
from shiftgit.git.notestree import CatFile
from shiftgit.ledger import chain
from shiftgit.ledger.store import Store
from shiftgit.repo import clean_env

LIMIT = 500  # commits read per history
SIGNED = {"G": "good", "U": "good", "B": "bad", "N": "unsigned"}


class Seen(NamedTuple):
    """A full checkpoint as one record holds it."""

    seq: int
    id: str
    epoch: int
    digest: str
    prev: Any
    chained: bool
    where: str


class Finding(NamedTuple):
    seq: int | None
    what: str
    where: str

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "what": self.what, "where": self.where}

    def line(self) -> str:
        head = f"checkpoint #{self.seq}" if self.seq is not None else "the lease"
        return f"{head}: {self.what} (in {self.where})"


def verify_chain(store: Store, run: str) -> dict[str, Any]:
    """The chain report: `result` intact | broken, every break (`first` is the one to look at), signatures."""
    store.document(run)  # an unknown run or a corrupt ledger is reported as such
    repo = store.repo
    documents = _documents(store, run)
    signatures = _signatures(store, run)
    findings: list[Finding] = []
    seen: list[Seen] = []
    claims: list[tuple[int, str, str]] = []  # (seq, digest, where) from history entries
    for where, document in documents:
        findings += [Finding(b.seq, b.what, where) for b in chain.ledger_breaks(document)]
        point = document.get("checkpoint")
        if isinstance(point, Mapping) and isinstance(point.get("seq"), int):
            seen.append(_seen(point, where))
        for entry in document.get("history") or []:
            if isinstance(entry, Mapping) and entry.get("digest") and isinstance(entry.get("seq"), int):
                claims.append((entry["seq"], str(entry["digest"]), where))
    seen += _noted(store, run)
    findings += _off_ledger(store, run, documents[0][1], documents[0][0])
    findings += _rewritten(seen) + _unlinked(seen, claims) + _bad_claims(seen, claims)
    findings += [Finding(None, f"commit {commit[:12]} has a bad signature", ref)
                 for ref, commit in signatures.pop("bad_commits")]
    findings = _unique(findings)
    findings.sort(key=lambda f: (f.seq if f.seq is not None else -1))
    del repo
    return {"run": run, "result": "broken" if findings else "intact",
            "first": findings[0].to_dict() if findings else None, "breaks": [f.to_dict() for f in findings],
            "checkpoints": len({s.seq for s in seen}), "records": len(documents), "signatures": signatures}


def exit_code(report: Mapping[str, Any]) -> int:
    return 1 if report["result"] == "broken" else 0


def text(report: Mapping[str, Any]) -> str:
    sig = report["signatures"]
    signed = f"signatures: {sig['good']} good, {sig['bad']} bad, {sig['unchecked']} not checkable here"
    if report["result"] == "intact":
        return (f"chain of run {report['run']}: intact ({report['checkpoints']} checkpoint(s) across "
                f"{report['records']} record(s); {signed})")
    first = Finding(**report["first"])
    lines = [f"chain of run {report['run']}: BROKEN at {first.line()}"]
    lines += [f"  also: {Finding(**b).line()}" for b in report["breaks"][1:10]]
    lines.append(f"  {signed}; nothing was changed")
    return "\n".join(lines)


# -- the records ---------------------------------------------------------------------------------------

def _documents(store: Store, run: str) -> list[tuple[str, dict[str, Any]]]:
    repo = store.repo
    rel = store.rel(store.ledger_path(run))
    found: list[tuple[str, dict[str, Any]]] = [(rel + " (work tree)", store.document(run))]
    names: list[tuple[str, str]] = []
    if repo.head():
        for commit in repo.git("log", f"--max-count={LIMIT}", "--format=%H", "HEAD", "--", rel).split():
            names.append((f"{rel} at commit {commit[:12]}", f"{commit}:{rel}"))
    for ref in _ledger_refs(store, run):
        for commit in repo.git("log", f"--max-count={LIMIT}", "--format=%H", ref).split():
            names.append((f"{ref} commit {commit[:12]}", f"{commit}:ledger.json"))
    with CatFile(repo.root, clean_env()) as cat:
        answers = cat.get([name for _, name in names])
    for (where, _), answer in zip(names, answers, strict=True):
        document = _json(answer[2]) if answer is not None else None
        if document is not None:
            found.append((where, document))
    return found


def _ledger_refs(store: Store, run: str) -> list[str]:
    out = store.repo.git("for-each-ref", "--format=%(refname)", f"refs/shift/ledgers/{run}",
                         f"refs/shift-remote/*/shift/ledgers/{run}")
    return out.split()


def _noted(store: Store, run: str) -> list[Seen]:
    """The checkpoints the handoff notes on HEAD's history carry for the run."""
    repo = store.repo
    if not repo.head():
        return []
    # the machine records (refs/notes/shift-data); a note written before the split carries its JSON itself
    blobs = {**note_blobs(repo.root, NOTES_REF), **note_blobs(repo.root, DATA_REF)}
    commits = [c for c in repo.git("rev-list", f"--max-count={LIMIT}", "HEAD").split() if c in blobs]
    if not commits:
        return []
    with CatFile(repo.root, clean_env()) as cat:
        answers = cat.get([blobs[c] for c in commits])
    found = []
    for commit, answer in zip(commits, answers, strict=True):
        note = handoff.parse_note(answer[2].decode("utf-8", "replace")) if answer is not None else None
        for point in (note or {}).get("checkpoints") or []:
            if isinstance(point, Mapping) and point.get("run") == run and isinstance(point.get("seq"), int):
                found.append(_seen(point, f"the handoff record of commit {commit[:12]}"))
    return found


def _off_ledger(store: Store, run: str, working: Mapping[str, Any], where: str) -> list[Finding]:
    """Checkpoints whose `ledger` link is not a commit before them on the ledger ref, holding the one before.

    On each ledger ref, the commit that first holds a checkpoint must have the linked commit among its
    ancestors; the work tree's checkpoint must link to a commit some ledger ref here holds. Either way
    the linked ledger holds an earlier checkpoint. A ledger ref rewritten, or a checkpoint forged by hand
    (or copied from elsewhere) with a link that does not fit, is named."""
    repo = store.repo
    parents: dict[str, list[str]] = {}
    heads = []
    for ref in _ledger_refs(store, run):
        lines = repo.git("log", f"--max-count={LIMIT}", "--format=%H %P", ref).splitlines()
        heads.append((ref, [line.split()[0] for line in lines if line]))
        parents.update({line.split()[0]: line.split()[1:] for line in lines if line})
    if not parents:
        return []
    commits = list(parents)
    with CatFile(repo.root, clean_env()) as cat:
        answers = cat.get([f"{c}:ledger.json" for c in commits])
    points: dict[str, Mapping[str, Any]] = {}
    for commit, answer in zip(commits, answers, strict=True):
        document = _json(answer[2]) if answer is not None else None
        point = document.get("checkpoint") if document else None
        points[commit] = point if isinstance(point, Mapping) else {}

    def held(commit: str) -> int | None:
        seq = points.get(commit, {}).get("seq")
        return seq if isinstance(seq, int) else (0 if commit in points else None)

    def ancestors(commit: str) -> set[str]:
        found: set[str] = set()
        todo = list(parents.get(commit, []))
        while todo:
            one = todo.pop()
            if one not in found:
                found.add(one)
                todo += parents.get(one, [])
        return found

    def bad(point: Mapping[str, Any], before: set[str] | None) -> str | None:
        link, seq = point.get("ledger"), point.get("seq")
        if not isinstance(link, str) or not isinstance(seq, int):
            return None
        if link not in parents or (before is not None and link not in before):
            return (f"it was written onto ledger-ref commit {link[:12]}, which is not in the ledger ref's history "
                    "before it (the ledger ref was rewritten, or this checkpoint was forged or copied)")
        if (held(link) or 0) >= seq:  # two checkpoints racing in one work tree may both link the same older one
            return (f"it was written onto ledger-ref commit {link[:12]}, which already holds checkpoint "
                    f"#{held(link)} (a forged or moved checkpoint)")
        return None

    found = []
    for ref, order in heads:
        for commit in order:
            point = points[commit]
            if any(points.get(p, {}).get("id") == point.get("id") for p in parents[commit]):
                continue  # not where this checkpoint was first committed
            why = bad(point, ancestors(commit))
            if why is not None:
                found.append(Finding(point.get("seq"), why, f"{ref} commit {commit[:12]}"))
    point = working.get("checkpoint")
    why = bad(point, None) if isinstance(point, Mapping) else None
    if why is not None and isinstance(point, Mapping):
        found.append(Finding(point.get("seq"), why, where))
    return found


def _signatures(store: Store, run: str) -> dict[str, Any]:
    """Git's verdict on every signed ledger-ref and snapshot commit of the run."""
    repo = store.repo
    counts: dict[str, Any] = {"good": 0, "bad": 0, "unchecked": 0, "unsigned": 0, "bad_commits": []}
    refs = [*_ledger_refs(store, run), *repo.git("for-each-ref", "--format=%(refname)",
                                                 f"refs/shift/snapshots/{run}").split()]
    for ref in refs:
        for line in repo.git("log", f"--max-count={LIMIT}", "--format=%H %G?", ref).splitlines():
            commit, _, flag = line.partition(" ")
            verdict = SIGNED.get(flag, "unchecked")
            counts[verdict] += 1
            if verdict == "bad":
                counts["bad_commits"].append((ref, commit))
    return counts


# -- the links -----------------------------------------------------------------------------------------

def _seen(point: Mapping[str, Any], where: str) -> Seen:
    epoch = point.get("epoch")
    return Seen(point["seq"], str(point.get("id")), epoch if isinstance(epoch, int) else 0, chain.digest(point),
                point.get("prev"), chain.is_chained(point), where)


def _rewritten(seen: list[Seen]) -> list[Finding]:
    """One checkpoint (by its id) recorded two different ways."""
    first: dict[tuple[int, str], Seen] = {}
    found = []
    for record in seen:
        key = (record.seq, record.id)
        other = first.setdefault(key, record)
        if other.digest != record.digest:
            found.append(Finding(record.seq, f"differs from checkpoint #{record.seq} as recorded in {record.where} "
                                             "(rewritten after the fact)", other.where))
    return found


def _unlinked(seen: list[Seen], claims: list[tuple[int, str, str]]) -> list[Finding]:
    """A checkpoint whose prev matches no record of the checkpoint before it."""
    known: dict[int, set[str]] = {}
    for record in seen:
        known.setdefault(record.seq, set()).add(record.digest)
    for seq, digest, _ in claims:
        known.setdefault(seq, set()).add(digest)
    found = []
    for record in seen:
        before = known.get(record.seq - 1)
        if not record.chained or record.seq <= 1 or not before or record.prev is None:
            continue
        if record.prev not in before:
            found.append(Finding(record.seq, f"its prev matches no record of checkpoint #{record.seq - 1} (that one "
                                             "was rewritten or dropped, or this one was inserted)", record.where))
    return found


def _bad_claims(seen: list[Seen], claims: list[tuple[int, str, str]]) -> list[Finding]:
    """A history entry whose digest matches none of the recorded versions of its checkpoint."""
    full: dict[int, dict[str, str]] = {}
    for record in seen:
        full.setdefault(record.seq, {}).setdefault(record.digest, record.where)
    return [Finding(seq, f"the ledger's history entry for it matches no record of it: the one in "
                         f"{next(iter(full[seq].values()))} differs (rewritten after the fact)", where)
            for seq, digest, where in claims if full.get(seq) and digest not in full[seq]]


def _unique(findings: list[Finding]) -> list[Finding]:
    return list(dict.fromkeys(findings))


def _json(data: bytes) -> dict[str, Any] | None:
    try:
        document = rawjson.loads(data)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None
