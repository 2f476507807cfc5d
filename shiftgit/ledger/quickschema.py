"""A fast yes for documents that are plainly valid against shiftgit's own schemas, without jsonschema.

jsonschema's import alone costs more than three Python start-ups here, and its per-item `$ref`
costs most of a checkpoint of 1,000 files. This module evaluates the few keywords shiftgit's
schemas use (type, required, properties, additionalProperties, items, minItems, enum, const,
minimum, minLength, pattern, oneOf, if/then, local `$ref`) the way Draft 2020-12 defines them, and
answers only "valid for certain". Anything it is not sure of - a keyword it does not know, a
number jsonschema might read differently (1.0 as an integer, True beside 1 in an enum), an
invalid document - is "not vouched for", and the caller runs jsonschema as before: every refusal
and every error message still come from jsonschema, so validation is exactly as strict.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from typing import Any

# Keywords that only annotate: they never make a document invalid.
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples"})
_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,), "null": (type(None),),
                                       "boolean": (bool,)}


class Unsure(Exception):
    """The document may be valid or not: jsonschema decides."""


def is_valid(document: Any, name: str) -> bool:
    """True only when `document` is certainly valid against schema NAME (False: ask jsonschema)."""
    root = _schema(name)
    try:
        return _valid(document, root, root)
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


def _valid(value: Any, schema: Any, root: dict[str, Any]) -> bool:
    if schema is True:
        return True
    if schema is False:
        return False
    if not isinstance(schema, dict):
        raise Unsure
    for key, rule in schema.items():
        if key in _ANNOTATIONS or key == "then":  # `then` is judged with its `if`
            if key == "$id" and schema is not root:
                raise Unsure  # a nested base URI would change what `$ref` means
            continue
        check = _KEYWORDS.get(key)
        if check is None:
            raise Unsure
        if not check(value, rule, schema, root):
            return False
    return True


def _type(value: Any, rule: Any, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    names = [rule] if isinstance(rule, str) else rule
    return any(_is_type(value, name) for name in names)


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


def _required(value: Any, rule: list[str], schema: dict[str, Any], root: dict[str, Any]) -> bool:
    return not isinstance(value, dict) or all(key in value for key in rule)


def _properties(value: Any, rule: dict[str, Any], schema: dict[str, Any], root: dict[str, Any]) -> bool:
    if not isinstance(value, dict):
        return True
    return all(_valid(value[key], sub, root) for key, sub in rule.items() if key in value)


def _additional(value: Any, rule: Any, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    if not isinstance(value, dict):
        return True
    if "patternProperties" in schema:
        raise Unsure
    known = schema.get("properties", {})
    return all(_valid(item, rule, root) for key, item in value.items() if key not in known)


def _items(value: Any, rule: Any, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    if "prefixItems" in schema:
        raise Unsure
    return not isinstance(value, list) or all(_valid(item, rule, root) for item in value)


def _min_items(value: Any, rule: int, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    return not isinstance(value, list) or len(value) >= rule


def _same(value: Any, expected: Any) -> bool:
    if type(expected) not in (str, int, bool, type(None)):
        raise Unsure  # containers and floats: jsonschema's equality has its own rules
    if type(value) is not type(expected):
        if isinstance(value, int | float) and isinstance(expected, int | float):
            raise Unsure  # 1.0 == 1 (not True == 1) to jsonschema
        return False
    return bool(value == expected)


def _enum(value: Any, rule: list[Any], schema: dict[str, Any], root: dict[str, Any]) -> bool:
    return any(_same(value, expected) for expected in rule)


def _const(value: Any, rule: Any, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    return _same(value, rule)


def _minimum(value: Any, rule: int | float, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    return not isinstance(value, int | float) or isinstance(value, bool) or value >= rule


def _min_length(value: Any, rule: int, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    return not isinstance(value, str) or len(value) >= rule


def _match(value: Any, rule: str, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    return not isinstance(value, str) or _pattern(rule).search(value) is not None


def _one_of(value: Any, rule: list[Any], schema: dict[str, Any], root: dict[str, Any]) -> bool:
    return sum(1 for sub in rule if _valid(value, sub, root)) == 1  # every branch judged: none may be unsure


def _if(value: Any, rule: Any, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    return not _valid(value, rule, root) or _valid(value, schema.get("then", True), root)


def _ref(value: Any, rule: str, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    prefix = "#/$defs/"
    if not rule.startswith(prefix) or rule[len(prefix):] not in root.get("$defs", {}):
        raise Unsure
    return _valid(value, root["$defs"][rule[len(prefix):]], root)


_KEYWORDS = {"type": _type, "required": _required, "properties": _properties, "additionalProperties": _additional,
             "items": _items, "minItems": _min_items, "enum": _enum, "const": _const, "minimum": _minimum,
             "minLength": _min_length, "pattern": _match, "oneOf": _one_of, "if": _if, "$ref": _ref}
