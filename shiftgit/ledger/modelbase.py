"""The base of the model's record classes (ledger/model.py): equality, hash and repr written once.

Every record class there is `@dataclass(frozen=True, kw_only=True, eq=False, repr=False)`, so dataclass does not
generate its `__eq__`, `__hash__` and `__repr__`: these are the same for every class and give what dataclass
would (every field in order, all of them compared and hashed). Generating and compiling them class by class was
a third of the model's import, which `resume` pays at every start.
"""

from __future__ import annotations

from dataclasses import dataclass

from shiftgit.ledger.record import Record as _Record  # the machinery: ledger/record.py

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Record(_Record):
    """A ledger record: ledger/record.Record, with equality, hash and repr as dataclass generates them."""

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self.__dataclass_fields__])  # fields() order, no ClassVar

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__dataclass_fields__)
        return f"{self.__class__.__qualname__}({shown})"
