"""An Outcome: what a test runner said (counts, failing test ids), and the tally the parsers build it with."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from shiftgit.tuples import NamedTuple  # typing's class without importing typing or dataclasses

MAX_FAILING = 500
MAX_ID_CHARS = 1000


class _Counts(NamedTuple):
    runner: str
    passed: int | None = None
    failed: int | None = None  # failures + errors
    skipped: int | None = None
    failing: tuple[str, ...] = ()  # sorted, de-duplicated, capped at MAX_FAILING


class Outcome(_Counts):
    """What a runner said; `failing` kept sorted, de-duplicated and capped however it is given."""

    __slots__ = ()

    def __new__(cls, runner: str, passed: int | None = None, failed: int | None = None, skipped: int | None = None,
                failing: Iterable[str] = ()) -> Outcome:
        return super().__new__(cls, runner, passed, failed, skipped, normalize_ids(failing))

    def to_dict(self) -> dict[str, object]:
        return {"runner": self.runner, "passed": self.passed, "failed": self.failed,
                "skipped": self.skipped, "failing": list(self.failing)}

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Outcome:
        runner, failing = d.get("runner"), d.get("failing", [])
        if not isinstance(runner, str):
            raise ValueError("outcome.runner must be a string")
        if not isinstance(failing, (list, tuple)) or not all(isinstance(i, str) for i in failing):
            raise ValueError("outcome.failing must be a list of strings")
        return cls(runner, _count_field(d, "passed"), _count_field(d, "failed"),
                   _count_field(d, "skipped"), tuple(failing))


def _count_field(d: Mapping[str, object], key: str) -> int | None:
    value = d.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ValueError(f"outcome.{key} must be an integer or null")


def normalize_ids(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({i[:MAX_ID_CHARS] for i in ids if i}))[:MAX_FAILING]


class Tally:
    """The counts a parser adds up as it reads."""

    def __init__(self) -> None:
        self.passed = self.failed = self.skipped = 0
        self.ids: list[str] = []

    def add(self, state: str, test_id: str = "") -> None:
        if state == "failed":
            self.failed += 1
            self.ids.append(test_id)
        elif state == "skipped":
            self.skipped += 1
        else:
            self.passed += 1

    def total(self) -> int:
        return self.passed + self.failed + self.skipped

    def outcome(self, runner: str, *, complete: bool = True) -> Outcome:
        """`complete=False`: passes and skips were not printed, so only failures are known."""
        if not complete:
            return Outcome(runner, None, self.failed, None, tuple(self.ids))
        return Outcome(runner, self.passed, self.failed, self.skipped, tuple(self.ids))


class Refused(Exception):
    """The JUnit file declares a DOCTYPE (entity expansion, external entities): not parsed."""


class NotJUnit(Exception):
    """The XML's root is neither <testsuites> nor <testsuite>."""

