"""Ledger writes at the cost of what changed: byte for byte what a full write gives, exactly as strict."""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import Repo
from hypothesis import given, settings
from hypothesis import strategies as st

from shiftgit.effects import runner as effects
from shiftgit.errors import LedgerError
from shiftgit.ledger import incremental, validated
from shiftgit.ledger.canonical import canonical_bytes, canonical_text
from shiftgit.ledger.model import Effect, Ledger
from shiftgit.ledger.secrets import redact_obj
from shiftgit.ledger.store import Store

TOKEN = "ghp_" + "Q7fK2xLm9Pz4Rt8Wv1Ny6Bc3Hd5Js0Ga2Ek7"


def full_write(ledger: Ledger) -> bytes:
    """What `Store.write` wrote before it was incremental: redact everything, then the canonical bytes."""
    document = redact_obj(ledger.to_dict())
    assert isinstance(document, dict)
    return canonical_bytes(document)


def effect(key: str, **fields: object) -> Effect:
    return Effect(**{"key": key, "kind": "job", "reversibility": "repeatable", "created_at": "2026-01-01T00:00:00Z",
                     **fields})  # type: ignore[arg-type]


def put(ledger: Ledger, *items: Effect) -> Ledger:
    return dataclasses.replace(ledger, effects=items)


@pytest.fixture
def store(run_repo: Repo) -> Store:
    return Store.open(run_repo.path)


def test_every_write_gives_the_bytes_a_full_write_gives(store: Store) -> None:
    first = store.read("demo")
    kept = [effect(f"e{i}", argv=("true", str(i)), history=({"at": "t", "state": "planned"},)) for i in range(6)]
    steps = [
        put(first, *kept),                                                   # all new
        put(first, *kept, effect("e6")),                                     # appended
        put(first, kept[0], effect("e1", state="completed"), *kept[2:]),     # replaced in place
        put(first, *kept[2:]),                                               # front trimmed (a capped list)
        put(first, *kept[2:], effect("leak", result=f"token {TOKEN}")),      # redaction changes a new record
        dataclasses.replace(put(first, *kept[2:]), extra={"future_key": [1, True, 1.0, None], "api_key": "hunter2"}),
        dataclasses.replace(put(first, *kept[2:]), status="stopped"),
    ]
    for ledger in steps:
        store.write(ledger)
        data = store.ledger_path("demo").read_bytes()
        assert data == full_write(ledger)
        assert TOKEN not in data.decode() and "hunter2" not in data.decode()
        assert validated.is_written(store.repo.git_dir, data)
        again = store.read("demo")
        assert again.to_dict() == json.loads(data)  # what a read gives back is what is on disk


def test_a_record_equal_but_not_identical_in_type_is_checked_again(store: Store) -> None:
    ledger = put(store.read("demo"), effect("a", attempts=1))
    store.write(ledger)
    bent = put(ledger, effect("a", attempts=True))  # True == 1 in Python, not in the schema
    with pytest.raises(AssertionError, match="attempts"):
        store.write(bent)


@pytest.mark.parametrize("change", ["new record", "changed record", "top level"])
def test_what_a_change_touched_is_schema_checked_as_before(store: Store, change: str) -> None:
    ledger = put(store.read("demo"), *(effect(f"e{i}") for i in range(5)))
    store.write(ledger)
    if change == "new record":
        bad = put(ledger, *ledger.effects, effect("x", state="bogus"))
    elif change == "changed record":
        bad = put(ledger, *ledger.effects[:2], effect("e2", reversibility="bogus"), *ledger.effects[3:])
    else:
        bad = dataclasses.replace(ledger, status="bogus")
    with pytest.raises(AssertionError, match="refusing to write an invalid ledger"):
        store.write(bad)
    assert store.read("demo") == ledger  # nothing was written


def test_hand_edited_bytes_are_never_a_base_so_a_secret_in_them_is_redacted(run_repo: Repo) -> None:
    store = Store.open(run_repo.path)
    store.write(put(store.read("demo"), effect("a"), effect("b")))
    document = run_repo.ledger("demo")
    document["effects"][0]["result"] = f"deployed with {TOKEN}"
    run_repo.ledger_path("demo").write_text(json.dumps(document, indent=2))
    fresh = Store.open(run_repo.path)
    ledger = fresh.read("demo")  # valid, so read as it is; not written by shiftgit
    assert not validated.is_written(fresh.repo.git_dir, run_repo.ledger_path("demo").read_bytes())
    fresh.write(dataclasses.replace(ledger, status="stopped"))
    assert TOKEN not in run_repo.ledger_path("demo").read_text()
    assert run_repo.ledger_path("demo").read_bytes() == full_write(dataclasses.replace(ledger, status="stopped"))


def test_a_later_process_builds_on_what_an_earlier_one_wrote(run_repo: Repo) -> None:
    store = Store.open(run_repo.path)
    for i in range(3):
        effects.run_effect(store, "demo", effects.EffectInput(key=f"k{i}", kind="job", reversibility="repeatable",
                                                              argv=("true",)))
    later = Store.open(run_repo.path)  # a new process: its base is the written bytes it reads
    outcome = effects.run_effect(later, "demo", effects.EffectInput(key="k3", kind="job", reversibility="repeatable",
                                                                    argv=("true",)))
    assert outcome.effect.state == "completed"
    ledger = Store.open(run_repo.path).read("demo")
    assert [e.key for e in ledger.effects] == ["k0", "k1", "k2", "k3"]
    assert run_repo.ledger_path("demo").read_bytes() == full_write(ledger)


def test_only_arrays_of_independent_items_are_checked_by_item() -> None:
    arrays = incremental._item_arrays("ledger.schema.json")
    assert {"effects", "history", "approvals"} <= arrays
    assert "checkpoint" not in arrays and "contract" not in arrays


def test_a_file_id_is_checked_as_an_object_id_or_null() -> None:
    import jsonschema

    from shiftgit.ledger.schema import schema_text

    schema = json.loads(schema_text())
    assert schema["$defs"]["file_change"]["properties"]["id"]["pattern"] == schema["$defs"]["oid"]["pattern"]
    only = {k: v for k, v in schema.items() if k not in ("type", "required", "properties")}
    validator = jsonschema.Draft202012Validator({**only, "$ref": "#/$defs/file_change"})
    for good in ("a" * 40, "0" * 64, None):
        assert not list(validator.iter_errors({"path": "x", "id": good}))
    for bad in ("A" * 40, "a" * 39, "a" * 41, 5, True, ["a" * 40], ""):
        assert list(validator.iter_errors({"path": "x", "id": bad})), bad


def test_a_new_process_reuses_the_written_text_byte_for_byte(run_repo: Repo) -> None:
    store = Store.open(run_repo.path)
    odd = ["é ∑ 😀", 'quote " and \\ back', "line\nbreak,\n    {not an item}", "\t\x01", ""]
    items = tuple(effect(f"o{i}", result=text or None, argv=("echo", text)) for i, text in enumerate(odd))
    store.write(put(store.read("demo"), *items))
    later = Store.open(run_repo.path)
    ledger = later.read("demo")
    changed = put(ledger, *ledger.effects[1:], effect("new", result="{\n  ]"))
    later.write(changed)
    assert run_repo.ledger_path("demo").read_bytes() == full_write(changed)
    text = run_repo.ledger_path("demo").read_text()
    document = json.loads(text)
    pieces = incremental._slices(text, "effects", len(changed.effects), incremental._next(sorted(document), "effects"))
    assert [json.loads(piece) for piece in pieces] == document["effects"]


def test_an_array_is_sliced_wherever_it_stands_among_the_keys() -> None:
    items = [{"k": "a,\n    {b"}, {"k": "\n  ],\n  \"z\": "}, {"n": [1, {"m": "\n  ]\n}\n"}]}]
    for document in ({"a": 1, "z": items}, {"z": items, "zz": [{"k": 1}]}, {"y": [{"k": 1}], "z": items, "zz": 2}):
        text = canonical_bytes(document).decode()
        pieces = incremental._slices(text, "z", 3, incremental._next(sorted(document), "z"))
        assert [json.loads(piece) for piece in pieces] == items
        assert incremental._slices(text, "z", 2, incremental._next(sorted(document), "z")) == []


def test_after_a_patch_the_next_write_redacts_everything_again(store: Store) -> None:
    store.write(put(store.read("demo"), effect("a")))

    def change(document: dict) -> dict:  # what Store.patch callers add is not redacted by patch
        return {**document, "sessions": [{"id": f"s {TOKEN}", "agent": "claude"}]}

    store.patch("demo", change)
    assert not validated.is_written(store.repo.git_dir, store.ledger_path("demo").read_bytes())
    later = Store.open(store.repo.root)
    ledger = later.read("demo")
    later.write(dataclasses.replace(ledger, status="stopped"))
    assert TOKEN not in store.ledger_path("demo").read_text()


def test_a_schema_1_ledger_checked_once_is_not_checked_again(run_repo: Repo) -> None:
    store = Store.open(run_repo.path)
    document = run_repo.ledger("demo")
    old = {**document, "schema_version": 1, "contract": {**document["contract"], "accept": ["it works"]}}
    run_repo.ledger_path("demo").write_text(json.dumps(old, indent=2))
    first = store.read("demo")  # checked as schema 2 after the migration, and remembered
    assert validated.is_known(store.repo.git_dir, run_repo.ledger_path("demo").read_bytes())
    lines = validated.path(store.repo.git_dir).read_text().count("\n")
    again = Store.open(run_repo.path).read("demo")
    assert again == first and again.schema_version == 2
    assert validated.path(store.repo.git_dir).read_text().count("\n") == lines  # no second check, no new line
    run_repo.ledger_path("demo").write_text(json.dumps({**old, "status": "bogus"}, indent=2))
    with pytest.raises(LedgerError, match="invalid ledger"):
        Store.open(run_repo.path).read("demo")  # other bytes: checked, and refused


def test_what_on_write_adds_is_written_after_redaction_and_checked(store: Store) -> None:
    def lease(document: dict) -> dict:
        return {**document, "lease": {"epoch": 1, "holder": {"host": "h"}, "note": f"t {TOKEN}"}}

    store.on_write = lease
    for i in range(3):
        ledger = put(store.read("demo"), *(effect(f"e{k}") for k in range(i + 1)))
        store.write(ledger)
        expected = redact_obj(ledger.to_dict())
        assert isinstance(expected, dict)
        assert store.ledger_path("demo").read_bytes() == canonical_bytes(lease(expected))  # as main wrote it
        assert store.read("demo").lease == lease(expected)["lease"]  # what is read back is what is on disk
        assert store.read("demo") == Store.open(store.repo.root).read("demo")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    | st.tuples(inner, inner), max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES | st.dictionaries(st.integers(), st.none(), max_size=3), st.integers(0, 3))
def test_the_canonical_text_is_what_json_dumps_writes(value: object, depth: int) -> None:
    """`canonical_text` writes the indented form without json's pure-Python encoder: the same text, any value."""
    expected = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)
    assert canonical_text(value, depth) == expected
