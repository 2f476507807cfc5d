"""`typing.NamedTuple` classes without importing typing: ~4 ms, a sixth of a git hook's imports.

The modules a git hook loads declare their records so:

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from shiftgit.tuples import NamedTuple

mypy sees typing's class; at run time this one builds what typing would: `collections.namedtuple` with
the annotated fields in order, the defaults the class body gives the last of them, and the body's
docstring, methods and properties. Stdlib only (collections is loaded anyway: `re` needs it).
"""

from __future__ import annotations

from collections import namedtuple

_CLASS_KEYS = frozenset(("__module__", "__qualname__", "__annotations__", "__doc__", "__dict__", "__weakref__"))


class _Builder(type):
    def __new__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, object]) -> type:
        if not bases:  # NamedTuple itself
            return super().__new__(cls, name, bases, namespace)
        fields = namespace.get("__annotations__")
        if not isinstance(fields, dict) or "__classcell__" in namespace:  # lazy annotations (PEP 649), super()
            return _typed(name, namespace)
        made = namedtuple(name, list(fields), defaults=[namespace[f] for f in fields if f in namespace],  # type: ignore[misc]
                          module=str(namespace.get("__module__")))
        for key, value in namespace.items():
            if key not in fields and key not in _CLASS_KEYS:
                setattr(made, key, value)
        made.__annotations__ = fields
        if namespace.get("__doc__"):
            made.__doc__ = str(namespace["__doc__"])
        made.__qualname__ = str(namespace.get("__qualname__", name))
        return made


def _typed(name: str, namespace: dict[str, object]) -> type:
    """typing's own NamedTuple for a class body this module does not read (never on CPython 3.10-3.13)."""
    import typing

    return typing.NamedTupleMeta(name, (typing._NamedTuple,), namespace)  # type: ignore[attr-defined,no-any-return]


class NamedTuple(metaclass=_Builder):
    """Subclass it as typing.NamedTuple (the subclass is a plain namedtuple class, as typing's are)."""
