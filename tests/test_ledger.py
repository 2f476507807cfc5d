"""The model: round trips through dict and canonical bytes, unknown keys kept, schema agreement."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from shiftgit.ledger.model import (
    Budgets,
    Check,
    Checkpoint,
    Constraint,
    Contract,
    Effect,
    FileChange,
    Item,
    Ledger,
    NextAction,
    Spend,
    canonical_bytes,
)
from shiftgit.ledger.schema import parse_ledger, schema_errors

text = st.text(min_size=1, max_size=30)
oid = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)
stamp = st.just("2026-11-29T08:00:00Z")
run_ids = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,20}", fullmatch=True)

checks = st.builds(Check, id=text, name=text, argv=st.lists(text, min_size=1, max_size=4).map(tuple),
                   started_at=stamp, exit_code=st.none() | st.integers(-9, 255),
                   failing=st.lists(text, max_size=3).map(tuple), output_tail=st.text(max_size=50),
                   fresh=st.none() | st.booleans())
checkpoints = st.builds(
    Checkpoint, id=text, seq=st.integers(1, 10_000), at=stamp, step=st.none() | text, base=st.none() | oid,
    files=st.lists(st.builds(FileChange, path=text, id=st.none() | oid, status=st.sampled_from("AMDT")),
                   max_size=3).map(tuple),
    checks=st.lists(checks, max_size=2).map(tuple),
    next=st.builds(NextAction, action=st.none() | text, done_when=st.none() | text),
    done=st.lists(st.builds(Item, text=text, seq=st.integers(0, 9)), max_size=2).map(tuple),
    spend=st.builds(Spend, tokens=st.integers(0, 10**9), cost=st.floats(0, 1e6), minutes=st.floats(0, 1e5)),
)
ledgers = st.builds(
    Ledger, run=run_ids, created_at=stamp, updated_at=stamp,
    contract=st.builds(Contract, goal=text, stop_when=text, owner=st.none() | text,
                       budgets=st.builds(Budgets, tokens=st.none() | st.integers(0, 10**9)),
                       scope=st.lists(text, max_size=2).map(tuple)),
    constraints=st.lists(st.builds(Constraint, id=text, text=text, added_at=stamp), max_size=3).map(tuple),
    checkpoint=st.none() | checkpoints,
    effects=st.lists(st.builds(Effect, key=text, kind=text, created_at=stamp,
                               reversibility=st.sampled_from(["repeatable", "reversible", "irreversible"])),
                     max_size=2).map(tuple),
)


@settings(max_examples=150, deadline=None)
@given(ledgers)
def test_round_trip_through_dict_and_bytes(ledger: Ledger) -> None:
    assert Ledger.from_dict(ledger.to_dict()) == ledger
    data = canonical_bytes(ledger.to_dict())
    assert schema_errors(json.loads(data)) == []
    assert parse_ledger(data, "x") == ledger
    assert canonical_bytes(parse_ledger(data, "x").to_dict()) == data


@settings(max_examples=50, deadline=None)
@given(ledgers, st.dictionaries(st.from_regex(r"x_[a-z]{1,8}", fullmatch=True), st.integers() | st.text(),
                                max_size=3))
def test_unknown_keys_are_kept_not_dropped(ledger: Ledger, unknown: dict[str, object]) -> None:
    document = {**ledger.to_dict(), **unknown}
    if document["checkpoint"] is not None:
        document["checkpoint"] = {**document["checkpoint"], **unknown}
    again = Ledger.from_dict(document).to_dict()
    assert again == document


def test_canonical_bytes_are_sorted_indented_and_end_with_a_newline() -> None:
    data = canonical_bytes({"b": 1, "a": "é"})
    assert data == '{\n  "a": "é",\n  "b": 1\n}\n'.encode()


def test_the_light_readers_mirror_of_the_model_constants_stays_equal() -> None:
    """ledger/canonical.py repeats two constants so the agent hooks never import the model."""
    from shiftgit.ledger import canonical, model

    assert canonical.SCHEMA_VERSION == model.SCHEMA_VERSION
    assert canonical.RUN_ID_PATTERN == model.RUN_ID_PATTERN
    assert model.canonical_bytes is canonical.canonical_bytes
