"""The handoff note on refs/notes/shift: a pure function of a commit, readable in `git log`.

A commit gets a note when it changes some run's ledger, or when the gate was skipped
(`SHIFT_SKIP`). Its content depends only on the commit's tree against its first parent's (the
ledgers each holds) and the skip reason, so a rewritten commit's note is recomputed from the new
commit alone (see githooks' post-rewrite). Human lines come first; the LAST line is the JSON:

    shiftgit handoff: demo #3 — found the sub bug
    next: fix sub() (done when test_sub passes)
    checks: unit exit 1 — 2 passed, 1 failed: tests/test_calc.py::test_sub
    files: calc.py
    {"checkpoints":[{..., "run":"demo"}],"runs":["demo"],"shift_note":1}

The JSON (compact, sorted keys): `shift_note` (format 1); `checkpoints`, each the checkpoint that
the commit's ledger carries and its first parent's does not, exactly as committed, plus `run`;
`runs`, whose ledgers the commit changed; `skip`, the SHIFT_SKIP reason when there was one. Tools
that merge notes (sync) parse the last line and union `checkpoints` by `id`, then call `note_text`.
Everything passes the secret scanner first: a note never holds a secret.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

NOTE_VERSION = 1
MAX_FILES = 8
MAX_FAILING = 3

Doc = Mapping[str, Any]


def checkpoint_of(ledger: Any) -> dict[str, Any] | None:
    point = ledger.get("checkpoint") if isinstance(ledger, Mapping) else None
    return dict(point) if isinstance(point, Mapping) and point.get("id") else None


def note_document(changes: Mapping[str, tuple[Any, Any]], skip: str | None) -> dict[str, Any] | None:
    """The note of a commit: `changes` maps run -> (first parent's ledger, the commit's), raw JSON.

    None when the commit changed no ledger and the gate was not skipped: such a commit gets no note.
    """
    if not changes and not skip:
        return None
    points = []
    for run, (old, new) in sorted(changes.items()):
        point, before = checkpoint_of(new), checkpoint_of(old)
        if point is not None and (before is None or before.get("id") != point.get("id")):
            points.append({**point, "run": run})
    document: dict[str, Any] = {"shift_note": NOTE_VERSION, "checkpoints": points, "runs": sorted(changes)}
    if skip:
        document["skip"] = skip
    return redacted(document)


def redacted(document: Mapping[str, Any]) -> dict[str, Any]:
    from shiftgit.ledger.secrets import redact_obj

    clean = redact_obj(dict(document))
    assert isinstance(clean, dict)
    return clean


def note_text(document: Doc) -> str:
    """Human lines, then the JSON on the last line."""
    points = [p for p in document.get("checkpoints") or [] if isinstance(p, Mapping)]
    lines: list[str] = []
    for point in points:
        lines += checkpoint_lines(point)
    if document.get("skip"):
        lines.append(f"shiftgit: commit gate skipped (SHIFT_SKIP): {_one_line(document['skip'])}")
    if not points and not document.get("skip"):
        runs = ", ".join(str(r) for r in document.get("runs") or []) or "no run"
        lines.append(f"shiftgit: no handoff (the ledger of {runs} changed without a new checkpoint)")
    lines.append(json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    return "\n".join(lines) + "\n"


def checkpoint_lines(point: Mapping[str, Any]) -> list[str]:
    step = _one_line(point.get("step") or "(no step)")
    lines = [f"shiftgit handoff: {point.get('run')} #{point.get('seq')} — {step}"]
    action = _mapping(point.get("next"))
    if action.get("action"):
        done = f" (done when {_one_line(action['done_when'])})" if action.get("done_when") else ""
        lines.append(f"next: {_one_line(action['action'])}{done}")
    checks = [c for c in point.get("checks") or [] if isinstance(c, Mapping)]
    if checks:
        lines.append("checks: " + "; ".join(check_summary(c) for c in checks))
    files = [f.get("path") for f in point.get("files") or [] if isinstance(f, Mapping)]
    if files:
        more = f" and {len(files) - MAX_FILES} more" if len(files) > MAX_FILES else ""
        lines.append("files: " + ", ".join(_one_line(p) for p in files[:MAX_FILES]) + more)
    if point.get("note"):
        lines.append(f"note: {_one_line(point['note'])}")
    return lines


def check_summary(check: Mapping[str, Any]) -> str:
    """`unit exit 1 — 2 passed, 1 failed: tests/test_calc.py::test_sub`."""
    if check.get("timed_out"):
        status = "timed out"
    elif check.get("exit_code") is None:
        status = "never finished"
    else:
        status = f"exit {check.get('exit_code')}"
    outcome = _mapping(check.get("outcome"))
    counts = ", ".join(f"{outcome[k]} {k}" for k in ("passed", "failed", "skipped")
                       if outcome.get(k) is not None and (outcome[k] or k != "skipped"))
    failing = [str(t) for t in check.get("failing") or []]
    text = f"{_one_line(check.get('name') or 'check')} {status}"
    if counts:
        text += f" — {counts}"
    if failing:
        more = f" (+{len(failing) - MAX_FAILING} more)" if len(failing) > MAX_FAILING else ""
        text += ": " + ", ".join(failing[:MAX_FAILING]) + more
    return text + (" (stale)" if check.get("fresh") is False else "")


def parse_note(text: str | None) -> dict[str, Any] | None:
    """The JSON of a shiftgit note (its last line), or None for anything else.

    A note that `sync` could only merge by keeping both texts (`--- merged note ---`) holds one JSON
    line per part: they are read as one, checkpoints united by id.
    """
    documents = []
    for line in (text or "").splitlines():
        if line.startswith("{"):
            try:
                document = json.loads(line)
            except ValueError:
                continue
            if isinstance(document, dict) and "shift_note" in document:
                documents.append(document)
    if len(documents) <= 1:
        return documents[0] if documents else None
    return merged(documents)


def merged(documents: Iterable[Doc]) -> dict[str, Any]:
    """Several notes of one commit (e.g. from two clones) as one: checkpoints united by id."""
    points: dict[str, dict[str, Any]] = {}
    runs: set[str] = set()
    skips: list[str] = []
    for document in documents:
        for point in document.get("checkpoints") or []:
            if isinstance(point, Mapping):
                points.setdefault(str(point.get("id")), dict(point))
        runs.update(str(r) for r in document.get("runs") or [])
        for reason in str(document.get("skip") or "").split("; "):  # a merged note's reasons count one by one
            if reason and reason not in skips:
                skips.append(reason)
    out: dict[str, Any] = {"shift_note": NOTE_VERSION, "runs": sorted(runs),
                           "checkpoints": sorted(points.values(), key=_order)}
    if skips:
        out["skip"] = "; ".join(sorted(skips))
    return out


def _order(point: Mapping[str, Any]) -> tuple[str, int, str]:
    seq = point.get("seq")
    return str(point.get("run")), seq if isinstance(seq, int) else 0, str(point.get("id"))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _one_line(value: Any) -> str:
    return " ".join(str(value).split())


def skip_reason(document: Doc | None) -> str | None:
    reason = document.get("skip") if document else None
    return reason if isinstance(reason, str) and reason else None


def carries_checkpoint(document: Doc | None) -> bool:
    return bool(document and document.get("checkpoints"))

