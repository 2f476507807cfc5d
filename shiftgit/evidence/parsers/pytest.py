"""pytest's terminal output: the summary line's counts and the FAILED / ERROR ids."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from shiftgit.evidence.outcome import Outcome

# ---------------------------------------------------------------- pytest

_PYTEST_TAIL = re.compile(r" in \d{1,9}(?:\.\d{1,9})?(?:s| seconds)(?: \(\d{1,9}:\d\d:\d\d\))?$")
_PYTEST_ITEM = re.compile(r"(\d{1,9}) ([a-z]{1,20}(?: [a-z]{1,20})?)")
_PYTEST_WORDS = {"passed", "failed", "error", "errors", "skipped", "xfailed", "xpassed", "deselected"}
_PERCENT = re.compile(r"\[\s*\d{1,3}%\]")
_XDIST = re.compile(r"\[gw\d{1,4}\] \[\s*\d{1,3}%\] (?:FAILED|ERROR) (\S.*)")


@dataclass
class _PytestBlock:
    """Everything since the previous summary line: a later run's (or an inner run's) is separate."""

    header: bool = False
    listed: list[str] = field(default_factory=list)
    verbose: list[str] = field(default_factory=list)

    def feed(self, line: str) -> None:
        if line.startswith("=") and "short test summary info" in line:
            self.header = True
        elif self.header and line.startswith(("FAILED ", "ERROR ")):
            self.listed.append(_strip_reason(line.split(" ", 1)[1]))
        elif "::" in line:
            found = _verbose_failure(line)
            if found:
                self.verbose.append(found)


def parse(lines: list[str], detected: bool) -> Outcome | None:
    result, block = None, _PytestBlock()
    for line in lines:
        counts = _pytest_summary(line)
        if counts is None:
            block.feed(line)
            continue
        result, block = _pytest_outcome(counts, block.listed or block.verbose), _PytestBlock()
    if result is None and block.header and block.listed:  # -qq prints no summary line
        return Outcome("pytest", None, len(set(block.listed)), None, tuple(block.listed))
    return result


def _pytest_summary(line: str) -> dict[str, int] | None:
    if len(line) > 400 or not line.endswith(("s", "=", ")")) or " in " not in line:
        return None
    body = line.strip().strip("=").strip()
    tail = _PYTEST_TAIL.search(body)
    if tail is None:
        return None
    head = body[:tail.start()]
    if head == "no tests ran":
        return {}
    counts: dict[str, int] = {}
    for item in head.split(", "):
        match = _PYTEST_ITEM.fullmatch(item)
        if match is None:
            return None
        counts[match[2]] = counts.get(match[2], 0) + int(match[1])
    return counts if counts.keys() & _PYTEST_WORDS else None


def _pytest_outcome(counts: dict[str, int], ids: list[str]) -> Outcome:
    def total(*words: str) -> int:
        return sum(counts.get(w, 0) for w in words)

    return Outcome("pytest", total("passed", "xpassed"), total("failed", "error", "errors"),
                   total("skipped", "xfailed"), tuple(ids))


def _strip_reason(text: str) -> str:
    """`nodeid - reason` -> nodeid; a " - " inside a parametrize [...] belongs to the id."""
    text = text.strip()
    colons, depth, start, fallback = text.find("::"), 0, 0, -1
    pos = text.find(" - ")
    while pos != -1:  # no slicing inside the loop: one pass over the line
        depth += text.count("[", start, pos) - text.count("]", start, pos)
        start = pos
        if depth <= 0 and (-1 < colons < pos or text.startswith(".py", pos - 3)):
            return text[:pos]
        if fallback == -1 and (depth <= 0 or text[pos - 1] == "]"):
            fallback = pos
        pos = text.find(" - ", pos + 3)
    return text if fallback == -1 else text[:fallback]


def _verbose_failure(line: str) -> str | None:
    """`tests/t.py::test_x FAILED   [ 50%]` (-v) or `[gw0] [ 50%] FAILED tests/t.py::test_x`."""
    xdist = _XDIST.match(line)
    if xdist:
        return _strip_reason(xdist[1])
    body = line.rstrip()
    bracket = body.rfind("[")
    if bracket != -1 and _PERCENT.fullmatch(body, bracket):
        body = body[:bracket].rstrip()
    for word in (" FAILED", " ERROR"):
        if body.endswith(word) and not body.startswith(" "):
            return body[:-len(word)].strip()
    return None
