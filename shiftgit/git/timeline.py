"""`shiftgit log`: the checkpoint timeline along HEAD's history, newest first, read from notes.

HEAD's commits come from one `git log` with their machine records (refs/notes/shift-data: git reads that
notes tree itself, once), streamed in rounds (git/notewalk.py). For each round one `cat-file --batch`,
started only when there is something to ask it, reads, per other notes ref (each remote's fetched copies,
outside refs/notes/ where `git log` does not look, and the human notes), only the fanout subtrees those
commits' notes live in (each at most once), then their note blobs: a remote's records are merged in; human
notes are read only for commits without a record (a note written before the split carries its JSON itself;
the record wins where both are, as everywhere in shiftgit). The walk stops (and stops `git log`) once
`limit` checkpoints are found. So `log -n N` costs what N needs, not what the history holds.
A working ledger's checkpoint that HEAD's committed ledger does not carry yet comes first, without a commit.
`text` prints the committed checkpoints' lines straight from their records, with no entry built for each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import islice

from shiftgit import textsafe
from shiftgit.errors import ShiftError
from shiftgit.git import handoff, ledgerref
from shiftgit.git.notes import DATA_REF, NOTES_REF
from shiftgit.git.notestree import CatFile
from shiftgit.git.notewalk import MAX_ROUND, LazyCatFile, NoteIndex, history, named
from shiftgit.git.view import parse_json
from shiftgit.ledger.store import Store
from shiftgit.repo import clean_env

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any

    from shiftgit.git.sources import Source

    Point = tuple[str, Mapping[str, Any], Mapping[str, Any], bool]  # commit, checkpoint, its record, note lost


def listing(store: Store) -> str:
    """What `log` asks of the refs, in one `for-each-ref`: the notes refs and the ledger refs (git/ledgerref.py)."""
    return ledgerref.listing(store.repo, DATA_REF, NOTES_REF)


def notes_refs(store: Store, refs_listing: str | None = None) -> list[str]:
    """The notes refs there are to read (in `refs_listing`, else `listing`): the machine records (ours, then each
    remote's copy under refs/shift-remote/<remote>/notes/), then the human notes the same way (as sync.notes_refs)."""
    out = ledgerref.names(listing(store) if refs_listing is None else refs_listing)
    fetched = sorted(r for r in out if r.startswith("refs/shift-remote/"))
    return ([r for r in (DATA_REF,) if r in out] + [r for r in fetched if r.endswith("/notes/shift-data")]
            + [r for r in (NOTES_REF,) if r in out] + [r for r in fetched if r.endswith("/notes/shift")])




def timeline(store: Store, limit: int | None = None, refs: list[str] | None = None,
             refs_listing: str | None = None) -> list[dict[str, Any]]:
    """Checkpoints, newest first: uncommitted ones (no `commit`), then those the notes of HEAD's history hold
    (`refs`: what notes_refs(store) says, when the caller asked it already; `refs_listing`: what `listing` said)."""
    head, entries = _uncommitted(store, refs_listing)
    entries += [entry(point, commit, document, lost) for commit, point, document, lost
                in _committed(store, head, entries, limit, refs)]
    return entries[:limit] if limit is not None else entries


def text(store: Store, limit: int | None = None, refs: list[str] | None = None,
         refs_listing: str | None = None) -> str:
    """What `render(timeline(store, limit, ...))` prints, without building the entries of committed checkpoints."""
    head, entries = _uncommitted(store, refs_listing)
    lines = [_entry_line(e) for e in entries[:limit]]
    lines += [_line(commit, point, lost) for commit, point, _, lost in _committed(store, head, entries, limit, refs)]
    return "\n".join(lines) if lines else EMPTY


def _uncommitted(store: Store, refs_listing: str | None) -> tuple[str | None, list[dict[str, Any]]]:
    """HEAD, and the checkpoints no commit of it carries yet: published ones, then the working ledgers' (the
    records of every run read once, git/sources.py: HEAD's ledgers and the published ones)."""
    head = _head(store)
    working = store.ledger_files()  # every run's file: one directory listing, one open each
    if not working:
        return head, []
    from shiftgit.git.sources import collect

    records = collect(store, list(working), refs_listing, working)
    entries = _working(store, head, records)
    return head, _published(records, {e["id"] for e in entries}) + entries


def _head(store: Store) -> str | None:
    """`store.repo.head()`: read from the git dir's files where git keeps it plainly (git/headref.py, as the agent
    hooks read it), else asked of git started without the subprocess module where it can be (notestree.run_git: its
    import with signal, threading and selectors is ~5 ms of a `log -n 20`)."""
    import os

    from shiftgit.git import headref
    from shiftgit.git.notestree import run_git

    repo = store.repo
    found = headref.read_head(str(repo.git_dir), str(repo.common_dir))
    if found != headref.ASK_GIT:
        return found
    out = run_git(repo.root, dict(os.environ), ["rev-parse", "--verify", "-q", "HEAD^{commit}"]).stdout
    return out.decode("utf-8", "surrogateescape").strip() or None


def _committed(store: Store, head: str | None, entries: list[dict[str, Any]], limit: int | None,
               refs: list[str] | None) -> Iterable[Point]:
    """The checkpoints of HEAD's history after `entries` (none of theirs again), up to `limit` in all."""
    if head is None or (limit is not None and len(entries) >= limit):
        return ()
    walk = _walk(store, {e["id"] for e in entries}, refs)
    return walk if limit is None else islice(walk, limit - len(entries))


def _walk(store: Store, seen: set[Any], refs: list[str] | None) -> Iterator[Point]:
    """Each checkpoint the notes of HEAD's history hold, newest commit first, once (by id). Stopped early, it
    stops `git log` too."""
    repo = store.repo
    with LazyCatFile(repo.root, clean_env()) as cat:
        refs = notes_refs(store) if refs is None else refs
        fetched = [NoteIndex(cat, ref) for ref in refs if ref.endswith("/shift-data") and ref != DATA_REF]
        human = [NoteIndex(cat, ref) for ref in refs if not ref.endswith("/shift-data")]
        parse = handoff.parse_note
        for rows in history(repo, [DATA_REF] if DATA_REF in refs else []):
            chunk = [commit for commit, _, _ in rows]
            local = {}
            for commit, _, note in rows:
                if note and (found := parse(note)):
                    local[commit] = found
            blobs: dict[str, list[str]] = {}
            for index in fetched:  # a remote's records, fetched and not merged yet: merged in
                for commit, blob in index.blobs(chunk).items():
                    blobs.setdefault(commit, []).append(blob)
            # The commits before the first one without a record need nothing more: their checkpoints come first,
            # and `log -n N` that finds N there never looks up the rest (human notes, trailers).
            first = next((i for i, c in enumerate(chunk) if c not in local and c not in blobs), len(chunk))
            for part in (rows[:first], rows[first:]):
                for commit, document, lost in _documents(store, cat, human, part, local, blobs):
                    points = document.get("checkpoints")
                    if not (type(points) is list and len(points) == 1 and type(points[0]) is dict):
                        points = _points(document)
                    for point in points:
                        key = point.get("id")
                        try:
                            if key in seen:
                                continue
                        except TypeError:  # an id no checkpoint of shiftgit's has (a list, an object): its JSON
                            import json  # here: json loads re, which `log` otherwise does without

                            key = ("json", json.dumps(key, sort_keys=True))
                            if key in seen:
                                continue
                        seen.add(key)
                        yield commit, point, document, lost


def _documents(store: Store, cat: CatFile, human: list[NoteIndex], rows: list[tuple[str, bool, str]],
               local: Mapping[str, dict[str, Any]], blobs: dict[str, list[str]]
               ) -> Iterable[tuple[str, Mapping[str, Any], bool]]:
    """The records of ROWS' commits, in their order, each marked when recomputed: LOCAL (what `git log` gave),
    BLOBS (a remote's, fetched), a human note's JSON where a commit has neither, a record recomputed where a commit
    names a checkpoint and has no note (its note lost)."""
    if not rows:
        return []
    repo = store.repo
    chunk = [commit for commit, _, _ in rows]
    bare = [c for c in chunk if c not in local and c not in blobs]  # no record: a note written before the
    for index in human if bare else ():  # split carries its JSON itself (a record's human note has none)
        for commit, blob in index.blobs(bare).items():
            blobs.setdefault(commit, []).append(blob)
    unnoted = [c for c, mentions, note in rows if mentions and not note.strip() and c not in blobs]
    lost = _recomputed(store, named(repo, unnoted) if unnoted else [])
    if any(c in blobs for c in chunk) or lost:
        noted = [c for c in chunk if c in local or c in blobs or c in lost]
        return ((c, document, c in lost) for c, document in _notes(cat, noted, local, blobs, lost))
    return [(c, local[c], False) for c in chunk if c in local]  # each record as `git log` gave it: the common case



def _points(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A record's checkpoints, newest first (anything else in its list left out)."""
    points = document.get("checkpoints")
    if type(points) is not list:  # JSON's list only: a string or an object holds no checkpoint
        return []
    if len(points) == 1:
        return points if isinstance(points[0], Mapping) else []
    return sorted((p for p in points if isinstance(p, Mapping)), key=_at_seq, reverse=True)


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
            if commit not in blobs:  # the record `git log` gave: the common case
                yield commit, local[commit]
                continue
            found = [handoff.parse_note(t[2].decode("utf-8", "replace")) for t in
                     (next(texts) for _ in blobs.get(commit, ())) if t is not None]
            documents = ([local[commit]] if commit in local else []) + [d for d in found if d is not None]
            if documents:
                yield commit, documents[0] if len(documents) == 1 else handoff.merged(documents)


def _working(store: Store, head: str | None, records: Mapping[str, list[Source]]) -> list[dict[str, Any]]:
    """Checkpoints of the working ledgers that HEAD's committed ledgers do not carry."""
    committed = {run: _checkpoint_id(found[0].committed) for run, found in records.items()
                 if head and found and found[0].kind != "published"}
    entries = []
    for run in records:
        try:  # the checked JSON, no model: what entry() reads is there (a left-out key reads as its default)
            point = store.document(run, migrate=True).get("checkpoint")
        except ShiftError:
            continue  # `shiftgit status` and `validate` report a broken ledger
        if isinstance(point, dict) and committed.get(run) != point.get("id"):
            entries.append(entry({**point, "run": run}, None, None))
    return sorted(entries, key=lambda e: str(e.get("at")), reverse=True)


def _published(records: Mapping[str, list[Source]], seen: set[Any]) -> list[dict[str, Any]]:
    """Checkpoints published (by another machine, or before this work tree's ledger went back) that are newer
    than the work tree's ledger: the newest record of their run (git/sources.py)."""
    from shiftgit.git.sources import pick

    entries = []
    for run, found in records.items():
        best = pick(found)
        source = best if best is not None and best.kind == "published" else None
        point = handoff.checkpoint_of(parse_json(source.data)) if source is not None else None
        if source is not None and point and point.get("id") not in seen:
            entries.append({**entry({**point, "run": run}, None, None), "source": "published",
                            "host": source.host, "ref": source.ref, "describe": source.describe()})
    return sorted(entries, key=lambda e: str(e.get("at")), reverse=True)


def _checkpoint_id(data: bytes | None) -> Any:
    """The id of the checkpoint a ledger's bytes hold (None: none, or no bytes)."""
    point = handoff.checkpoint_of(parse_json(data) if data is not None else None)
    return point.get("id") if point else None


def entry(point: Mapping[str, Any], commit: str | None, document: Mapping[str, Any] | None,
          lost: bool = False) -> dict[str, Any]:
    """A checkpoint as `log --json` shows it (`lost`: its commit's note is missing, the record recomputed)."""
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
    if lost:
        out["note_missing"] = True
    return out


def _at_seq(point: Any) -> tuple[str, int]:
    if not isinstance(point, Mapping):
        return "", 0
    seq = point.get("seq")
    return str(point.get("at")), seq if isinstance(seq, int) else 0


TEXT_CAP = 200  # characters of a note's text per line


EMPTY = "no checkpoints yet; record one with `shiftgit checkpoint --step ...`"
MISSING = " [note missing: `shiftgit notes repair`]"


def render(entries: list[dict[str, Any]]) -> str:
    """One line per checkpoint. Notes come from anyone who can push: their text is shown, never obeyed
    (line breaks and terminal escape sequences appear escaped)."""
    return "\n".join(_entry_line(e) for e in entries) if entries else EMPTY


def _entry_line(e: Mapping[str, Any]) -> str:
    where = _shown(str(e["commit"])[:10]) if e.get("commit") else f"({_shown(e.get('source') or 'working')})"
    nxt = f" — next: {_shown(e['next'])}" if e.get("next") else ""
    head = f"{_shown(e['run'])} #{_shown(e['seq'])} {_shown(e.get('at') or '')}"
    mark = " [milestone]" if e.get("milestone") else ""
    lost = MISSING if e.get("note_missing") else ""
    return f"{where:<10} {head} {_shown(e.get('step') or '(no step)')}{mark}{nxt}{lost}"


def _line(commit: str, point: Mapping[str, Any], lost: bool) -> str:
    """_entry_line(entry(point, commit, ...)) without the entry: the whole line is built from the values as they
    are, and kept when it needs nothing escaped or cut (every character `_shown` escapes is one that
    str.isprintable refuses; no value can be longer than the line); else each value is shown on its own."""
    get = point.get
    action = get("next")
    nxt = action.get("action") if type(action) is dict or isinstance(action, Mapping) else None
    milestone = " [milestone]" if get("milestone") else ""
    line = (f"{commit[:10]:<10} {get('run')} #{get('seq')} {get('at') or ''} {get('step') or '(no step)'}{milestone}"
            f"{f' — next: {nxt}' if nxt else ''}{MISSING if lost else ''}")
    if len(line) <= TEXT_CAP and line.isprintable():
        return line
    return _entry_line({"commit": commit, "run": get("run"), "seq": get("seq"), "at": get("at"), "step": get("step"),
                        "milestone": milestone, "next": nxt, "note_missing": lost})


def _shown(value: Any) -> str:
    text = str(value)
    if len(text) <= TEXT_CAP and text.isascii() and text.isprintable():  # nothing to escape or cut
        return text
    return textsafe.one_line(text, TEXT_CAP)
