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


def test_the_namedtuple_api_and_errors_match_collections() -> None:
    import pickle

    light, typed = Light(1, "x", ("d",)), Typed(1, "x", ("d",))
    assert light._asdict() == typed._asdict() and Light._make([2, "y", ()]) == Typed._make([2, "y", ()])
    assert Light.__match_args__ == Typed.__match_args__ and light.__getnewargs__() == typed.__getnewargs__()
    assert pickle.loads(pickle.dumps(light)) == light and type(pickle.loads(pickle.dumps(light))) is Light
    assert Light.rule.__doc__ == Typed.rule.__doc__ and Light.__new__.__defaults__ == Typed.__new__.__defaults__
    assert not hasattr(light, "__dict__") and Light.__slots__ == ()
    for call in (lambda cls: cls(1), lambda cls: cls(1, "x", (), 4), lambda cls: cls._make([1]),
                 lambda cls: cls(1, "x")._replace(nope=1)):
        errors = []
        for cls in (Light, Typed):
            try:
                call(cls)
            except (TypeError, ValueError) as exc:
                errors.append(type(exc))
        assert len(errors) == 2 and errors[0] is errors[1]


def test_the_commit_gates_modules_load_no_collections_package() -> None:
    """What the shim's `python -S` loads for a gate (issue 17): collections' ~2-5 ms are not among it."""
    import subprocess
    import sys
    from pathlib import Path

    package = str(Path(__file__).resolve().parents[1])
    probe = ("import sys\nbefore = 'collections' in sys.modules\nsys.path.append(sys.argv[1])\n"
             "from shiftgit.git import hooks, view, gate\nprint(before, 'collections' in sys.modules)")
    found = subprocess.run([sys.executable, "-S", "-c", probe, package], capture_output=True, text=True, check=True)
    assert found.stdout.split() == ["False", "False"], found.stdout  # `python -S` starts without it, and stays so


def test_records_of_every_size_take_their_arguments_as_collections_does() -> None:
    """A record's `__new__` is a copy of a template compiled with shiftgit/tuples.py (up to 12 fields), renamed to
    its fields; beyond, one of its own: by position, by name, with defaults, the same errors either way."""
    import collections

    from shiftgit.tuples import _NEWS, _record

    for size in range(len(_NEWS) + 3):
        fields = tuple(f"f{n}" for n in range(size))
        defaults = tuple(range(100, 100 + size // 2))
        ours, theirs = _record("R", fields, defaults), collections.namedtuple("R", fields, defaults=defaults)
        values = list(range(size))
        assert ours(*values) == theirs(*values) == tuple(values)
        assert ours(**dict(zip(fields, values, strict=True))) == tuple(values)
        assert ours(*values[: size - len(defaults)]) == theirs(*values[: size - len(defaults)])
        assert ours.__new__.__code__.co_varnames == ("_cls", *fields)
        required = size - len(defaults)
        for args, names in (([*values, 1], {}), ([], {"nope": 1}),
                            (values[: required - 1] if required else [*values, 2], {})):
            errors = []
            for cls in (ours, theirs):
                try:
                    cls(*args, **names)
                except TypeError as exc:
                    errors.append(type(exc))
            assert errors == [TypeError, TypeError], (size, args, names)
