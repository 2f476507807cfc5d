"""Test runner output -> counts and failing test ids (pytest, JUnit XML, go, cargo, TAP).

Every parser reads the output once, line by line, with anchored regexes and bounded numbers, so
megabytes of output cost linear time and odd input yields `Outcome(runner="exit_code")`, never an
exception. pytest's xfailed counts as skipped and xpassed as passed; errors count as failed.
"""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

MAX_FAILING = 500
MAX_ID_CHARS = 1000
RUNNERS = ("pytest", "junit", "go", "cargo", "tap", "exit_code")


@dataclass(frozen=True)
class Outcome:
    runner: str
    passed: int | None = None
    failed: int | None = None  # failures + errors
    skipped: int | None = None
    failing: tuple[str, ...] = ()  # sorted, de-duplicated, capped at MAX_FAILING

    def __post_init__(self) -> None:
        object.__setattr__(self, "failing", _normalize_ids(self.failing))

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


def _normalize_ids(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({i[:MAX_ID_CHARS] for i in ids if i}))[:MAX_FAILING]


@dataclass
class _Tally:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    ids: list[str] = field(default_factory=list)

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


class _Refused(Exception):
    """The JUnit file declares a DOCTYPE (entity expansion, external entities): not parsed."""


class _NotJUnit(Exception):
    """The XML's root is neither <testsuites> nor <testsuite>."""


# ---------------------------------------------------------------- runner detection

def detect_runner(argv: Sequence[str]) -> str | None:
    """The runner named by a command line, looking through wrappers (`uv run`, `sh -c "..."`)."""
    tokens = _tokens(argv)
    for i in range(len(tokens)):
        runner = _runner_at(tokens, i)
        if runner is not None:
            return runner
    return None


def _tokens(argv: Sequence[str]) -> list[str]:
    tokens: list[str] = []
    for arg in argv:
        if not any(c.isspace() for c in arg):
            tokens.append(arg)
            continue
        try:
            tokens.extend(shlex.split(arg))
        except ValueError:
            tokens.extend(arg.split())
    return tokens


def _runner_at(tokens: list[str], i: int) -> str | None:
    name = tokens[i].replace("\\", "/").rsplit("/", 1)[-1].lower().removesuffix(".exe")
    following = tokens[i + 1:i + 6]
    if name in ("pytest", "py.test") or (name == "-m" and following[:1] == ["pytest"]):
        return "pytest"
    if name == "go" and following[:1] == ["test"]:
        return "go"
    if name == "cargo":
        sub = next((t for t in following if not t.startswith(("+", "-"))), "")
        return "cargo" if sub in ("test", "t", "nextest") else None
    return "tap" if name == "prove" else None


# ---------------------------------------------------------------- entry point

def parse_outcome(argv: Sequence[str], output: str, exit_code: int | None,
                  junit_xml: str | None = None) -> Outcome:
    """Counts and failing ids from a JUnit file if given, else from the runner's output.

    `exit_code` is the caller's to record; the parsers trust only what the runner printed.
    """
    if junit_xml:
        try:
            junit = _parse_junit(junit_xml)
        except _Refused:
            return Outcome("exit_code")
        if junit is not None:
            return junit
    lines = _ANSI.sub("", output).splitlines() if "\x1b" in output else output.splitlines()
    detected = detect_runner(argv)
    for runner in _parser_order(detected):
        outcome = _PARSERS[runner](lines, runner == detected)
        if outcome is not None:
            return outcome
    return Outcome("exit_code")


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def _parser_order(detected: str | None) -> list[str]:
    order = ["pytest", "cargo", "go", "tap"]
    return order if detected is None else [detected, *(r for r in order if r != detected)]


# ---------------------------------------------------------------- JUnit XML

def _parse_junit(text: str) -> Outcome | None:
    target = _JUnitTarget()
    parser = ET.XMLParser(target=target)
    try:
        parser.feed(text)
        parser.close()
    except (ET.ParseError, _NotJUnit, ValueError, RecursionError):
        return None
    return target.tally.outcome("junit") if target.is_junit else None


class _JUnitTarget:
    """Streams the XML (no tree): one testcase at a time, its state from its direct children."""

    def __init__(self) -> None:
        self.tally = _Tally()
        self.is_junit = False
        self.depth = 0
        self.suites: list[bool] = []  # per open <testsuite(s)>: is it named like pytest's?
        self.pytest_suites = 0
        self.case: dict[str, str] | None = None
        self.case_depth = 0
        self.state = "passed"

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise _Refused(name)

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        name = tag.rsplit("}", 1)[-1]
        self.depth += 1
        if self.depth == 1 and name not in ("testsuites", "testsuite"):
            raise _NotJUnit(name)
        self.is_junit = True
        if name in ("testsuites", "testsuite"):
            suite = attrib.get("name", "")
            self.suites.append(suite == "pytest" or suite.startswith("pytest "))
            self.pytest_suites += self.suites[-1]
        elif name == "testcase" and self.case is None:
            self.case, self.case_depth, self.state = dict(attrib), self.depth, "passed"
        elif self.case is not None and self.depth == self.case_depth + 1:
            self._child(name)

    def _child(self, name: str) -> None:
        if name in ("failure", "error"):
            self.state = "failed"
        elif name == "skipped" and self.state == "passed":
            self.state = "skipped"

    def end(self, tag: str) -> None:
        name = tag.rsplit("}", 1)[-1]
        if name in ("testsuites", "testsuite") and self.suites:
            self.pytest_suites -= self.suites.pop()
        elif name == "testcase" and self.case is not None and self.depth == self.case_depth:
            self.tally.add(self.state, _junit_id(self.case, self.pytest_suites > 0))
            self.case = None
        self.depth -= 1

    def data(self, data: str) -> None:
        pass

    def close(self) -> None:
        pass


_PY_MODULE = re.compile(r"test_\w*|\w+_test")


def _junit_id(case: Mapping[str, str], in_pytest: bool) -> str:
    classname, name = case.get("classname", ""), case.get("name", "")
    parts = classname.split(".") if classname else []
    if not all(p.isidentifier() for p in parts):
        return f"{classname}::{name}"
    if in_pytest and not parts and all(p.isidentifier() for p in name.split(".")):
        return _module_path(name.split("."))  # collection error: the name is the module
    if parts and (in_pytest or any(_PY_MODULE.fullmatch(p) for p in parts)):
        return _pytest_id(parts, name, case.get("file", "").replace("\\", "/"))
    return f"{classname}::{name}" if classname else name


def _pytest_id(parts: list[str], name: str, file: str) -> str:
    module = file.removesuffix(".py").replace("/", ".")
    dotted = ".".join(parts)
    if file.endswith(".py") and (dotted == module or dotted.startswith(module + ".")):
        return "::".join([file, *parts[len(module.split(".")):], name])
    cut = next((i + 1 for i in reversed(range(len(parts))) if _PY_MODULE.fullmatch(parts[i])), 0)
    if cut == 0:
        cut = next((i + 1 for i in reversed(range(len(parts))) if not parts[i][:1].isupper()), 1)
    return "::".join([_module_path(parts[:cut]), *parts[cut:], name])


def _module_path(parts: list[str]) -> str:
    return "/".join(parts) + ".py"


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


def _parse_pytest(lines: list[str], detected: bool) -> Outcome | None:
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


# ---------------------------------------------------------------- go test

_GO_RESULT = re.compile(r"\s*--- (FAIL|PASS|SKIP): (\S+)")
_GO_PACKAGE = re.compile(r"(ok  |FAIL|\?   )\t(\S+)")
_GO_STATE = {"FAIL": "failed", "PASS": "passed", "SKIP": "skipped",
             "fail": "failed", "pass": "passed", "skip": "skipped"}  # text and -json spellings


@dataclass
class _GoState:
    tally: _Tally = field(default_factory=_Tally)
    seen: bool = False
    verbose: bool = False  # -v or -json: passes and skips are printed too
    pending: list[str] = field(default_factory=list)  # failed tests whose package is not known yet
    failed_packages: set[str] = field(default_factory=set)

    def result(self, word: str, name: str) -> None:
        self.seen = True
        if word == "FAIL":
            self.tally.failed += 1
            self.pending.append(name)
        else:
            self.verbose = True
            self.tally.add(_GO_STATE[word])

    def package_done(self, kind: str, package: str) -> None:
        self.seen = True
        if kind == "FAIL" and not self.pending:  # build failure, panic in init, timeout
            self.tally.add("failed", package)
        prefix = f"{package}/" if kind == "FAIL" else ""
        self.tally.ids.extend(prefix + name for name in self.pending)
        self.pending = []


def _parse_go(lines: list[str], detected: bool) -> Outcome | None:
    go = _GoState()
    for line in lines:
        if line.startswith("{"):
            _go_json(go, line)
        elif (result := _GO_RESULT.match(line)) is not None:
            go.result(result[1], result[2])
        elif (package := _GO_PACKAGE.match(line)) is not None:
            go.package_done(package[1], package[2])
        elif line.startswith("=== RUN"):
            go.verbose = True
    go.tally.ids.extend(go.pending)
    return go.tally.outcome("go", complete=go.verbose) if go.seen else None


def _go_json(go: _GoState, line: str) -> None:
    if '"Action"' not in line:
        return
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return
    action = event.get("Action") if isinstance(event, dict) else None
    if action not in ("pass", "fail", "skip"):
        return
    go.seen, go.verbose = True, True
    package, test, state = str(event.get("Package") or ""), event.get("Test"), _GO_STATE[action]
    if isinstance(test, str) and test:
        go.tally.add(state, f"{package}/{test}" if package else test)
        if state == "failed":
            go.failed_packages.add(package)
    elif state == "failed" and package not in go.failed_packages:
        go.tally.add("failed", package)


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
    libtest: _Tally | None = None  # the "test result:" lines, summed over test binaries
    nextest: _Tally | None = None  # nextest's "Summary" line
    libtest_lines: _Tally = field(default_factory=_Tally)  # one line per test: ids, counts as a fallback
    nextest_lines: _Tally = field(default_factory=_Tally)  # nextest runs libtest: its lines are nested
    in_failures: bool = False
    running: str = ""  # `test x ... ` whose status comes later (--nocapture output in between)

    def feed(self, line: str) -> None:
        if (result := _CARGO_RESULT.match(line)) is not None:
            self.libtest = self.libtest or _Tally()
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


def _parse_cargo(lines: list[str], detected: bool) -> Outcome | None:
    cargo = _CargoState()
    for line in lines:
        cargo.feed(line)
    return cargo.outcome(detected)


def _nextest_counts(text: str) -> _Tally:
    tally = _Tally()
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
    tally: _Tally = field(default_factory=_Tally)
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


def _parse_tap(lines: list[str], detected: bool) -> Outcome | None:
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
    tally: _Tally = field(default_factory=_Tally)
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


_PARSERS: dict[str, Callable[[list[str], bool], Outcome | None]] = {
    "pytest": _parse_pytest, "go": _parse_go, "cargo": _parse_cargo, "tap": _parse_tap,
}
