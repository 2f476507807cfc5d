"""The record machinery under the data model: generic from_dict/to_dict, unknown keys kept in `extra`. No I/O."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

R = TypeVar("R", bound="Record")
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _build(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _build(inner[0], value) if len(inner) == 1 else value
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp.from_dict(value)
    if origin is tuple:
        return tuple(_build(args[0], v) for v in value)
    if origin is Mapping or origin is dict:
        return dict(value)
    return value


def _dump(value: Any) -> Any:
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
        hints = _hints(cls)
        names = {f.name for f in dataclasses.fields(cls) if f.name != "extra"}
        kwargs = {name: _build(hints[name], data[name]) for name in names if name in data}
        extra = {k: v for k, v in data.items() if k not in names}
        return cls(**kwargs, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        for f in dataclasses.fields(self):
            if f.name != "extra":
                out[f.name] = _dump(getattr(self, f.name))
        return out
