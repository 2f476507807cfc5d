"""Merging two texts of one commit's note: lossless, never concatenated JSON, order-independent."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from shiftgit.git import handoff
from shiftgit.git.notemerge import MARKER, merge_note_texts, split_note

POINT = st.builds(lambda i, run, seq: {"id": f"p-{i:03d}", "run": run, "seq": seq, "step": f"step {i}"},
                  st.integers(0, 30), st.sampled_from(["a", "b"]), st.integers(1, 9))


def note(points: list[dict[str, object]], human: list[str], run: str = "demo") -> str:
    unique = list({p["id"]: p for p in points}.values())
    body = json.dumps({"run": run, "checkpoints": unique}, sort_keys=True)
    return "\n".join([*human, body]) + "\n"


def checkpoint_ids(text: str) -> set[str]:
    ids: set[str] = set()
    for part in text.split(f"\n{MARKER}\n"):
        parsed = split_note(part)
        assert parsed is not None
        ids |= {p["id"] for p in parsed[1]["checkpoints"]}
    return ids


# texts of one commit's note as two machines could hold them: same run, ids unique to a checkpoint
NOTES = st.builds(note, st.lists(POINT, max_size=4), st.lists(st.sampled_from(["shift: a", "shift: b", "x"]),
                                                              max_size=2, unique=True))
CONSISTENT = st.lists(NOTES, min_size=3, max_size=3).filter(
    lambda texts: all(p == q for a in texts for b in texts
                      for p in json.loads(a.splitlines()[-1])["checkpoints"]
                      for q in json.loads(b.splitlines()[-1])["checkpoints"] if p["id"] == q["id"]))


@settings(max_examples=200, deadline=None)
@given(CONSISTENT)
def test_note_merge_is_commutative_idempotent_absorbing_and_lossless(texts: list[str]) -> None:
    a, b, c = texts
    assert merge_note_texts(a, b) == merge_note_texts(b, a)
    assert merge_note_texts(a, a) == a
    left, right = merge_note_texts(merge_note_texts(a, b), c), merge_note_texts(a, merge_note_texts(b, c))
    assert set(left.splitlines()[:-1]) == set(right.splitlines()[:-1])
    assert checkpoint_ids(left) == checkpoint_ids(right)
    merged = merge_note_texts(a, b)
    assert checkpoint_ids(merged) == checkpoint_ids(a) | checkpoint_ids(b)
    assert MARKER not in merged  # these always merge as JSON
    assert merge_note_texts(merged, a) == merged


def test_checkpoints_are_unioned_into_one_json_object() -> None:
    one = note([{"id": "p-1", "seq": 1}], ["shift: demo #1"])
    two = note([{"id": "p-2", "seq": 2}], ["shift: demo #2"])
    merged = merge_note_texts(one, two)
    human, body = split_note(merged) or ([], {})
    assert human == ["shift: demo #1", "shift: demo #2"]
    assert [p["id"] for p in body["checkpoints"]] == ["p-1", "p-2"] and body["run"] == "demo"
    assert merged.count("{\"") == 1 or merged.count("\n{") == 1


def test_unparseable_or_disagreeing_notes_are_both_kept() -> None:
    plain = "no handoff: SHIFT_SKIP=hotfix\n"
    other = note([{"id": "p-1", "seq": 1}], ["shift: demo #1"])
    merged = merge_note_texts(plain, other)
    assert MARKER in merged and plain.strip() in merged and other.strip() in merged
    assert merge_note_texts(other, plain) == merged
    assert merge_note_texts(merged, plain) == merged and merge_note_texts(merged, other) == merged
    run_a, run_b = note([], ["x"], run="a"), note([], ["x"], run="b")
    assert MARKER in merge_note_texts(run_a, run_b)
    clash = note([{"id": "p-1", "seq": 1, "step": "other"}], ["shift: demo #1"])
    assert MARKER in merge_note_texts(other, clash)


HANDOFF_POINT = st.builds(lambda i, run: {"id": f"p-{run}{i}", "run": run, "seq": i, "step": f"step {i}",
                                          "next": {"action": f"next {i}"}},
                          st.integers(1, 6), st.sampled_from(["a", "b"]))
def _old_layout(document: dict[str, object]) -> str:
    """A note written before the split: human lines, then the JSON."""
    return handoff.note_text(document) + handoff.data_text(document)


HANDOFF = st.builds(lambda points, skip: _old_layout(
    {"shift_note": 1, "checkpoints": list({p["id"]: p for p in points}.values()),
     "runs": sorted({str(p["run"]) for p in points}), **({"skip": skip} if skip else {})}),
    st.lists(HANDOFF_POINT, max_size=3), st.sampled_from([None, "hotfix", "ci down"]))


@settings(max_examples=150, deadline=None)
@given(HANDOFF, HANDOFF, HANDOFF)
def test_handoff_notes_merge_through_the_handoff_format(a: str, b: str, c: str) -> None:
    merged = merge_note_texts(a, b)
    assert merged == merge_note_texts(b, a) and merge_note_texts(a, a) == a
    assert merge_note_texts(merged, a) == merged and merge_note_texts(merged, b) == merged
    assert merge_note_texts(merge_note_texts(a, b), c) == merge_note_texts(a, merge_note_texts(b, c))
    document = handoff.parse_note(merged)
    assert document is not None and MARKER not in merged
    ids = {p["id"] for text in (a, b) for p in (handoff.parse_note(text) or {})["checkpoints"]}
    assert {p["id"] for p in document["checkpoints"]} == ids
    human = merged.splitlines()[:-1]  # the human lines, rendered from the merged record: at most 8
    assert human == handoff.note_text(document).splitlines() and len(human) <= handoff.MAX_LINES
    first = document["checkpoints"][0] if document["checkpoints"] else None
    assert first is None or f"shiftgit: {first['run']} #{first['seq']} {first['id']} — {first['step']}" in merged
