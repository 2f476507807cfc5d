"""roundtrip.round_trips (incremental.py asks it): when it says a record's JSON comes back whole, it does."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from shiftgit.ledger import model
from shiftgit.ledger.record import Record
from shiftgit.ledger.roundtrip import round_trips

EFFECT = {"key": "k", "kind": "job", "reversibility": "repeatable", "state": "completed", "argv": ["true", "x"],
          "probe": None, "compensate": None, "created_at": "2026-01-01T00:00:00Z", "updated_at": None,
          "exit_code": 0, "result": "exit 0", "evidence": None, "name": None, "pid": None, "port": None,
          "attempts": 1, "history": [{"state": "planned", "at": "t"}, None], "runner": {"pid": 3, "x": [1]},
          "cwd": ".", "timeout": 2, "started_at": None, "finished_at": None, "duration_s": 0.5,
          "output_tail": "", "output_sha256": None, "process": None, "log": None, "unknown": {"kept": [1, 2]}}


def holds(cls: type[Record], data: dict[str, Any]) -> bool:
    """round_trips' answer, checked against the real round trip whenever it says yes."""
    said = round_trips(cls, data)
    if said:
        assert cls.from_dict(data).to_dict() == data
    return said


def test_a_complete_flat_record_round_trips() -> None:
    assert holds(model.Effect, EFFECT)
    assert holds(model.Effect, model.Effect.from_dict(EFFECT).to_dict())


@pytest.mark.parametrize("change", [
    {"argv": "true"},  # a string where the model makes a tuple of it
    {"runner": [["pid", 3]]},  # pairs where the model makes a mapping
    {"history": {"state": "x"}},  # an object where the model makes a tuple of mappings
    {"history": ["text"]},
])
def test_json_the_model_would_change_is_not_taken_whole(change: dict[str, Any]) -> None:
    data = {**EFFECT, **change}
    assert not holds(model.Effect, data)
    try:
        assert model.Effect.from_dict(data).to_dict() != data
    except (TypeError, ValueError):
        pass  # the model cannot even be built from it


def test_a_missing_field_or_a_record_inside_is_never_taken_whole() -> None:
    data = dict(EFFECT)
    del data["log"]
    assert not holds(model.Effect, data)
    assert model.Effect.from_dict(data).to_dict() != data
    point = model.Checkpoint(id="p1", seq=1, at="t").to_dict()
    assert model.Checkpoint.from_dict(point).to_dict() == point
    assert not round_trips(model.Checkpoint, point)  # records inside (next, spend): the caller compares


@pytest.mark.parametrize("cls", [c for c in vars(model).values() if isinstance(c, type) and issubclass(c, Record)
                                 and dataclasses.is_dataclass(c) and c is not Record])
def test_every_record_class_answers_truly_for_its_own_json(cls: type[Record]) -> None:
    needed = {f.name: "x" for f in dataclasses.fields(cls)
              if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and f.name != "extra"}
    try:
        data = cls.from_dict(needed).to_dict()
    except (TypeError, ValueError, AttributeError):
        pytest.skip("a required field that is not text")
    holds(cls, data)
    holds(cls, {k: v for k, v in data.items() if k != next(iter(needed), "")})
