"""ledger/record.dataclass builds every model class as `dataclasses.dataclass(frozen=True, kw_only=True)` would.

Each model class is built a second time by dataclasses itself, from the same annotations and fields; both
must take the same arguments (names, defaults, refusals), hold the same fields, and compare, hash, print
and refuse assignment alike.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any

import pytest

from shiftgit.ledger import model
from shiftgit.ledger.record import Record

CLASSES = [c for c in vars(model).values() if isinstance(c, type) and issubclass(c, Record) and c is not Record]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TwinRecord:
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=True)


def twin(cls: type[Record]) -> type:
    """CLS as dataclasses builds it from the same class body."""
    own = cls.__dict__["__annotations__"]
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    body: dict[str, Any] = {"__annotations__": dict(own), "__module__": model.__name__,
                            "__qualname__": cls.__qualname__}
    for f in fields:
        if f.name in own:
            body[f.name] = dataclasses.field(default=f.default, default_factory=f.default_factory, repr=f.repr,
                                             hash=f.hash, compare=f.compare, kw_only=True)
    return dataclasses.dataclass(frozen=True, kw_only=True)(type(cls.__name__, (TwinRecord,), body))


def required(cls: type) -> dict[str, Any]:
    return {f.name: f"v-{f.name}" for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}


def test_every_model_class_is_built_here_not_by_dataclasses() -> None:
    assert len(CLASSES) > 20
    assert all("__eq__" not in c.__dict__ and "__repr__" not in c.__dict__ for c in CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_record_class_is_what_dataclasses_builds(cls: type[Record]) -> None:
    made = twin(cls)
    ours = [(f.name, f.type, f.default, f.default_factory, f.kw_only, f.compare, f.repr)  # type: ignore[attr-defined]
            for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    theirs = [(f.name, f.type, f.default, f.default_factory, f.kw_only, f.compare, f.repr)  # type: ignore[attr-defined]
              for f in dataclasses.fields(made)]
    assert ours == theirs
    assert dataclasses.is_dataclass(cls) and cls.__match_args__ == made.__match_args__ == ()  # type: ignore[attr-defined]
    for name in [f.name for f in dataclasses.fields(made)]:  # what stays on the class: plain defaults only
        assert (name in cls.__dict__) == (name in made.__dict__)
        assert cls.__dict__.get(name) == made.__dict__.get(name)
    values = required(made)
    a, b = cls(**values), made(**values)
    assert str(inspect.signature(cls)) == str(inspect.signature(made))
    assert repr(a) == repr(b) and values.items() <= a.to_dict().items()
    assert a == cls(**values) and a != object() and (a == b) is False
    assert a != dataclasses.replace(a, extra={"x": 1})
    assert dataclasses.replace(a, extra={"x": 1}) == cls(**values, extra={"x": 1})
    with pytest.raises(TypeError) as ours_error:
        hash(a)  # `extra` is a dict: neither hashes
    with pytest.raises(TypeError) as their_error:
        hash(b)
    assert str(ours_error.value) == str(their_error.value)
    for action in (lambda r: setattr(r, "extra", {}), lambda r: delattr(r, "extra"), lambda r: setattr(r, "new", 1)):
        with pytest.raises(dataclasses.FrozenInstanceError) as ours_refusal:
            action(a)
        with pytest.raises(dataclasses.FrozenInstanceError) as their_refusal:
            action(b)
        assert str(ours_refusal.value) == str(their_refusal.value)
    for bad in ({**values, "bogus": 1}, {k: v for k, v in list(values.items())[1:]}):
        if bad == values:
            continue
        with pytest.raises(TypeError) as ours_error:
            cls(**bad)
        with pytest.raises(TypeError) as their_error:
            made(**bad)
        assert str(ours_error.value) == str(their_error.value).replace(made.__qualname__, cls.__qualname__)


def test_records_with_hashable_values_hash_alike() -> None:
    item = model.Item(text="a", seq=1, extra=frozenset())  # type: ignore[arg-type]
    assert hash(item) == hash(model.Item(text="a", seq=1, extra=frozenset()))  # type: ignore[arg-type]
    assert hash(item) == hash((frozenset(), "a", 1))  # what dataclasses' __hash__ hashes: the fields in order
    assert item != model.Item(text="a", seq=2, extra=frozenset())  # type: ignore[arg-type]


def test_a_class_the_builder_cannot_read_is_refused() -> None:
    from shiftgit.ledger.record import dataclass

    with pytest.raises(TypeError):
        dataclass(frozen=False, kw_only=True)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="mutable default"):
        @dataclass(frozen=True, kw_only=True)
        class Bad(Record):
            items: list[str] = []  # noqa: RUF012


def typing_kind(tp: Any) -> Any:
    """What record.kind_of must read from an annotation's text, worked out from typing's evaluation of it."""
    import types
    import typing

    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return ("|", tuple(typing_kind(a) for a in args))
    if tp is type(None):
        return None
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return ("tuple", typing_kind(args[0]))
    if origin is not None:
        return ("mapping",) if origin in (Mapping, dict) else ("generic", origin)
    return tp


@pytest.mark.parametrize("cls", [Record, *CLASSES], ids=lambda c: c.__name__)
def test_each_field_type_is_read_from_its_annotation_as_typing_evaluates_it(cls: type[Record]) -> None:
    import typing

    from shiftgit.ledger.record import fields_of, kind_of

    hints = typing.get_type_hints(cls)
    assert {f.name: kind_of(f) for f in fields_of(cls)} == {name: typing_kind(tp) for name, tp in hints.items()}


def test_an_annotation_naming_nothing_is_refused_as_evaluating_it_would_be() -> None:
    from shiftgit.ledger.record import Spec, kind_of

    spec = Spec()
    spec.type, spec.scope = "tuple[Nowhere, ...]", model.__name__
    with pytest.raises(NameError):
        kind_of(spec)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_from_dict_builds_what_init_builds(cls: type[Record]) -> None:
    """Given every field, from_dict sets them without calling __init__: the record __init__ makes of the converted
    values, its attributes in the same order; a field left out still takes its default through __init__."""
    from shiftgit.ledger.record import _plan

    fields, _ = _plan(cls)
    if any(c is not None for n, c in fields if n in required(twin(cls))):
        pytest.skip("a required field holds a record or a list: no made-up value converts")
    whole = {**cls(**required(twin(cls))).to_dict(), "unknown": 1}
    optional = [n for n, _ in fields if n not in required(twin(cls))]
    for data in (whole, *({k: v for k, v in whole.items() if k != n} for n in optional[-1:])):
        values = {n: v if v is None or c is None else c(v) for n, c in fields if n in data for v in [data[n]]}
        made = cls(**values, extra={"unknown": 1})
        again = cls.from_dict(data)
        assert again == made and repr(again) == repr(made) and list(vars(again)) == list(vars(made))
        assert again.to_dict() == made.to_dict()
