"""`check --keep-output`: a check's whole output, redacted, kept in git instead of only its tail.

The output is spooled to a private file while the command runs, redacted (chunk by chunk, cut at line
ends), and stored as a file named after the check id on `refs/shift/outputs/<run>` (a commit per kept
output, its tree the previous one plus this file; `sync` carries it). The check record keeps the blob id
(`output_blob`) beside its digest and tail, so a later session reads it with `shiftgit output CHECK-ID`
instead of running the command again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from shiftgit.errors import ShiftError, UsageError
from shiftgit.git import shiftrefs
from shiftgit.ledger.store import Store

KEEP_LIMIT = 32 * 1024 * 1024  # bytes kept; beyond it, the head and the tail
CHUNK = 1024 * 1024  # redaction works on about this much at a time, cut at a line end
CUT = b"\n[... %d bytes cut: shiftgit keeps at most %d bytes of a check's output ...]\n"


def ref(run: str) -> str:
    return f"refs/shift/outputs/{run}"


@contextlib.contextmanager
def spool(store: Store, check_id: str) -> Iterator[tuple[BinaryIO, Path]]:
    """A private file the runner writes the whole output to; removed afterwards."""
    path = store.repo.private("outputs", f"{check_id}.tmp")
    try:
        with open(path, "w+b") as handle:
            yield handle, path
    finally:
        path.unlink(missing_ok=True)


def keep(store: Store, run: str, check_id: str, path: Path) -> str:
    """Redact the spooled output and store it; returns its blob id."""
    text = redacted(_bounded(path))
    saved = shiftrefs.save(store.repo, ref(run), {check_id: text.encode()},
                           f"shiftgit output: {run} check {check_id}", carry=True)
    return saved.blobs[check_id]


def _bounded(path: Path) -> bytes:
    size = path.stat().st_size
    with open(path, "rb") as handle:
        if size <= KEEP_LIMIT:
            return handle.read()
        head = handle.read(KEEP_LIMIT // 2)
        handle.seek(size - KEEP_LIMIT // 2)
        return head + CUT % (size - KEEP_LIMIT, KEEP_LIMIT) + handle.read()


def redacted(data: bytes) -> str:
    """The output with every secret redacted, a chunk of about CHUNK bytes at a time, cut at line ends."""
    from shiftgit.ledger.secrets import redact

    text = data.decode("utf-8", "replace")
    parts, start = [], 0
    while start < len(text):
        end = min(start + CHUNK, len(text))
        if end < len(text):
            newline = text.rfind("\n", start, end)
            end = newline + 1 if newline > start else end
        parts.append(redact(text[start:end]))
        start = end
    return "".join(parts)


def read(store: Store, check_id: str) -> bytes:
    """The kept output of check `check_id`, from the ledgers' records or the runs' output refs."""
    found = _recorded_blob(store, check_id)
    data = store.repo.show(found) if isinstance(found, str) else None
    if data is not None:
        return data
    for name in store.repo.git("for-each-ref", "--format=%(refname)", "refs/shift/outputs/").split():
        data = shiftrefs.read(store.repo, name, check_id)
        if data is not None:
            return data
    kept = "it was run without --keep-output" if found is False else "no run here recorded it"
    raise UsageError(f"no kept output for check {check_id!r} ({kept}); run it with "
                     "`shiftgit check --keep-output -- CMD`, or list the checks with `shiftgit show RUN`")


def _recorded_blob(store: Store, check_id: str) -> str | bool | None:
    """The blob id a ledger records for the check; False when the check is recorded without one."""
    for run in store.run_ids():
        try:
            document = store.document(run)
        except ShiftError:  # a broken ledger is reported by the commands that read it, not here
            continue
        point = document.get("checkpoint") or {}
        for check in [*(document.get("pending_checks") or ()), *(point.get("checks") or ())]:
            if isinstance(check, dict) and check.get("id") == check_id:
                blob = check.get("output_blob")  # a blob id, never a revision (`HEAD:.env` in a crafted ledger)
                return blob if isinstance(blob, str) and len(blob) in (40, 64) and _is_hex(blob) else False
    return None


def _is_hex(text: str) -> bool:
    return all(char in "0123456789abcdef" for char in text)
