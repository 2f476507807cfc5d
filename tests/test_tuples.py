"""shiftgit.tuples.NamedTuple builds the class typing.NamedTuple would (the hooks' records, without typing)."""

from __future__ import annotations

import typing

from shiftgit.tuples import NamedTuple


class Light(NamedTuple):
    """A record."""

    rule: int
    what: str
    details: tuple[str, ...] = ()

    def line(self) -> str:
        return f"{self.rule}: {self.what}"

    @property
    def doubled(self) -> int:
        return self.rule * 2


class Typed(typing.NamedTuple):
    """A record."""

    rule: int
    what: str
    details: tuple[str, ...] = ()


def test_the_same_class_as_typing_builds() -> None:
    light, typed = Light(1, "x"), Typed(1, "x")
    assert light == typed == (1, "x", ())
    assert Light._fields == Typed._fields and Light._field_defaults == Typed._field_defaults == {"details": ()}
    assert repr(light) == "Light(rule=1, what='x', details=())"
    assert light._replace(details=("d",)).details == ("d",)
    assert light.line() == "1: x" and light.doubled == 2
    assert Light.__doc__ == "A record." and Light.__module__ == __name__ and Light.__qualname__ == "Light"
    assert list(Light.__annotations__) == list(Typed.__annotations__)
    assert isinstance(light, tuple) and Light.__bases__ == Typed.__bases__ == (tuple,)
