"""`typing.NamedTuple` classes without importing typing (~4 ms) or collections (~2-5 ms, with operator and reprlib).

The modules a git hook loads declare their records so:

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from shiftgit.tuples import NamedTuple

mypy sees typing's class; at run time this one builds what typing would, as `collections.namedtuple` does it: a
tuple subclass with the annotated fields in order, read through C accessors, the defaults the class body gives the
last of them, `_make`, `_replace`, `_asdict`, `_fields`, `_field_defaults`, and the body's docstring, methods and
properties. Stdlib built-ins only: the commit gate's process never loads the collections package (the modules on
its path take `Mapping` for isinstance from `_collections_abc`, which `os` loads anyway: the same classes).
"""

from __future__ import annotations

from _collections import _tuplegetter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

_CLASS_KEYS = frozenset(("__module__", "__qualname__", "__annotations__", "__doc__", "__dict__", "__weakref__"))
_tuple_new = tuple.__new__
# `__new__` of a record of N fields (N < 13), compiled with this module: a class takes a copy with its field names
# (`code.replace`) instead of compiling its own with eval (~40 us each; an agent hook builds 15 records)
_NEWS = (
    lambda _cls: _tuple_new(_cls, ()),
    lambda _cls, a: _tuple_new(_cls, (a,)),
    lambda _cls, a, b: _tuple_new(_cls, (a, b)),
    lambda _cls, a, b, c: _tuple_new(_cls, (a, b, c)),
    lambda _cls, a, b, c, d: _tuple_new(_cls, (a, b, c, d)),
    lambda _cls, a, b, c, d, e: _tuple_new(_cls, (a, b, c, d, e)),
    lambda _cls, a, b, c, d, e, f: _tuple_new(_cls, (a, b, c, d, e, f)),
    lambda _cls, a, b, c, d, e, f, g: _tuple_new(_cls, (a, b, c, d, e, f, g)),
    lambda _cls, a, b, c, d, e, f, g, h: _tuple_new(_cls, (a, b, c, d, e, f, g, h)),
    lambda _cls, a, b, c, d, e, f, g, h, i: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, m: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, m)),
)
_FUNCTION: Any = type(_NEWS[0])  # types.FunctionType


class _Builder(type):
    def __new__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, object]) -> type:
        if not bases:  # NamedTuple itself
            return super().__new__(cls, name, bases, namespace)
        fields = namespace.get("__annotations__")
        if not isinstance(fields, dict) or "__classcell__" in namespace:  # lazy annotations (PEP 649), super()
            return _typed(name, namespace)
        made = _record(name, tuple(fields), tuple(namespace[f] for f in fields if f in namespace))
        made.__module__ = str(namespace.get("__module__"))
        for key, value in namespace.items():
            if key not in fields and key not in _CLASS_KEYS:
                setattr(made, key, value)
        made.__annotations__ = fields
        if namespace.get("__doc__"):
            made.__doc__ = str(namespace["__doc__"])
        made.__qualname__ = str(namespace.get("__qualname__", name))
        return made


def _record(name: str, fields: tuple[str, ...], defaults: tuple[object, ...]) -> type:
    """What `collections.namedtuple(name, fields, defaults=defaults)` returns (its methods, its errors)."""
    if any(not f.isidentifier() or f.startswith("_") for f in fields) or len(set(fields)) != len(fields):
        raise ValueError(f"{name}: invalid field names {fields!r}")
    listed = ", ".join(fields)
    scope = {"_tuple_new": tuple.__new__, "__builtins__": {}, "__name__": f"namedtuple_{name}"}
    if len(fields) < len(_NEWS):
        new = _FUNCTION(_NEWS[len(fields)].__code__.replace(co_varnames=("_cls", *fields)), scope)
    else:
        new = eval(f"lambda _cls, {listed}: _tuple_new(_cls, ({listed}{',' if fields else ''}))", scope)  # noqa: S307
    new.__name__, new.__defaults__ = "__new__", defaults or None
    new.__doc__ = f"Create new instance of {name}({listed})"
    count = len(fields)

    @classmethod  # type: ignore[misc]
    def _make(cls: type[tuple[object, ...]], iterable: Iterable[object]) -> tuple[object, ...]:
        made = tuple.__new__(cls, iterable)
        if len(made) != count:
            raise TypeError(f"Expected {count} arguments, got {len(made)}")
        return made

    def _replace(self: tuple[object, ...], /, **changes: object) -> tuple[object, ...]:
        made: tuple[object, ...] = self._make(map(changes.pop, fields, self))  # type: ignore[attr-defined]
        if changes:
            raise ValueError(f"Got unexpected field names: {list(changes)!r}")
        return made

    def __repr__(self: tuple[object, ...]) -> str:
        return f"{self.__class__.__name__}({', '.join(f'{f}={v!r}' for f, v in zip(fields, self, strict=True))})"

    def _asdict(self: tuple[object, ...]) -> dict[str, object]:
        return dict(zip(fields, self, strict=True))

    def __getnewargs__(self: tuple[object, ...]) -> tuple[object, ...]:
        return tuple(self)

    body: dict[str, object] = {
        "__doc__": f"{name}({listed})", "__slots__": (), "_fields": fields,
        "_field_defaults": dict(zip(fields[count - len(defaults):], defaults, strict=True)),
        "__new__": staticmethod(new), "_make": _make, "_replace": _replace, "__repr__": __repr__,
        "_asdict": _asdict, "__getnewargs__": __getnewargs__, "__match_args__": fields}
    for index, field in enumerate(fields):
        body[field] = _tuplegetter(index, f"Alias for field number {index}")
    return type(name, (tuple,), body)


def _typed(name: str, namespace: dict[str, object]) -> type:
    """typing's own NamedTuple for a class body this module does not read (never on CPython 3.10-3.13)."""
    import typing

    return typing.NamedTupleMeta(name, (typing._NamedTuple,), namespace)  # type: ignore[attr-defined,no-any-return]


class NamedTuple(metaclass=_Builder):
    """Subclass it as typing.NamedTuple (the subclass is a plain tuple class, as typing's namedtuples are)."""
