"""The base of every ledger record: frozen, from_dict/to_dict with converters worked out once per class.

Every record keeps the keys it does not know in `extra`, so a document written by a newer
shiftgit (same schema version) round-trips without losing data.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

R = TypeVar("R", bound="Record")
Converter = Callable[[Any], Any] | None  # JSON value (never None) -> field value; None: the value as it is
# Per record class, worked out once (typing's introspection per value was most of a large ledger's read):
# its fields with their converters, and the field names.
_PLANS: dict[type, tuple[tuple[tuple[str, Converter], ...], frozenset[str]]] = {}


def _plan(cls: type) -> tuple[tuple[tuple[str, Converter], ...], frozenset[str]]:
    if cls not in _PLANS:
        hints = typing.get_type_hints(cls)
        fields = tuple((f.name, _converter(hints[f.name])) for f in dataclasses.fields(cls) if f.name != "extra")
        _PLANS[cls] = (fields, frozenset(name for name, _ in fields))
    return _PLANS[cls]


def _converter(tp: Any) -> Converter:
    """How a JSON value becomes a field of type `tp` (a None anywhere stays None)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _converter(inner[0]) if len(inner) == 1 else None
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp.from_dict
    if origin is tuple:
        item = _converter(args[0])
        if item is None:
            return tuple
        return lambda value: tuple(None if v is None else item(v) for v in value)
    if origin is Mapping or origin is dict:
        return dict
    return None


# Per flat record class (no field holds records): each field and the JSON type its converter takes whole.
_SHAPES: dict[type, tuple[tuple[str, Any], ...] | None] = {}


def round_trips(cls: type, data: Mapping[str, Any]) -> bool:
    """`cls.from_dict(data).to_dict() == data`, known without building either: a flat record class, every field
    present in DATA, each list or object where the field's converter makes a tuple or a mapping of it. False
    when unsure (a record inside, a missing field): the caller then builds and compares."""
    if cls not in _SHAPES:
        hints = typing.get_type_hints(cls)
        shape = [(f.name, _json_type(hints[f.name])) for f in dataclasses.fields(cls) if f.name != "extra"]
        _SHAPES[cls] = None if any(need is Record for _, need in shape) else tuple(shape)
    known = _SHAPES[cls]
    if known is None:
        return False
    for name, need in known:
        if name not in data:
            return False
        value = data[name]
        if value is None or need is None:
            continue
        if need is dict or need is list:
            if type(value) is not need:
                return False
        elif type(value) is not list or any(v is not None and type(v) is not dict for v in value):
            return False  # need: a tuple of mappings, each made with dict()
    return True


def _json_type(tp: Any) -> Any:
    """What `_converter(tp)` needs its JSON value to be for `_dump` to give it back: None (anything), list, dict,
    "mappings" (a list of objects), or Record (a record inside: not flat)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _json_type(inner[0]) if len(inner) == 1 else None
    if isinstance(tp, type) and issubclass(tp, Record):
        return Record
    if origin is tuple:
        item = _json_type(args[0])
        return list if item is None else Record if item is Record else "mappings" if item is dict else Record
    if origin is Mapping or origin is dict:
        return dict
    return None


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _dump(value: Any) -> Any:
    if type(value) in _SCALARS:  # most values: no isinstance against an ABC
        return value
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_dump(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _dump(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, kw_only=True)
class Record:
    """Base of every ledger record: generic conversion, unknown keys kept in `extra`."""

    extra: Mapping[str, Any] = field(default_factory=dict, compare=True)

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        fields, names = _plan(cls)
        kwargs = {}
        for name, convert in fields:
            if name in data:
                value = data[name]
                kwargs[name] = value if value is None or convert is None else convert(value)
        extra = {k: v for k, v in data.items() if k not in names}
        return cls(**kwargs, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        for name, _ in _plan(type(self))[0]:
            out[name] = _dump(getattr(self, name))
        return out
