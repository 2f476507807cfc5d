"""The base of every ledger record: frozen, from_dict/to_dict with converters worked out once per class.

Every record keeps the keys it does not know in `extra`, so a document written by a newer
shiftgit (same schema version) round-trips without losing data.

The model's classes are declared `@dataclass(frozen=True, kw_only=True)`; mypy sees dataclasses' own (and
its `field` and `replace`), while at run time `dataclass` below builds the same class for a fraction of the
cost and without importing dataclasses (dataclasses compiles five methods per class and asks inspect for a
signature: two Python start-ups for the model; importing it, with inspect, ast and tokenize, two thirds of
one). dataclasses' own functions still work on a record: its `__dataclass_fields__` are made on first use.
`__eq__`, `__hash__`, `__repr__` and the frozen `__setattr__`/`__delattr__` are written once, on `Record`;
each class's `__init__` (dataclasses' signature and checks) is compiled on its first call, so a command
compiles only the records it builds. tests/test_records.py compares both builders.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from operator import itemgetter
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    R = TypeVar("R", bound="Record")
    Converter = Callable[[Any], Any] | None  # JSON value (never None) -> field value; None: the value as it is

# Per record class, worked out once (typing's introspection per value was most of a large ledger's read):
# its fields with their converters, and the field names.
_PLANS: dict[type, tuple[tuple[tuple[str, Converter], ...], frozenset[str]]] = {}
_CONVERTED: dict[type, tuple[tuple[str, Callable[[Any], Any]], ...]] = {}  # per class: the fields converted


def _plan(cls: type) -> tuple[tuple[tuple[str, Converter], ...], frozenset[str]]:
    if cls not in _PLANS:
        fields = tuple((f.name, _converter(kind_of(f))) for f in fields_of(cls) if f.name != "extra")
        _PLANS[cls] = (fields, frozenset(name for name, _ in fields))
        _CONVERTED[cls] = tuple((name, convert) for name, convert in fields if convert is not None)
    return _PLANS[cls]


# A field's type, read from its annotation's text (what `typing.get_type_hints` would evaluate, without
# typing's objects: evaluating the model's annotations cost ~10 ms, half a Python start-up, per process):
# None (`None`), ("|", (kind, ...)), ("tuple", item kind) for `tuple[X, ...]`, ("mapping",) for `Mapping[...]`
# or `dict[...]`, ("generic", origin) for another `X[...]`, else what the name is in the field's module.
def kind_of(spec: Spec) -> Any:
    return _read(spec.type.strip(), spec.scope)


def _read(text: str, scope: str) -> Any:
    parts = _split(text, "|")
    if len(parts) > 1:
        return ("|", tuple(_read(part, scope) for part in parts))
    if text.endswith("]") and "[" in text:
        name, _, inner = text[:-1].partition("[")
        origin, args = _resolve(name.strip(), scope), _split(inner, ",")
        if origin is tuple and len(args) == 2 and args[1] == "...":
            return ("tuple", _read(args[0], scope))
        return ("mapping",) if origin is Mapping or origin is dict else ("generic", origin)
    return None if text == "None" else _resolve(text, scope)


def _split(text: str, sep: str) -> list[str]:
    """TEXT cut at each SEP outside brackets, each piece stripped."""
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if ch == sep and depth == 0:
            pieces.append(text[start:i].strip())
            start = i + 1
    return [*pieces, text[start:].strip()]


def _resolve(name: str, scope: str) -> Any:
    """NAME as the module SCOPE (then builtins) knows it; NameError as evaluating the annotation would raise."""
    head, *rest = name.split(".")
    where = vars(sys.modules[scope])
    found = where[head] if head in where else getattr(builtins, head, MISSING)
    if found is MISSING:
        raise NameError(f"name {head!r} is not defined")
    for attr in rest:
        found = getattr(found, attr)
    return found


def _converter(kind: Any) -> Converter:
    """How a JSON value becomes a field of this kind (a None anywhere stays None)."""
    if isinstance(kind, tuple):
        if kind[0] == "|":
            inner = [k for k in kind[1] if k is not None]
            return _converter(inner[0]) if len(inner) == 1 else None
        if kind[0] == "tuple":
            item = _converter(kind[1])
            if item is None:
                return tuple
            return lambda value: tuple(None if v is None else item(v) for v in value)
        return dict if kind[0] == "mapping" else None
    if isinstance(kind, type) and issubclass(kind, Record):
        return kind.from_dict
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


def _dataclass(*, frozen: bool, kw_only: bool) -> Callable[[type[R]], type[R]]:
    """`dataclasses.dataclass(frozen=True, kw_only=True)` for a `Record` class, built as the module says."""
    if frozen and kw_only:
        return _build
    raise TypeError("ledger records are frozen and keyword-only")


MISSING: Any = type("MISSING", (), {"__repr__": lambda _: "<MISSING>"})()  # no default (dataclasses.MISSING)


class Spec:
    """A record field as `_build` and `replace` read it: what dataclasses' `Field` says of it, and no more."""

    __slots__ = ("name", "type", "scope", "default", "default_factory", "compare", "repr")

    def __init__(self, *, default: Any = MISSING, default_factory: Any = MISSING, compare: bool = True,
                 repr: bool = True) -> None:  # what `field` takes of dataclasses' (Spec is `field` at run time)
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name, self.type, self.scope = "", "", __name__  # scope: the module the annotation is read in
        self.default, self.default_factory, self.compare, self.repr = default, default_factory, compare, repr

    def dataclass_field(self) -> Any:
        """dataclasses' own Field for this field, as dataclasses would have made it."""
        import dataclasses

        default, factory = (dataclasses.MISSING if v is MISSING else v for v in (self.default, self.default_factory))
        made: Any = dataclasses.field(default=default, default_factory=factory,  # type: ignore[arg-type]
                                      compare=self.compare, repr=self.repr, kw_only=True)
        made.name, made.type, made._field_type = self.name, self.type, dataclasses._FIELD  # type: ignore[attr-defined]
        return made


class _DataclassFields:
    """A record class's `__dataclass_fields__`, made when something asks (dataclasses.fields, replace, ...)."""

    def __get__(self, instance: object, owner: type) -> dict[str, Any]:
        made = {name: spec.dataclass_field() for name, spec in owner.__dict__["__record_fields__"].items()}
        type.__setattr__(owner, "__dataclass_fields__", made)
        return made


def fields_of(record: Any) -> Iterable[Spec]:
    """The fields of a record or record class, in order (what `dataclasses.fields` lists)."""
    return (record if isinstance(record, type) else type(record)).__record_fields__.values()  # type: ignore


def _replace(obj: Any, /, **changes: Any) -> Any:
    """`dataclasses.replace` for a record; any other dataclass goes to dataclasses' own."""
    specs = getattr(type(obj), "__record_fields__", None)
    if specs is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)
    for name in specs:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return _made(obj.__class__, changes) if len(changes) == len(specs) else obj.__class__(**changes)


def _made(cls: type[R], values: dict[str, Any]) -> R:
    """A record of CLS from a value for each of its fields: what its `__init__` sets, in order, without calling it."""
    made = object.__new__(cls)
    names, get = _ORDER.get(cls) or _order(cls)
    made.__dict__.update(zip(names, get(values), strict=False))  # C's loops: 1,000 effects read per write
    return made


_ORDER: dict[type, tuple[tuple[str, ...], Callable[[dict[str, Any]], tuple[Any, ...]]]] = {}


def _order(cls: Any) -> tuple[tuple[str, ...], Callable[[dict[str, Any]], tuple[Any, ...]]]:
    """A record class's field names in order, and a getter of their values (one name more: always a tuple)."""
    names = tuple(cls.__record_fields__)
    _ORDER[cls] = (names, itemgetter(*names, names[0]))
    return _ORDER[cls]


def _build(cls: type[R]) -> type[R]:
    fields: dict[str, Spec] = {}
    for base in cls.__mro__[-1:0:-1]:
        fields.update(base.__dict__.get("__record_fields__", {}))
    for name, kind in cls.__dict__.get("__annotations__", {}).items():
        if not isinstance(kind, str) or "ClassVar" in kind or "InitVar" in kind:  # what dataclasses reads otherwise
            raise TypeError(f"{cls.__name__}.{name}: a record's annotations are its fields' types, as text")
        default = cls.__dict__.get(name, MISSING)
        made = default if isinstance(default, Spec) else Spec(default=default)
        made.name, made.type, made.scope = name, kind, cls.__module__
        if made.default.__class__.__hash__ is None:
            raise ValueError(f"mutable default {type(made.default)} for field {name} is not allowed: use "
                             "default_factory")
        if isinstance(default, Spec):  # what dataclasses leaves on the class: the default, or nothing
            if made.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, made.default)
        fields[name] = made
    type.__setattr__(cls, "__record_fields__", fields)
    type.__setattr__(cls, "__dataclass_fields__", _DataclassFields())
    type.__setattr__(cls, "__match_args__", ())
    type.__setattr__(cls, "__init__", _first_init)
    return cls


def _first_init(self: Record, **values: Any) -> None:
    """Compile this class's `__init__` (as dataclasses writes it), put it on the class, and run it."""
    cls = type(self)
    names: dict[str, Any] = {"_set": object.__setattr__, "_HAS_DEFAULT_FACTORY": _FACTORY}
    params, body = [], []
    for f in fields_of(cls):
        if f.default_factory is not MISSING:
            names[f"_dflt_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_HAS_DEFAULT_FACTORY")
            value = f"_dflt_{f.name}() if {f.name} is _HAS_DEFAULT_FACTORY else {f.name}"
        else:
            if f.default is not MISSING:
                names[f"_dflt_{f.name}"] = f.default
            params.append(f.name + ("" if f.default is MISSING else f"=_dflt_{f.name}"))
            value = f.name
        body.append(f"  _set(self, {f.name!r}, {value})")
    made: dict[str, Any] = {}
    exec(f"def __init__(self, *, {', '.join(params)}):\n" + "\n".join(body or ["  pass"]), names, made)
    init = made["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {**{f.name: f.type for f in fields_of(cls)}, "return": None}
    type.__setattr__(cls, "__init__", init)
    init(self, **values)


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()
if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
    from dataclasses import field as field
    from dataclasses import replace as replace
else:
    dataclass, field, replace = _dataclass, Spec, _replace


@dataclass(frozen=True, kw_only=True)
class Record:
    """Base of every ledger record: generic conversion, unknown keys kept in `extra`."""

    extra: Mapping[str, Any] = field(default_factory=dict, compare=True)

    if not TYPE_CHECKING:  # mypy reads dataclasses' own
        def __eq__(self, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            names = _compared(self.__class__)
            return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

        def __hash__(self) -> int:
            return hash(tuple(getattr(self, n) for n in _compared(self.__class__)))

        def __repr__(self) -> str:
            shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields_of(self) if f.repr)
            return f"{self.__class__.__qualname__}({shown})"

        def __setattr__(self, name: str, value: Any) -> None:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self, name: str) -> None:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot delete field {name!r}")

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        fields, names = _plan(cls)
        if len(data) == len(fields) and names.issuperset(data):  # every field, nothing else: what shiftgit writes
            kwargs: dict[str, Any] = dict(data)
            extra: dict[str, Any] = {}
        else:
            kwargs = {k: v for k, v in data.items() if k in names}
            extra = {k: v for k, v in data.items() if k not in names} if len(kwargs) != len(data) else {}
        for name, convert in _CONVERTED[cls]:
            value = kwargs.get(name)
            if value is not None:
                kwargs[name] = convert(value)
        if len(kwargs) != len(fields):  # a field left to its default (or missing): as __init__ does it
            return cls(**kwargs, extra=extra)
        kwargs["extra"] = extra
        return _made(cls, kwargs)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        for name, _ in _plan(type(self))[0]:
            out[name] = _dump(getattr(self, name))
        return out


@cache
def _compared(cls: type) -> tuple[str, ...]:
    """The fields `__eq__` and `__hash__` compare (dataclasses: compare=True; hash None follows compare)."""
    return tuple(f.name for f in fields_of(cls) if f.compare)
