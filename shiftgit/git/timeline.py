"""`shiftgit log`: the checkpoint timeline along HEAD's history, newest first, read from notes.

`git log HEAD` is streamed in rounds of ROUND commits, each round twice the last (up to MAX_ROUND: a
whole history takes few round trips), each commit with its machine record (refs/notes/shift-data: git
reads that notes tree itself, once). For each round one `cat-file --batch` reads, per other notes ref
(each remote's fetched copies, outside refs/notes/ where `git log` does not look, and the human notes),
only the fanout subtrees those commits' notes live in (each at most once), then their note blobs: a
remote's records are merged in; human notes are read only for commits without a record (a note written
before the split carries its JSON itself; the record wins where both are, as everywhere in shiftgit).
It stops once `limit` checkpoints are found. So `log -n N` costs what N needs, not what the history holds.
A working ledger's checkpoint that HEAD's committed ledger does not carry yet comes first, without a commit.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from io import BufferedReader
from typing import Any, cast

from shiftgit import textsafe
from shiftgit.errors import GitError, ShiftError
from shiftgit.git import handoff
from shiftgit.git.notes import DATA_REF, NOTES_REF
from shiftgit.git.notestree import CatFile, Entry, id_width, notes_under, read_root
from shiftgit.git.view import ledger_path, parse_json
from shiftgit.ledger.store import Store
from shiftgit.repo import Repo, clean_env

ROUND = 64
MAX_ROUND = 4096


def notes_refs(store: Store) -> list[str]:
    """The notes refs there are to read, in one `for-each-ref`: the machine records (ours, then each remote's
    copy under refs/shift-remote/<remote>/notes/), then the human notes the same way (sync.notes_refs' order)."""
    out = store.repo.git("for-each-ref", "--format=%(refname)", DATA_REF, NOTES_REF, "refs/shift-remote/").split()
    fetched = sorted(r for r in out if r.startswith("refs/shift-remote/"))
    return ([r for r in (DATA_REF,) if r in out] + [r for r in fetched if r.endswith("/notes/shift-data")]
            + [r for r in (NOTES_REF,) if r in out] + [r for r in fetched if r.endswith("/notes/shift")])


def timeline(store: Store, limit: int | None = None) -> list[dict[str, Any]]:
    """Checkpoints, newest first: uncommitted ones (no `commit`), then those the notes of HEAD's history hold."""
    repo = store.repo
    head = repo.head()
    entries = _working(store, head)
    entries = _published(store, {e["id"] for e in entries}) + entries
    seen = {e["id"] for e in entries}
    if limit is not None and len(entries) >= limit:
        return entries[:limit]
    with CatFile(repo.root, clean_env()) as cat:
        refs = notes_refs(store)
        fetched = [_NoteIndex(cat, ref) for ref in refs if ref.endswith("/shift-data") and ref != DATA_REF]
        human = [_NoteIndex(cat, ref) for ref in refs if not ref.endswith("/shift-data")]
        for rows in _history(repo, [DATA_REF] if DATA_REF in refs else []) if head else ():
            chunk = [commit for commit, _, _ in rows]
            local = {commit: found for commit, _, text in rows if text and (found := handoff.parse_note(text))}
            blobs: dict[str, list[str]] = {}
            for index in fetched:  # a remote's records, fetched and not merged yet: merged in
                for commit, blob in index.blobs(chunk).items():
                    blobs.setdefault(commit, []).append(blob)
            bare = [c for c in chunk if c not in local and c not in blobs]  # no record: a note written before the
            for index in human if bare else ():  # split carries its JSON itself (a record's human note has none)
                for commit, blob in index.blobs(bare).items():
                    blobs.setdefault(commit, []).append(blob)
            lost = _recomputed(store, [c for c, named, text in rows if named and not text.strip() and c not in blobs])
            noted = [c for c in chunk if c in local or c in blobs or c in lost]
            for commit, document in _notes(cat, noted, local, blobs, lost):
                for point in sorted(document.get("checkpoints") or [], key=_at_seq, reverse=True):
                    if isinstance(point, Mapping) and point.get("id") not in seen:
                        seen.add(point.get("id"))
                        entries.append({**entry(point, commit, document),
                                        **({"note_missing": True} if commit in lost else {})})
            if limit is not None and len(entries) >= limit:
                break
    return entries[:limit] if limit is not None else entries


def _history(repo: Repo, notes: list[str]) -> Iterator[list[tuple[str, str, str]]]:
    """HEAD's commits, newest first, ROUND at first, then twice as many each round up to MAX_ROUND, as `git log`
    finds them (stopped when not read on), each with the checkpoint its Shift-Checkpoint trailer names ("" when
    none) and the texts of its notes on the `notes` refs, one after the other (git reads those notes trees
    itself; "" when none). A line starting with a random marker opens each commit: a note cannot forge one."""
    marker = os.urandom(8).hex()
    argv = ["git", "log", "--no-notes", *(f"--notes={ref}" for ref in notes),
            f"--format={marker}%H %(trailers:key=Shift-Checkpoint,valueonly,separator=%x2c)" + ("%n%N" if notes
                                                                                                else ""), "HEAD"]
    proc = subprocess.Popen(argv, cwd=repo.root, env=clean_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    stdout = cast(BufferedReader, proc.stdout)  # Popen's default: a buffered pipe
    finished = False
    try:
        chunk: list[tuple[str, str, str]] = []
        size = ROUND
        mark, rest = marker.encode(), b""
        while True:
            block = stdout.read1(1 << 16)  # what the pipe holds, up to 64 KiB
            parts = (rest + block).split(mark)
            rest = parts.pop() if block else b""  # the last may be cut short: it waits for the next block
            for part in parts:
                if part:
                    chunk.append(_row(part))
            if len(chunk) >= size or not block:
                if chunk:
                    yield chunk
                chunk, size = [], min(2 * size, MAX_ROUND)
            if not block:
                break
        finished = True
    finally:
        if not finished:
            proc.kill()
        proc.stdout.close()
        error = proc.stderr.read().decode("utf-8", "replace")
        proc.stderr.close()
        if proc.wait() != 0 and finished:
            raise GitError(argv[1:], error)


def _row(part: bytes) -> tuple[str, str, str]:
    """(commit, the checkpoint its trailer names, its notes' texts) from one commit's part of `git log`."""
    first, _, text = part.decode("utf-8", "replace").partition("\n")
    commit, _, named = first.strip().partition(" ")
    return commit, named.strip(), text


class _NoteIndex:
    """One notes ref's note blobs, read a fanout subtree at a time as the commits asked about need them."""

    def __init__(self, cat: CatFile, ref: str) -> None:
        tip, _, self.root = read_root(cat, ref)
        self.cat, self.width = cat, id_width(tip)
        self.found: dict[str, Entry] = {}
        self.read: set[str] = set()

    def blobs(self, commits: Iterable[str]) -> dict[str, str]:
        """commit -> note blob id, for those of `commits` with a note on this ref."""
        commits = list(commits)
        wanted = {c[:2] for c in commits} - self.read
        if wanted or not self.read:
            self.found.update(notes_under(self.cat, self.root, self.width, wanted))
            self.read |= wanted | {""}
        return {c: self.found[c].oid for c in commits if c in self.found}


def _recomputed(store: Store, commits: list[str]) -> dict[str, dict[str, Any]]:
    """The records of commits that name a checkpoint but have no note (a killed post-commit), recomputed
    from the commits for `log` to show, marked: `shiftgit notes repair` writes them."""
    if not commits:
        return {}
    from shiftgit.git.repair import records

    return records(store.repo.root, clean_env(), commits)


def _notes(cat: CatFile, commits: list[str], local: Mapping[str, dict[str, Any]], blobs: Mapping[str, list[str]],
           lost: Mapping[str, dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for start in range(0, len(commits), MAX_ROUND):
        chunk = commits[start:start + MAX_ROUND]
        names = [b for c in chunk for b in blobs.get(c, [])]
        texts = iter(cat.get(names) if names else ())
        for commit in chunk:
            if commit in lost:
                yield commit, lost[commit]
                continue
            found = [handoff.parse_note(t[2].decode("utf-8", "replace")) for t in
                     (next(texts) for _ in blobs.get(commit, ())) if t is not None]
            documents = ([local[commit]] if commit in local else []) + [d for d in found if d is not None]
            if documents:
                yield commit, documents[0] if len(documents) == 1 else handoff.merged(documents)


def _working(store: Store, head: str | None) -> list[dict[str, Any]]:
    """Checkpoints of the working ledgers that HEAD's committed ledgers do not carry."""
    runs = store.run_ids()
    committed = _committed_checkpoints(store, runs) if head else {}
    entries = []
    for run in runs:
        try:  # the checked JSON, no model: what entry() reads is there (a left-out key reads as its default)
            point = store.document(run, migrate=True).get("checkpoint")
        except ShiftError:
            continue  # `shiftgit status` and `validate` report a broken ledger
        if isinstance(point, dict) and committed.get(run) != point.get("id"):
            entries.append(entry({**point, "run": run}, None, None))
    return sorted(entries, key=lambda e: str(e.get("at")), reverse=True)


def _published(store: Store, seen: set[Any]) -> list[dict[str, Any]]:
    """Checkpoints published (by another machine, or before this work tree's ledger went back) that are newer
    than the work tree's ledger: the newest record of their run (git/sources.py)."""
    from shiftgit.git.sources import collect, pick

    entries = []
    for run, records in collect(store, store.run_ids()).items():
        best = pick(records)
        source = best if best is not None and best.kind == "published" else None
        point = handoff.checkpoint_of(parse_json(source.data)) if source is not None else None
        if source is not None and point and point.get("id") not in seen:
            entries.append({**entry({**point, "run": run}, None, None), "source": "published",
                            "host": source.host, "ref": source.ref, "describe": source.describe()})
    return sorted(entries, key=lambda e: str(e.get("at")), reverse=True)


def _committed_checkpoints(store: Store, runs: list[str]) -> dict[str, Any]:
    with CatFile(store.repo.root, clean_env()) as cat:
        answers = cat.get([f"HEAD:{ledger_path(run)}" for run in runs])
    out = {}
    for run, answer in zip(runs, answers, strict=True):
        point = handoff.checkpoint_of(parse_json(answer[2]) if answer else None)
        out[run] = point.get("id") if point else None
    return out


def entry(point: Mapping[str, Any], commit: str | None, document: Mapping[str, Any] | None) -> dict[str, Any]:
    raw = point.get("next")
    action: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    out: dict[str, Any] = {
        "run": point.get("run"), "seq": point.get("seq"), "step": point.get("step"), "id": point.get("id"),
        "at": point.get("at"), "next": action.get("action"), "done_when": action.get("done_when"),
        "checks": [handoff.check_summary(c) for c in point.get("checks") or [] if isinstance(c, Mapping)],
        "files": len(point.get("files") or []), "milestone": bool(point.get("milestone")),
    }
    if commit is not None:
        out = {"commit": commit, **out}
    if document is not None and handoff.skip_reason(document):
        out["skip"] = handoff.skip_reason(document)
    return out


def _at_seq(point: Any) -> tuple[str, int]:
    if not isinstance(point, Mapping):
        return "", 0
    seq = point.get("seq")
    return str(point.get("at")), seq if isinstance(seq, int) else 0


TEXT_CAP = 200  # characters of a note's text per line


def render(entries: list[dict[str, Any]]) -> str:
    """One line per checkpoint. Notes come from anyone who can push: their text is shown, never obeyed
    (line breaks and terminal escape sequences appear escaped)."""
    if not entries:
        return "no checkpoints yet; record one with `shiftgit checkpoint --step ...`"
    lines = []
    for e in entries:
        where = _shown(str(e["commit"])[:10]) if e.get("commit") else f"({_shown(e.get('source') or 'working')})"
        nxt = f" — next: {_shown(e['next'])}" if e.get("next") else ""
        head = f"{_shown(e['run'])} #{_shown(e['seq'])} {_shown(e.get('at') or '')}"
        mark = " [milestone]" if e.get("milestone") else ""
        lost = " [note missing: `shiftgit notes repair`]" if e.get("note_missing") else ""
        lines.append(f"{where:<10} {head} {_shown(e.get('step') or '(no step)')}{mark}{nxt}{lost}")
    return "\n".join(lines)


def _shown(value: Any) -> str:
    text = str(value)
    if len(text) <= TEXT_CAP and text.isascii() and text.isprintable():  # nothing to escape or cut
        return text
    return textsafe.one_line(text, TEXT_CAP)
