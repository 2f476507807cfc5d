"""Merge two texts of one commit's handoff note (used by `shiftgit sync`). No I/O.

A note is human-readable lines followed by a JSON object (from the last line that starts with `{`
to the end). Two texts merge into one that loses neither and never concatenates JSON:
- identical texts stay identical (opaque);
- two shiftgit handoff records (JSON with `shift_note`): `handoff.merged` unions their checkpoints by
  id and their runs; two machine records (refs/notes/shift-data) give one record, two notes written
  before the split (human lines, then the JSON) one note of that layout;
- other notes whose JSON parts parse and agree on every key but `checkpoints`: the checkpoints are unioned by id
  (sorted by seq, at, id), the human lines are unioned, and one JSON object ends the note;
- otherwise both texts are kept, separated by a line `--- merged note ---`.
Merging is commutative and idempotent, absorbs what it already holds, and is associative up to the
order of lines: whatever the grouping, the result holds the same lines and checkpoints.
A text this module composes (one neither side held) shows each control character as an escape (`git log`
prints notes as they are); a side's text kept whole keeps its exact bytes: a note written elsewhere is
never rewritten here, only what shiftgit writes in its place is inert.
"""

from __future__ import annotations

import json
from typing import Any

from shiftgit import rawjson, textsafe
from shiftgit.git import handoff

MARKER = "--- merged note ---"
_SEPARATOR = f"\n{MARKER}\n"


def merge_note_texts(a: str, b: str) -> str:
    if a == b:
        return a
    documents = [d for d in (handoff.parse_note(text) for text in (a, b)) if d is not None]
    if MARKER not in a and MARKER not in b and len(documents) == 2:
        # shiftgit's own records: handoff unions them (checkpoints by id, runs); two machine records give
        # one record, notes written before the split (human lines, JSON last) one note of that layout
        document = handoff.merged(sorted(documents, key=_canon))
        if a.startswith("{") and b.startswith("{"):
            return handoff.data_text(document)
        return handoff.note_text(document) + textsafe.json_text(handoff.data_text(document))
    left, right = split_note(a), split_note(b)
    if left is None or right is None or MARKER in a or MARKER in b:
        return _keep_both(a, b)
    body = _merge_json(left[1], right[1])
    if body is None:
        return _keep_both(a, b)
    lines = _merge_lines(_shown(left[0]), _shown(right[0]))
    same = [text for text, (human, obj) in ((a, left), (b, right)) if obj == body and human == lines]
    if same:  # one side already says it all (and obeys no control character): keep its exact bytes
        return min(same)
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "\n".join([*lines, textsafe.json_text(text)]) + "\n"


def _shown(lines: list[str]) -> list[str]:
    """Lines of a note as a merged note holds them: `git log` prints notes to a terminal as they are, so text
    shiftgit writes shows every control character as an escape (idempotent: an escape holds none)."""
    return [textsafe.for_terminal(line) for line in lines]


def split_note(text: str) -> tuple[list[str], dict[str, Any]] | None:
    """(human lines, JSON object) of a note, or None when it has no parseable JSON object at the end."""
    lines = text.rstrip("\n").split("\n")
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].startswith("{"):
            try:
                body = rawjson.loads("\n".join(lines[index:]))
            except ValueError:
                return None
            return (lines[:index], body) if isinstance(body, dict) else None
    return None


def _merge_json(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for key in dict.fromkeys([*a, *b]):
        if key == "checkpoints" and key in a and key in b:
            merged = _union_checkpoints(a[key], b[key])
            if merged is None:
                return None
            out[key] = merged
        elif key in a and key in b and a[key] != b[key]:
            return None
        else:
            out[key] = a[key] if key in a else b[key]
    return out


def _union_checkpoints(a: Any, b: Any) -> list[Any] | None:
    if not (isinstance(a, list) and isinstance(b, list)):
        return None
    if not all(isinstance(p, dict) and isinstance(p.get("id"), str) for p in [*a, *b]):
        return None
    found: dict[str, Any] = {}
    for point in [*a, *b]:
        if point["id"] in found and found[point["id"]] != point:
            return None  # one id, two different records: not ours to choose
        found[point["id"]] = point
    complete = [side for side in (a, b) if len(side) == len(found)]
    if complete and all(side == complete[0] for side in complete):  # one side holds them all: keep its order
        return list(complete[0])
    return sorted(found.values(), key=lambda p: (_number(p.get("seq")), str(p.get("at", "")), p["id"]))


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _merge_lines(a: list[str], b: list[str]) -> list[str]:
    if set(a) == set(b):
        return min(a, b)
    if set(b) < set(a):
        return a
    if set(a) < set(b):
        return b
    first, second = sorted((a, b))
    return first + [line for line in second if line not in set(first)]


def _keep_both(a: str, b: str) -> str:
    """Both texts, each once, in sorted order; a text already merged contributes its parts."""
    parts = {textsafe.for_terminal(p.strip("\n")) for text in (a, b) for p in text.split(_SEPARATOR)}
    return _SEPARATOR.join(sorted(parts)) + "\n"
