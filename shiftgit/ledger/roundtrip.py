"""Whether a record's JSON comes back whole from the model, known without building it (ledger/incremental.py)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


# Per flat record class (no field holds records): each field and the JSON type its converter takes whole.
_SHAPES: dict[type, tuple[frozenset[str], tuple[tuple[str, Any], ...]] | None] = {}


def round_trips(cls: type, data: Mapping[str, Any]) -> bool:
    """`cls.from_dict(data).to_dict() == data`, known without building either: a flat record class, every field
    present in DATA, each list or object where the field's converter makes a tuple or a mapping of it. False
    when unsure (a record inside, a missing field): the caller then builds and compares."""
    if cls not in _SHAPES:
        from shiftgit.ledger.record import Record, fields_of, kind_of

        shape = [(f.name, _json_type(kind_of(f))) for f in fields_of(cls) if f.name != "extra"]
        _SHAPES[cls] = None if any(need is Record for _, need in shape) else (
            frozenset(name for name, _ in shape), tuple((name, need) for name, need in shape if need is not None))
    known = _SHAPES[cls]
    if known is None or not known[0].issubset(data):  # every field present: then only the typed ones to look at
        return False
    for name, need in known[1]:
        value = data[name]
        if value is None:
            continue
        if need is dict or need is list:
            if type(value) is not need:
                return False
        elif type(value) is not list or not _OBJECT_OR_NULL.issuperset(map(type, value)):
            return False  # need: a tuple of mappings, each made with dict()
    return True


_OBJECT_OR_NULL = frozenset({dict, type(None)})


def _json_type(kind: Any) -> Any:
    """What `_converter(kind)` needs its JSON value to be for `_dump` to give it back: None (anything), list, dict,
    "mappings" (a list of objects), or Record (a record inside: not flat)."""
    from shiftgit.ledger.record import Record

    if isinstance(kind, tuple):
        if kind[0] == "|":
            inner = [k for k in kind[1] if k is not None]
            return _json_type(inner[0]) if len(inner) == 1 else None
        if kind[0] == "tuple":
            item = _json_type(kind[1])
            return list if item is None else Record if item is Record else "mappings" if item is dict else Record
        return dict if kind[0] == "mapping" else None
    if isinstance(kind, type) and issubclass(kind, Record):
        return Record
    return None
