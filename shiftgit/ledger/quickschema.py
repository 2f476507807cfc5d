"""A fast yes for documents that are plainly valid against shiftgit's own schemas, without jsonschema.

jsonschema's import alone costs more than three Python start-ups here, and its per-item `$ref`
costs most of a checkpoint of 1,000 files. This module evaluates the few keywords shiftgit's
schemas use (type, required, properties, additionalProperties, items, minItems, enum, const,
minimum, minLength, pattern, oneOf, if/then, local `$ref`) the way Draft 2020-12 defines them, and
answers only "valid for certain". Anything it is not sure of - a keyword it does not know, a
number jsonschema might read differently (1.0 as an integer, True beside 1 in an enum), an
invalid document - is "not vouched for", and the caller runs jsonschema as before: every refusal
and every error message still come from jsonschema, so validation is exactly as strict.

Each schema is compiled once per process into nested closures (a checkpoint of 1,000 files judges the
same file schema 1,000 times): the keywords in the schema's own order, each judged as `_KEYWORDS` says.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from functools import cache
from typing import Any

# Keywords that only annotate: they never make a document invalid.
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples"})
_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,), "null": (type(None),),
                                       "boolean": (bool,)}


Check = Callable[[Any], bool]  # a schema, compiled: value -> valid (raises Unsure)


class Unsure(Exception):
    """The document may be valid or not: jsonschema decides."""


def is_valid(document: Any, name: str) -> bool:
    """True only when `document` is certainly valid against schema NAME (False: ask jsonschema)."""
    try:
        return _compiled(name)(document)
    except (Unsure, RecursionError):
        return False


def schema_text(name: str = "ledger.schema.json") -> str:
    """The source checkout's `schema/` when run from one, else the copy shipped in the wheel."""
    source = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))), "schema", name)
    if os.path.isfile(source):
        with open(source, encoding="utf-8") as handle:
            return handle.read()
    from importlib.resources import files

    return files("shiftgit.schemas").joinpath(name).read_text(encoding="utf-8")


@cache
def _schema(name: str) -> dict[str, Any]:
    return json.loads(schema_text(name))  # type: ignore[no-any-return]


@cache
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)  # jsonschema's own reading: re.search with Python's re


@cache
def _compiled(name: str) -> Check:
    root = _schema(name)
    return _Compiler(root).node(root)


def _valid(value: Any, schema: Any, root: dict[str, Any]) -> bool:
    """`value` against `schema` (a part of `root`), compiled afresh: what `is_valid` does with its cached one."""
    return _Compiler(root).node(schema)(value)


class _Compiler:
    """Closures for the parts of one root schema, each part compiled once (a `$ref` is followed when first used)."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.done: dict[int, Check] = {}

    def node(self, schema: Any) -> Check:
        known = self.done.get(id(schema))
        if known is None:
            known = self.done[id(schema)] = self._node(schema)
        return known

    def _node(self, schema: Any) -> Check:
        if schema is True:
            return _yes
        if schema is False:
            return _no
        if not isinstance(schema, dict):
            return _unsure
        checks: list[Check] = []
        for key, rule in schema.items():
            if key in _ANNOTATIONS or key == "then":  # `then` is judged with its `if`
                if key == "$id" and schema is not self.root:
                    checks.append(_unsure)  # a nested base URI would change what `$ref` means
                    break
                continue
            make = _KEYWORDS.get(key)
            if make is None:
                checks.append(_unsure)
                break
            checks.append(make(self, rule, schema))
        if len(checks) == 1:
            return checks[0]

        def valid(value: Any) -> bool:
            for check in checks:  # the first that fails ends it
                if not check(value):
                    return False
            return True
        return valid

    def ref(self, target: Any) -> Check:
        """The check of TARGET, compiled on first use (a schema may refer to itself)."""
        found: list[Check] = []

        def check(value: Any) -> bool:
            if not found:
                found.append(self.node(target))
            return found[0](value)
        return check


def _yes(value: Any) -> bool:
    return True


def _no(value: Any) -> bool:
    return False


def _unsure(value: Any) -> bool:
    raise Unsure


def _type(c: _Compiler, rule: Any, schema: dict[str, Any]) -> Check:
    names = [rule] if isinstance(rule, str) else rule
    if names and all(name in ("string", "object", "array", "null") for name in names):  # bool is none of these
        kinds = tuple(kind for name in names for kind in _TYPES[name])
        return lambda value: isinstance(value, kinds)
    return lambda value: any(_is_type(value, name) for name in names)


def _is_type(value: Any, name: str) -> bool:
    if name in _TYPES:
        return isinstance(value, _TYPES[name]) and (name == "boolean" or not isinstance(value, bool))
    if name == "integer":
        if isinstance(value, float):
            raise Unsure  # 1.0 is an integer to jsonschema
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    raise Unsure


def _required(c: _Compiler, rule: list[str], schema: dict[str, Any]) -> Check:
    return lambda value: not isinstance(value, dict) or all(key in value for key in rule)


def _properties(c: _Compiler, rule: dict[str, Any], schema: dict[str, Any]) -> Check:
    subs = [(key, c.node(sub)) for key, sub in rule.items()]

    def valid(value: Any) -> bool:
        if isinstance(value, dict):
            for key, check in subs:
                if key in value and not check(value[key]):
                    return False
        return True
    return valid


def _additional(c: _Compiler, rule: Any, schema: dict[str, Any]) -> Check:
    if "patternProperties" in schema:
        return _unsure
    known, sub = schema.get("properties", {}), c.node(rule)
    return lambda value: not isinstance(value, dict) or all(sub(item) for key, item in value.items()
                                                            if key not in known)


def _items(c: _Compiler, rule: Any, schema: dict[str, Any]) -> Check:
    if "prefixItems" in schema:
        return _unsure
    sub = c.node(rule)

    def valid(value: Any) -> bool:
        if isinstance(value, list):
            for item in value:
                if not sub(item):
                    return False
        return True
    return valid


def _min_items(c: _Compiler, rule: int, schema: dict[str, Any]) -> Check:
    return lambda value: not isinstance(value, list) or len(value) >= rule


def _same(value: Any, expected: Any) -> bool:
    if type(expected) not in (str, int, bool, type(None)):
        raise Unsure  # containers and floats: jsonschema's equality has its own rules
    if type(value) is not type(expected):
        if isinstance(value, int | float) and isinstance(expected, int | float):
            raise Unsure  # 1.0 == 1 (not True == 1) to jsonschema
        return False
    return bool(value == expected)


def _enum(c: _Compiler, rule: list[Any], schema: dict[str, Any]) -> Check:
    if all(type(expected) is str for expected in rule):  # a string is judged by value, anything else is no match
        texts = frozenset(rule)
        return lambda value: value in texts if type(value) is str else any(_same(value, e) for e in rule)
    return lambda value: any(_same(value, expected) for expected in rule)


def _const(c: _Compiler, rule: Any, schema: dict[str, Any]) -> Check:
    return lambda value: _same(value, rule)


def _minimum(c: _Compiler, rule: int | float, schema: dict[str, Any]) -> Check:
    return lambda value: not isinstance(value, int | float) or isinstance(value, bool) or value >= rule


def _min_length(c: _Compiler, rule: int, schema: dict[str, Any]) -> Check:
    return lambda value: not isinstance(value, str) or len(value) >= rule


def _match(c: _Compiler, rule: str, schema: dict[str, Any]) -> Check:
    search = _pattern(rule).search
    return lambda value: not isinstance(value, str) or search(value) is not None


def _one_of(c: _Compiler, rule: list[Any], schema: dict[str, Any]) -> Check:
    subs = [c.node(sub) for sub in rule]
    return lambda value: sum(1 for sub in subs if sub(value)) == 1  # every branch judged: none may be unsure


def _if(c: _Compiler, rule: Any, schema: dict[str, Any]) -> Check:
    condition, then = c.node(rule), c.node(schema.get("then", True))
    return lambda value: not condition(value) or then(value)


def _ref(c: _Compiler, rule: str, schema: dict[str, Any]) -> Check:
    prefix = "#/$defs/"
    if not rule.startswith(prefix) or rule[len(prefix):] not in c.root.get("$defs", {}):
        return _unsure
    return c.ref(c.root["$defs"][rule[len(prefix):]])


_KEYWORDS: dict[str, Callable[[_Compiler, Any, dict[str, Any]], Check]] = {
    "type": _type, "required": _required, "properties": _properties, "additionalProperties": _additional,
    "items": _items, "minItems": _min_items, "enum": _enum, "const": _const, "minimum": _minimum,
    "minLength": _min_length, "pattern": _match, "oneOf": _one_of, "if": _if, "$ref": _ref}
