"""`go test` output, plain and `-json`: per-test results and package failures."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from shiftgit.evidence.outcome import Outcome, Tally

# ---------------------------------------------------------------- go test

_GO_RESULT = re.compile(r"\s*--- (FAIL|PASS|SKIP): (\S+)")
_GO_PACKAGE = re.compile(r"(ok  |FAIL|\?   )\t(\S+)")
_GO_STATE = {"FAIL": "failed", "PASS": "passed", "SKIP": "skipped",
             "fail": "failed", "pass": "passed", "skip": "skipped"}  # text and -json spellings


@dataclass
class _GoState:
    tally: Tally = field(default_factory=Tally)
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


def parse(lines: list[str], detected: bool) -> Outcome | None:
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
