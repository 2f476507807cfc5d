"""TAP streams and prove's summary: ok / not ok lines, plans, skips, failed test numbers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from shiftgit.evidence.outcome import MAX_FAILING, Outcome, Tally

# ---------------------------------------------------------------- TAP (and prove's summary)

_TAP_PLAN = re.compile(r"1\.\.(\d{1,9})\b")
_TAP_RESULT = re.compile(r"(not )?ok\b ?(\d{1,9}\b)?(.*)")
_PROVE_FILE = re.compile(r"(\S+) \.{2,}(?: |$)")
_PROVE_TOTAL = re.compile(r"Files=\d{1,9}, Tests=(\d{1,9}),")
_PROVE_REPORT = re.compile(r"(\S.*) \(Wstat: \d{1,9}.*Tests: \d{1,9} Failed: (\d{1,9})\)")
_PROVE_FAILED = re.compile(r"\s+Failed tests?:\s+([0-9, -]{1,2000})$")
_PROVE_BROKEN = re.compile(r"\s+(?:Parse errors|Non-zero exit status|Non-zero wait status):")
_PROVE_SKIPS = re.compile(r"\s*\(less (\d{1,9}) skipped subtests?")


@dataclass
class _TapState:
    tally: Tally = field(default_factory=Tally)
    seen: bool = False
    has_plan: bool = False
    file: str = ""
    planned: int | None = None
    ran: int = 0

    def new_stream(self, file: str) -> None:
        if self.planned is not None and self.planned > self.ran:
            self.tally.failed += self.planned - self.ran  # the plan promised tests that never ran
        self.file, self.planned, self.ran = file, None, 0

    def result(self, match: re.Match[str]) -> None:
        self.seen, self.ran = True, self.ran + 1
        number, rest = match[2] or "", match[3]
        description, directive = _tap_split(rest)
        test_id = f"{number} - {description}" if number and description else number or description
        test_id = test_id or f"#{self.ran}"
        state = "skipped" if directive else "failed" if match[1] else "passed"
        self.tally.add(state, f"{self.file}::{test_id}" if self.file else test_id)


def parse(lines: list[str], detected: bool) -> Outcome | None:
    tap, prove = _TapState(), _ProveSummary()
    for line in lines:
        if (plan := _TAP_PLAN.match(line)) is not None:
            tap.has_plan, tap.planned = True, int(plan[1])
        elif line.startswith(("ok", "not ok")) and not (tap.file and line == "ok"):
            if (result := _TAP_RESULT.match(line)) is not None:
                tap.result(result)
        elif line.startswith("Bail out!"):
            tap.seen = True
            tap.tally.add("failed", line.strip())
        elif (header := _PROVE_FILE.match(line)) is not None and _is_test_file(header[1]):
            tap.new_stream(header[1])
        else:
            prove.feed(line)
    tap.new_stream("")
    if tap.seen and (detected or tap.has_plan):
        return tap.tally.outcome("tap")
    return prove.outcome()


@dataclass
class _ProveSummary:
    total: int | None = None
    tally: Tally = field(default_factory=Tally)
    file: str = ""
    file_failed: int = 0

    def feed(self, line: str) -> None:
        if (total := _PROVE_TOTAL.match(line)) is not None:
            self.total = int(total[1])
        elif (skips := _PROVE_SKIPS.match(line)) is not None:
            self.tally.skipped += int(skips[1])
        elif "(Wstat: " in line and (report := _PROVE_REPORT.match(line[:500])) is not None:
            self.file, self.file_failed = report[1], int(report[2])
            self.tally.failed += self.file_failed
        elif self.file and (failed := _PROVE_FAILED.match(line)) is not None:
            self.tally.ids += [f"{self.file}::{n}" for n in _expand_ranges(failed[1])]
        elif self.file and not self.file_failed and _PROVE_BROKEN.match(line):
            self.tally.add("failed", self.file)
            self.file_failed = 1

    def outcome(self) -> Outcome | None:
        if self.total is None:
            return None
        passed = max(self.total - self.tally.failed - self.tally.skipped, 0)
        return Outcome("tap", passed, self.tally.failed, self.tally.skipped, tuple(self.tally.ids))


def _is_test_file(name: str) -> bool:
    return name.endswith(".t") or "/" in name


def _expand_ranges(text: str) -> list[str]:
    numbers: list[str] = []
    for part in text.replace(" ", "").split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (high.isdigit() or not high):
            stop = min(int(high or low), int(low) + MAX_FAILING)
            numbers += [str(n) for n in range(int(low), stop + 1)]
    return numbers[:MAX_FAILING]


def _tap_split(rest: str) -> tuple[str, bool]:
    """` - description # SKIP why` -> ("description", True); an escaped \\# is not a directive."""
    hash_at = rest.find("#")
    while hash_at > 0 and rest[hash_at - 1] == "\\":
        hash_at = rest.find("#", hash_at + 1)
    directive = rest[hash_at + 1:].strip().lower() if hash_at != -1 else ""
    description = (rest[:hash_at] if hash_at != -1 else rest).strip()
    description = description[1:].strip() if description.startswith("-") else description
    return description, directive.startswith(("skip", "todo"))
