"""cargo test output: libtest's result lines and nextest's per-test lines and summary."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from shiftgit.evidence.outcome import Outcome, Tally

# ---------------------------------------------------------------- cargo (libtest and nextest)

_CARGO_RESULT = re.compile(r"test result: (?:ok|FAILED)\. (\d{1,9}) passed; (\d{1,9}) failed; "
                           r"(\d{1,9}) ignored")
_NEXTEST_LINE = re.compile(r"\s*(PASS|FAIL|SKIP|TIMEOUT|ABORT|SIG[A-Z]{2,8}) \[ *[0-9.]{1,12}s\] "
                           r"(?:\(\s*\d{1,9}/\d{1,9}\) )?(\S.*)")
_NEXTEST_SUMMARY = re.compile(r"\s*Summary \[ *[0-9.]{1,12}s\] \d{1,9} tests? run: (.*)")
_NEXTEST_ITEM = re.compile(r"(\d{1,9}) ([a-z ]{1,20}?)(?: \(.*\))?")
_CARGO_STATE = {"ok": "passed", "FAILED": "failed", "ignored": "skipped", "PASS": "passed", "SKIP": "skipped"}


@dataclass
class _CargoState:
    libtest: Tally | None = None  # the "test result:" lines, summed over test binaries
    nextest: Tally | None = None  # nextest's "Summary" line
    libtest_lines: Tally = field(default_factory=Tally)  # one line per test: ids, counts as a fallback
    nextest_lines: Tally = field(default_factory=Tally)  # nextest runs libtest: its lines are nested
    in_failures: bool = False
    running: str = ""  # `test x ... ` whose status comes later (--nocapture output in between)

    def feed(self, line: str) -> None:
        if (result := _CARGO_RESULT.match(line)) is not None:
            self.libtest = self.libtest or Tally()
            self.libtest.passed += int(result[1])
            self.libtest.failed += int(result[2])
            self.libtest.skipped += int(result[3])
        elif line.startswith("test ") and " ... " in line:
            name, _, status = line[5:].partition(" ... ")
            self._libtest_line(name, status.split(",", 1)[0].strip())
        elif self.running and line in ("ok", "FAILED", "ignored"):
            self._libtest_line(self.running, line)
        elif (nextest := _NEXTEST_LINE.match(line)) is not None:
            self._nextest_line(nextest[1], nextest[2].strip())
        elif (summary := _NEXTEST_SUMMARY.match(line)) is not None:
            self.nextest = _nextest_counts(summary[1])
        elif self.in_failures and line.startswith("    ") and line.strip():
            self.libtest_lines.ids.append(line.strip())  # the "failures:" list names every failure
        self.in_failures = line == "failures:" or (self.in_failures and line.startswith("    "))

    def _libtest_line(self, name: str, word: str) -> None:
        self.running = "" if word in _CARGO_STATE else name
        if word in _CARGO_STATE:
            self.libtest_lines.add(_CARGO_STATE[word], name)

    def _nextest_line(self, status: str, name: str) -> None:
        state = _CARGO_STATE.get(status, "failed")
        if self.nextest is None:
            self.nextest_lines.add(state, name)
        elif state == "failed":  # the summary repeats the failures: ids only
            self.nextest_lines.ids.append(name)

    def outcome(self, detected: bool) -> Outcome | None:
        is_nextest = self.nextest is not None or self.nextest_lines.total() > 0
        counts = self.nextest if is_nextest else self.libtest
        lines = self.nextest_lines if is_nextest else self.libtest_lines
        if counts is None and detected and lines.total():
            counts = lines
        if counts is None:
            return None
        return Outcome("cargo", counts.passed, counts.failed, counts.skipped, tuple(lines.ids))


def parse(lines: list[str], detected: bool) -> Outcome | None:
    cargo = _CargoState()
    for line in lines:
        cargo.feed(line)
    return cargo.outcome(detected)


def _nextest_counts(text: str) -> Tally:
    tally = Tally()
    for item in text.split(", "):
        match = _NEXTEST_ITEM.fullmatch(item.strip())
        if match is None:
            continue
        word, n = match[2], int(match[1])
        if word == "passed":
            tally.passed += n
        elif word == "skipped":
            tally.skipped += n
        elif word in ("failed", "timed out", "exec failed", "exec fail"):
            tally.failed += n
    return tally
