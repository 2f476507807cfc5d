"""Test runner output -> counts and failing test ids (pytest, JUnit XML, go, cargo, TAP).

Every parser reads the output once, line by line, with anchored regexes and bounded numbers, so
megabytes of output cost linear time and odd input yields `Outcome(runner="exit_code")`, never an
exception. pytest's xfailed counts as skipped and xpassed as passed; errors count as failed.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence

from shiftgit.evidence.outcome import Outcome, Refused

RUNNERS = ("pytest", "junit", "go", "cargo", "tap", "exit_code")


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
        from shiftgit.evidence.parsers import junit  # here: xml.etree is for a JUnit file only

        try:
            from_xml = junit.parse(junit_xml)
        except Refused:
            return Outcome("exit_code")
        if from_xml is not None:
            return from_xml
    if not output:  # nothing printed: no parser finds anything (tests/test_outcomes.py), none is loaded
        return Outcome("exit_code")
    lines = _ANSI.sub("", output).splitlines() if "\x1b" in output else output.splitlines()
    detected = detect_runner(argv)
    for runner in _parser_order(detected):
        outcome = _parser(runner)(lines, runner == detected)
        if outcome is not None:
            return outcome
    return Outcome("exit_code")


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def _parser_order(detected: str | None) -> list[str]:
    order = ["pytest", "cargo", "go", "tap"]
    return order if detected is None else [detected, *(r for r in order if r != detected)]


_PARSERS = {"pytest": "pytest", "go": "gotest", "cargo": "cargo", "tap": "tap"}  # runner -> module in parsers/


def _parser(runner: str) -> Callable[[list[str], bool], Outcome | None]:
    """A runner's parser, its module loaded when first tried (the runner named goes first: often the only one)."""
    import importlib

    parse: Callable[[list[str], bool], Outcome | None] = importlib.import_module(
        f"shiftgit.evidence.parsers.{_PARSERS[runner]}").parse
    return parse
