"""quickschema vouches only for what jsonschema accepts: every mutation of a real ledger is judged by both."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from conftest import Repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shiftgit.ledger import quickschema
from shiftgit.ledger.schema import schema_errors, schema_text

OID = "0123456789abcdef0123456789abcdef01234567"
ODD_VALUES = [None, "", "x", "A", OID, OID + "\n", OID.upper(), 0, 1, -1, 1.0, 2.5, -0.5, True, False, [], {},
              ["x"], [{}], {"path": "a"}, "completed", "active", "M", "crashed", "2026-01-01T00:00:00Z"]


def jsonschema_accepts(document: Any, name: str = "ledger.schema.json") -> bool:
    """The reference: jsonschema itself, not schema_errors (which asks quickschema first)."""
    validator = jsonschema.Draft202012Validator(json.loads(schema_text(name)))
    return not any(True for _ in validator.iter_errors(document))


@pytest.fixture(scope="module")
def rich_ledger(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A ledger holding most record kinds, written by the real commands."""
    from conftest import make_repo

    repo: Repo = make_repo(tmp_path_factory.mktemp("quick") / "work")
    repo.ok("init", "--hooks", "git")
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s", "--time-budget", "30", "--token-budget", "100",
            "--allow", "deploy", "--accept", "unit=true", "--constraint", "never edit tests/")
    repo.write("calc.py", "X = 1\n")
    repo.ok("check", "--name", "unit", "--", "true")
    repo.ok("effect", "run", "--key", "job-1", "--kind", "deploy", "--repeatable", "-q", "--", "true")
    repo.ok("checkpoint", "--step", "one", "--next", "two", "--done", "a", "--doing", "b", "--blocked", "c",
            "--decision", "d -- because", "--question", "q", "--note", "n", "--phase", "implement", "--milestone",
            "--turn", "3", "--tokens", "5", "--cost", "0.5")
    repo.ok("stop", "--reason", "user_paused", "--detail", "lunch")
    return repo.ledger("demo")  # type: ignore[no-any-return]


def paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every JSON path in VALUE (the root is the empty path)."""
    found = [here]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*here, index))
    return found


def mutate(document: dict[str, Any], path: tuple[Any, ...], how: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    if not path:
        return changed
    parent = changed
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "extra" and isinstance(parent[last], dict):
        parent[last]["unknown_key"] = value
    else:
        parent[last] = value
    return changed


def test_a_real_ledger_is_vouched_for_without_jsonschema(rich_ledger: dict[str, Any]) -> None:
    assert jsonschema_accepts(rich_ledger)
    assert quickschema.is_valid(rich_ledger, "ledger.schema.json")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_mutated_ledger_is_vouched_for_only_when_jsonschema_accepts_it(rich_ledger: dict[str, Any],
                                                                         data: st.DataObject) -> None:
    document = rich_ledger
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths(document)))
        how = data.draw(st.sampled_from(["set", "delete", "extra"]))
        document = mutate(document, path, how, data.draw(st.sampled_from(ODD_VALUES)))
    if quickschema.is_valid(document, "ledger.schema.json"):
        assert jsonschema_accepts(document)
    if not jsonschema_accepts(document):
        assert schema_errors(document)  # the errors still come from jsonschema


@pytest.mark.parametrize(("value", "why"), [
    (1.0, "jsonschema reads 1.0 as an integer"),
    (True, "a boolean is no integer, yet jsonschema compares True to 1 by its own rules"),
])
def test_what_jsonschema_might_read_otherwise_is_left_to_it(rich_ledger: dict[str, Any], value: Any,
                                                            why: str) -> None:
    document = mutate(rich_ledger, ("checkpoint", "seq"), "set", value)
    assert not quickschema.is_valid(document, "ledger.schema.json"), why
    assert (schema_errors(document) == []) == jsonschema_accepts(document)


def test_an_unknown_keyword_is_never_guessed() -> None:
    root = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 2}}}
    with pytest.raises(quickschema.Unsure):
        quickschema._valid({"a": "long"}, root, root)


@pytest.mark.parametrize(("name", "document"), [
    ("config.schema.json", {"schema_version": 1, "require_fresh_checks": False, "trailers": True}),
    ("config.schema.json", {"schema_version": 1, "trailers": "yes"}),
    ("config.schema.json", {"schema_version": -1}),
    ("template.schema.json", {"schema_version": 1, "goal": "g", "budgets": {"tokens": 5}}),
    ("template.schema.json", {"schema_version": 1, "unknown": 1}),
    ("memory.schema.json", {"schema_version": 1, "entries": []}),
])
def test_the_other_schemas_agree_with_jsonschema(name: str, document: dict[str, Any]) -> None:
    if quickschema.is_valid(document, name):
        assert jsonschema_accepts(document, name)
    assert (schema_errors(document, name) == []) == jsonschema_accepts(document, name)
