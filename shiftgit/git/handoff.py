"""The handoff of a commit: a short human note on refs/notes/shift (shown by `git log`) and the
machine record on refs/notes/shift-data (JSON, never displayed), both pure functions of the commit.

A commit gets them when it changes some run's ledger, or when the gate was skipped (`SHIFT_SKIP`).
Their content depends only on the commit's tree against its first parent's (the ledgers each holds)
and the skip reason, so a rewritten commit's handoff is recomputed from the new commit alone (see
githooks' post-rewrite), and a lost one is recomputed by `shiftgit notes repair`. The human note,
at most MAX_LINES lines and MAX_BYTES bytes, no JSON:

    shiftgit: demo #3 p1-75865b63 — found the sub bug
    next: fix sub() — done when: test_sub passes
    checks: 0 passed, 1 failed, 0 stale — failing: tests/test_calc.py::test_sub
    files: 1 changed — calc.py

The record (`data_text`, one compact JSON line, sorted keys): `shift_note` (format 1);
`checkpoints`, each the checkpoint that the commit's ledger carries and its first parent's does not,
exactly as committed, plus `run`; `runs`, whose ledgers the commit changed; `effects`, the effects
whose state the commit changed (run, key, kind, state); `skip`, the SHIFT_SKIP reason when there was
one. Notes written before the split carried the JSON as the last line of the human note: `parse_note`
reads both. Tools that merge notes (sync) merge the records (`merged`) and render the human note
again from the result. Everything passes the secret scanner first: a note never holds a secret.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from shiftgit import rawjson
from shiftgit.git.rawledger import checkpoint_of as checkpoint_of  # handoff.checkpoint_of, as before

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from typing import Any

    Doc = Mapping[str, Any]

NOTE_VERSION = 1
MAX_FILES = 4
MAX_FAILING = 3
MAX_LINES = 8
MAX_LINE = 150  # characters
MAX_BYTES = 1200


def note_document(changes: Mapping[str, tuple[Any, Any]], skip: str | None, *,
                  redact: bool = True) -> dict[str, Any] | None:
    """The record of a commit: `changes` maps run -> (first parent's ledger, the commit's), raw JSON.

    None when the commit changed no ledger and the gate was not skipped: such a commit gets no note.
    `redact=False`: the caller vouches that every string it takes is redacted already (each commit's ledger is
    bytes shiftgit wrote, and each run id redacts to itself): the note's strings are theirs.
    """
    if not changes and not skip:
        return None
    points, effects = [], []
    for run, (old, new) in sorted(changes.items()):
        point, before = checkpoint_of(new), checkpoint_of(old)
        if point is not None and (before is None or before.get("id") != point.get("id")):
            never = never_attempted(new, point)
            points.append({**point, "run": run, **({"never_attempted": never} if never else {})})
        effects += effects_changed(run, old, new)
    document: dict[str, Any] = {"shift_note": NOTE_VERSION, "checkpoints": points, "runs": sorted(changes)}
    if effects:
        document["effects"] = effects
    if skip:
        document["skip"] = skip
    return redacted(document) if redact else document


def never_attempted(ledger: Any, point: Mapping[str, Any]) -> list[str]:
    """The contract's acceptance checks that the checkpoint holds no result of (schema 2)."""
    contract = ledger.get("contract") if isinstance(ledger, Mapping) else None
    accept = contract.get("accept") if isinstance(contract, Mapping) else None
    ran = {c.get("name") for c in point.get("checks") or [] if isinstance(c, Mapping)}
    return [str(a["name"]) for a in accept or [] if isinstance(a, Mapping) and a.get("name") and a["name"] not in ran]


def effects_changed(run: str, old: Any, new: Any) -> list[dict[str, Any]]:
    """The effects (services are effects of kind `service`) whose state differs between two ledgers."""
    def states(ledger: Any) -> dict[str, tuple[str, str]]:
        items = ledger.get("effects") if isinstance(ledger, Mapping) else None
        return {str(e.get("key")): (str(e.get("kind") or ""), str(e.get("state") or ""))
                for e in items or [] if isinstance(e, Mapping) and e.get("key")}

    before, after = states(old), states(new)
    return [{"run": run, "key": key, "kind": kind, "state": state}
            for key, (kind, state) in sorted(after.items()) if before.get(key, ("", ""))[1] != state]


def redacted(document: Mapping[str, Any]) -> dict[str, Any]:
    from shiftgit.ledger.secrets import redact_obj

    clean = redact_obj(dict(document))
    assert isinstance(clean, dict)
    return clean


def pair(document: Doc) -> tuple[str, str]:
    """(human note, machine record) of a commit's record."""
    return note_text(document), data_text(document)


def data_text(document: Doc) -> str:
    return rawjson.compact_sorted(document) + "\n"


def note_text(document: Doc) -> str:
    """The human note: at most MAX_LINES lines and MAX_BYTES bytes, no JSON (see the module's doc)."""
    points = [p for p in document.get("checkpoints") or [] if isinstance(p, Mapping)]
    lines: list[str] = []
    for point in points:
        lines += checkpoint_lines(point, brief=len(points) > 1)
    lines += effect_lines(document.get("effects"))
    if document.get("skip"):
        lines.append(f"skip: commit gate skipped (SHIFT_SKIP): {_one_line(document['skip'])}")
    if not points and not document.get("skip") and not document.get("effects"):
        runs = ", ".join(str(r) for r in document.get("runs") or []) or "no run"
        lines.append(f"shiftgit: no handoff (the ledger of {_one_line(runs)} changed without a new checkpoint)")
    return fit(lines)


def fit(lines: list[str]) -> str:
    """Lines cut to MAX_LINE characters, at most MAX_LINES of them, within MAX_BYTES in all."""
    cut = [line if len(line) <= MAX_LINE else line[:MAX_LINE - 1] + "…" for line in lines]
    if len(cut) > MAX_LINES:
        cut = cut[:MAX_LINES - 1] + [f"(+{len(cut) - MAX_LINES + 1} more lines: `shiftgit log --json`)"]
    while cut and len(("\n".join(cut) + "\n").encode("utf-8")) > MAX_BYTES:
        cut = cut[:-1]
    return "\n".join(cut) + "\n"


def checkpoint_lines(point: Mapping[str, Any], brief: bool = False) -> list[str]:
    """The lines of one checkpoint; `brief` (several in one commit): headline, checks and next only."""
    step = _one_line(point.get("step") or point.get("note") or "(no step)")
    mark = " [milestone]" if point.get("milestone") else ""
    lines = [f"shiftgit: {_one_line(point.get('run'))} #{_one_line(point.get('seq'))} {_one_line(point.get('id'))} — "
             f"{step}{mark}"]
    action = _mapping(point.get("next"))
    if action.get("action"):
        done = f" — done when: {_one_line(action['done_when'])}" if action.get("done_when") else ""
        lines.append(f"next: {_one_line(action['action'])}{done}")
    checks = [c for c in point.get("checks") or [] if isinstance(c, Mapping)]
    never = len(point.get("never_attempted") or [])
    if checks or never:
        lines.append("checks: " + checks_line(checks, point.get("tree"), never))
    if brief:
        return lines
    files = [str(f.get("path")) for f in point.get("files") or [] if isinstance(f, Mapping)]
    if files:
        more = f", +{len(files) - MAX_FILES} more" if len(files) > MAX_FILES else ""
        lines.append(f"files: {len(files)} changed — " + ", ".join(_one_line(p) for p in files[:MAX_FILES]) + more)
    for label, key in (("blocked", "blocked"), ("questions", "questions")):
        items = [_one_line(i.get("text")) for i in point.get(key) or [] if isinstance(i, Mapping) and i.get("text")]
        if items:
            lines.append(f"{label}: " + "; ".join(items))
    if point.get("note") and point.get("step"):
        lines.append(f"note: {_one_line(point['note'])}")
    return lines


def check_state(check: Mapping[str, Any], tree: Any) -> str:
    """passed / failed / stale as ledger/checkstates.py judges them (stale: it ran on other content than the
    checkpoint's tree), over the raw JSON: the commit path does not build the model."""
    if (tree is not None and check.get("content") != tree) or check.get("fresh") is False:
        return "stale"
    ok = check.get("exit_code") == 0 and not check.get("timed_out") and not check.get("failing")
    return "passed" if ok else "failed"


def check_counts(checks: Iterable[Mapping[str, Any]], tree: Any = None) -> dict[str, int]:
    """passed / failed / stale (and never attempted, filled in by the caller), counted from a checkpoint's checks."""
    counts = {"passed": 0, "failed": 0, "stale": 0}
    for check in checks:
        counts[check_state(check, tree)] += 1
    return counts


def checks_line(checks: list[Mapping[str, Any]], tree: Any = None, never: int = 0) -> str:
    """`0 passed, 1 failed, 0 stale — failing: a, b, c (+28 more)` (`, 2 never attempted` when any)."""
    counts = check_counts(checks, tree)
    text = ", ".join(f"{n} {state}" for state, n in counts.items())
    text += f", {never} never attempted" if never else ""
    failed = [c for c in checks if check_state(c, tree) == "failed"]
    failing = [str(t) for c in failed for t in c.get("failing") or []]
    if not failing:
        failing = [str(c.get("name")) for c in failed]
    room = MAX_LINE - len("checks: ")
    for shown in range(min(MAX_FAILING, len(failing)), 0, -1):  # as many ids as fit on the line, up to 3
        more = f" (+{len(failing) - shown} more)" if len(failing) > shown else ""
        line = text + " — failing: " + ", ".join(_one_line(f) for f in failing[:shown]) + more
        if len(line) <= room or shown == 1:
            return line
    return text


def effect_lines(effects: Any) -> list[str]:
    items = [e for e in effects or [] if isinstance(e, Mapping)]
    lines = []
    for label, chosen in (("effects", [e for e in items if e.get("kind") != "service"]),
                          ("services", [e for e in items if e.get("kind") == "service"])):
        if chosen:
            lines.append(f"{label}: " + ", ".join(f"{_one_line(e.get('key'))} {_one_line(e.get('state'))}"
                                                  for e in chosen))
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
        text += ": " + ", ".join(_one_line(f) for f in failing[:MAX_FAILING]) + more
    return text + (" (stale)" if check.get("fresh") is False else "")


def parse_note(text: str | None) -> dict[str, Any] | None:
    """The JSON of a shiftgit note (its last line), or None for anything else.

    A note that `sync` could only merge by keeping both texts (`--- merged note ---`) holds one JSON
    line per part: they are read as one, checkpoints united by id.
    """
    if text and text[0] == "{":  # a record as git prints it: one JSON line, then line breaks
        line = text.rstrip("\n")
        if "\n" not in line and "\r" not in line:
            document = _json_line(line)  # JSON: then no \v, \f, \x1c-\x1e (neither space nor raw in a string)
            if document is not None and (line.isascii() or not _wide_break(line)):
                return document if isinstance(document, dict) and "shift_note" in document else None
    documents = []
    for line in (text or "").splitlines():
        if line.startswith("{"):
            document = _json_line(line)
            if isinstance(document, dict) and "shift_note" in document:
                documents.append(document)
    if len(documents) <= 1:
        return documents[0] if documents else None
    return merged(documents)


def _wide_break(line: str) -> bool:
    """Whether str.splitlines breaks `line` at a character beyond ASCII."""
    return "\x85" in line or "\u2028" in line or "\u2029" in line


# What json.loads runs, without the three calls around it (`log` reads 10,000s of notes): (value, end).
_scan = rawjson.scan_once


def _json_line(line: str) -> Any:
    """json.loads(line) for a line starting with "{"; None when that is not JSON, or nests deeper than Python
    can read (a note is anyone's text: it must not stop `log`)."""
    try:
        value, end = _scan(line, 0)
    except (ValueError, StopIteration, RecursionError):
        return None
    except SystemError:  # not JSON, before json was imported (rawjson.loads says why)
        return None
    return value if end == len(line) or not line[end:].strip(" \t\n\r") else None


def _effect_key(effect: Mapping[str, Any]) -> str:
    import json  # a merged note only (sync): not on the commit path

    return json.dumps(effect, sort_keys=True)


def merged(documents: Iterable[Doc]) -> dict[str, Any]:
    """Several notes of one commit (e.g. from two clones) as one: checkpoints united by id."""
    points: dict[str, dict[str, Any]] = {}
    runs: set[str] = set()
    skips: list[str] = []
    effects: dict[str, dict[str, Any]] = {}
    for document in documents:
        for effect in document.get("effects") or []:
            if isinstance(effect, Mapping):
                effects.setdefault(_effect_key(effect), dict(effect))
        for point in document.get("checkpoints") or []:
            if isinstance(point, Mapping):
                points.setdefault(str(point.get("id")), dict(point))
        runs.update(str(r) for r in document.get("runs") or [])
        for reason in str(document.get("skip") or "").split("; "):  # a merged note's reasons count one by one
            if reason and reason not in skips:
                skips.append(reason)
    out: dict[str, Any] = {"shift_note": NOTE_VERSION, "runs": sorted(runs),
                           "checkpoints": sorted(points.values(), key=_order)}
    if effects:
        out["effects"] = [effects[k] for k in sorted(effects)]
    if skips:
        out["skip"] = "; ".join(sorted(skips))
    return out


def _order(point: Mapping[str, Any]) -> tuple[str, int, str]:
    seq = point.get("seq")
    return str(point.get("run")), seq if isinstance(seq, int) else 0, str(point.get("id"))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _one_line(value: Any) -> str:
    """One line, no control character obeyed (`git log` prints notes to a terminal as they are)."""
    from shiftgit.textsafe import visible

    return visible(" ".join(str(value).split()))


def skip_reason(document: Doc | None) -> str | None:
    reason = document.get("skip") if document else None
    return reason if isinstance(reason, str) and reason else None


def carries_checkpoint(document: Doc | None) -> bool:
    return bool(document and document.get("checkpoints"))

