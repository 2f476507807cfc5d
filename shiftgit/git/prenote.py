"""The note of a checkpointed commit, rendered before the commit: by the checkpoint when it can, else by the gate.

The gate's child (git/waiter.py) has to load handoff's rendering and the secret scanner's regular expressions (~7 ms
of CPU, a third of the gate's own work) to render the note (git/quicknote.py's key, `prepare`) while the commit is
made, and on a 2-core machine that work competes with the gate and git for the CPU: post-commit waits for it. A
checkpoint loads the secret scanner anyway and writes the ledger the commit will stage; the ledger HEAD holds is the
one the last passing gate staged (kept in `<git-dir>/shift/committed-<run>`). So `prerender` renders at the
checkpoint the note of committing its ledger on that one, keyed as quicknote keys notes: by both blob ids (the note is
a pure function of the two ledgers). The gate's child finds it keyed as its commit (`prerendered`) and renders
nothing; any other commit (other bytes staged, another HEAD, other ledgers changed too, no remembered ledger) has
another key and renders its own (`note_of`), as before.
"""

from __future__ import annotations

import os

from shiftgit.git import quicknote
from shiftgit.git.rawgit import object_id

TYPE_CHECKING = False  # typing costs ~4 ms to import
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    Prepared = tuple[list[str], str, str]  # key, note, record

COMMITTED = "committed-"  # <git-dir>/shift/committed-<run>: "<blob id>\n", then the ledger bytes the last gate passed


def note_of(gitdir: str, changes: list[tuple[str, str | None, str | None]],
            ledgers: Callable[[list[str]], Mapping[str, tuple[bytes | None, bytes | None]]]) -> Prepared | None:
    """The note of the commit that makes these staged ledger changes, prepared (`prepare`) for post-commit: the one
    the checkpoint prepared when its key is this commit's (`prerender`), else rendered from `ledgers` (run ->
    HEAD's and the staged bytes, for the keyed runs). The staged ledgers are remembered for the next checkpoint's
    `prerender`. None when the commit gets no note."""
    lines = quicknote.key(changes, _width(changes))
    runs = sorted({run for line in lines if (run := quicknote.ledger_run(line.split(" ", 2)[-1]))})
    found = quicknote.read_prepared(gitdir)
    if found is not None and found[0] == lines and lines:  # the checkpoint rendered it (`prerender`): left as it is
        _, note, data = found  # (rewriting it, renamed over the old, costs ~0.3-1 ms on ext4: it flushes the data)
        staged = {run: new for run, (_, new) in ledgers(runs).items()}
    else:
        from shiftgit.git import handoff

        both = ledgers(runs)
        staged = {run: new for run, (_, new) in both.items()}
        document = handoff.note_document({run: (_parsed(old), _parsed(new)) for run, (old, new) in both.items()}, None)
        if document is None or not lines:
            return None
        note, data = handoff.pair(document)
        try:
            quicknote.prepare(gitdir, lines, note, data)
        except OSError:
            pass  # only post-commit's fast way is lost: it renders the note itself
    for path, _, new in changes:
        run = quicknote.ledger_run(path) or ""
        kept = staged.get(run)
        if new and kept is not None:
            _write_new(os.path.join(gitdir, "shift", f"{COMMITTED}{run}"), new.encode() + b"\n" + kept)
    return lines, note, data


def _write_new(path: str, data: bytes) -> None:
    """PATH written as a new file: not renamed over the old one, which ext4 makes flush the data first (~0.3-1 ms
    for a ledger here). A reader that catches it half written finds that the bytes are not their blob id
    (`prerender`): it renders nothing, and the gate renders the note. A failure is silent."""
    try:
        if os.path.lexists(path):
            os.unlink(path)
        with open(path, "wb") as out:
            out.write(data)
    except OSError:
        pass


def prerendered(gitdir: str, changes: list[tuple[str, str | None, str | None]]) -> bool:
    """Whether the note of the commit making these changes is prepared already (`prerender`): nothing to render."""
    found = quicknote.read_prepared(gitdir)
    return found is not None and found[0] == quicknote.key(changes, _width(changes)) and bool(found[0])


def prerender(gitdir: str, run: str, data: bytes) -> None:
    """At a checkpoint, which loads the secret scanner anyway: prepare the note of a commit of RUN's ledger bytes
    DATA on the ledger HEAD holds as the last gated commit staged it (`note_of` kept it), keyed by both blob ids;
    the gate's child then finds it keyed as its commit and renders nothing. A commit that stages other bytes, or
    on another HEAD, or that changes other ledgers too, has another key: it renders its own."""
    try:
        with open(os.path.join(gitdir, "shift", f"{COMMITTED}{run}"), "rb") as src:
            old_id, _, old = src.read().partition(b"\n")
        old_hex = old_id.decode("ascii")
    except (OSError, UnicodeError):
        return
    width, path = len(old_hex), quicknote.ledger_path(run)
    if width not in (40, 64) or not quicknote.ledger_run(path) or object_id("blob", old, width) != old_hex:
        return  # not the bytes of that blob id (a torn or hand-edited file): nothing to key a note by
    new_hex = object_id("blob", data, width)
    lines = quicknote.key([(path, old_hex, new_hex)], width)
    if not lines or (quicknote.read_prepared(gitdir) or ([],))[0] == lines:
        return
    from shiftgit.git import handoff

    redact = not _redacted(gitdir, run, new_hex)
    document = handoff.note_document({run: (_parsed(old), _parsed(data))}, None, redact=redact)
    try:
        if document is not None:
            quicknote.prepare(gitdir, lines, *handoff.pair(document), pid=0)
    except OSError:
        pass  # the gate renders it


def _redacted(gitdir: str, run: str, new_hex: str) -> bool:
    """The ledger bytes of blob NEW_HEX (a sha1 id) are bytes shiftgit wrote, every string in them redacted
    (ledger/validated.py), and the run's id redacts to itself: a note of them needs no redacting again (a
    checkpoint's note holds its file records: ~2 ms for 1,000)."""
    from shiftgit.ledger import validated
    from shiftgit.ledger.secrets import redact

    return len(new_hex) == 40 and validated.WRITTEN + new_hex in validated.known(gitdir) and redact(run) == run


def _width(changes: list[tuple[str, str | None, str | None]]) -> int:
    return next((len(oid) for _, old, new in changes for oid in (old, new) if oid), 40)


def _parsed(data: bytes | None) -> Any:
    """Raw JSON, None when absent or not JSON (as the gate's `view.parse_json`)."""
    from shiftgit import rawjson

    try:
        return rawjson.loads(data) if data is not None else None
    except ValueError:
        return None
