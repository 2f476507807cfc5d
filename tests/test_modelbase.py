"""The model's records compare, hash and show themselves as dataclass generates it (ledger/modelbase.py writes
those methods once instead of dataclass compiling them class by class)."""

from __future__ import annotations

import dataclasses
from typing import Any

from conftest import Repo

from shiftgit.ledger.model import Record
from shiftgit.ledger.store import Store


def twin(cls: type) -> Any:
    """CLS's fields in a plain `@dataclass(frozen=True, kw_only=True)`: the methods dataclass generates."""
    fields = [(f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory))
              for f in dataclasses.fields(cls)]
    made = dataclasses.make_dataclass(cls.__name__, fields, frozen=True, kw_only=True)
    made.__qualname__ = cls.__qualname__
    return made


def records(value: Any) -> list[Record]:
    """Every record in VALUE, nested ones too."""
    if isinstance(value, Record):
        return [value] + [r for f in dataclasses.fields(value) for r in records(getattr(value, f.name))]
    if isinstance(value, tuple | list):
        return [r for v in value for r in records(v)]
    return []


def hashed(value: Any) -> Any:
    try:
        return hash(value)
    except TypeError as exc:  # a record holds a dict (`extra`): unhashable, as dataclass's hash says
        return f"TypeError: {exc}"


def test_equality_hash_and_repr_are_what_dataclass_generates(run_repo: Repo) -> None:
    run_repo.write("calc.py", run_repo.read("calc.py") + "# edit\n")
    run_repo.ok("check", "--name", "unit", "-q", "--", "true")
    run_repo.ok("checkpoint", "--step", "one", "--next", "two", "--done", "a thing", "--decision", "this")
    found = records(Store.open(run_repo.path).read("demo"))
    assert len({type(r) for r in found}) >= 8
    for record in found:
        values = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
        plain = twin(type(record))
        same, other = plain(**values), dataclasses.replace(record, extra={"x": 1})
        assert repr(record) == repr(same)
        assert record == dataclasses.replace(record) and not record != dataclasses.replace(record)
        assert record != other and same != plain(**{**values, "extra": {"x": 1}})
        assert record.__eq__(same) is NotImplemented and same.__eq__(record) is NotImplemented
        assert hashed(record) == hashed(same)
