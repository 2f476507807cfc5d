"""JUnit XML (any runner that writes it): counts and failing ids; a DOCTYPE is refused, never expanded."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping

from shiftgit.evidence.outcome import NotJUnit, Outcome, Refused, Tally

# ---------------------------------------------------------------- JUnit XML

def parse(text: str) -> Outcome | None:
    target = _JUnitTarget()
    parser = ET.XMLParser(target=target)
    try:
        parser.feed(text)
        parser.close()
    except (ET.ParseError, NotJUnit, ValueError, RecursionError):
        return None
    return target.tally.outcome("junit") if target.is_junit else None


class _JUnitTarget:
    """Streams the XML (no tree): one testcase at a time, its state from its direct children."""

    def __init__(self) -> None:
        self.tally = Tally()
        self.is_junit = False
        self.depth = 0
        self.suites: list[bool] = []  # per open <testsuite(s)>: is it named like pytest's?
        self.pytest_suites = 0
        self.case: dict[str, str] | None = None
        self.case_depth = 0
        self.state = "passed"

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise Refused(name)

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        name = tag.rsplit("}", 1)[-1]
        self.depth += 1
        if self.depth == 1 and name not in ("testsuites", "testsuite"):
            raise NotJUnit(name)
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
