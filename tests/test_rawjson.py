"""shiftgit.rawjson reads and writes JSON as json does, without importing it: same values, same errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shiftgit import rawjson

TEXTS = ['{"a": [1, 2.5, -3e10, true, false, null, "x\\u00e9\\ud83d\\ude00", {"b": {}}]}', " [1] \n", '"s"', "1",
         "NaN", "[Infinity, -Infinity]", '{"a":1} x', "", " ", "[1,]", "\ufeff{}", '{"a":"\x01"}', "1e999", "-0",
         "123456789012345678901234567890", '{"a": 1, "a": 2}', "[" * 50 + "]" * 50, '"\\ud800"', "tru"]
BYTES = ['["é"]'.encode("utf-16"), b"\x00\x00\x00[", '{"a": 1}'.encode("utf-16-le"), '["é"]'.encode("utf-8-sig"),
         b'"\xed\xa0\x80"', b"\xff", b'{"a": "\xc3\xa9"}']


def outcome(call: Any, value: Any) -> tuple[str, ...]:
    try:
        return ("value", repr(call(value)))
    except Exception as exc:  # noqa: BLE001 - the same error is the point
        return ("error", type(exc).__name__, str(exc))


@pytest.mark.parametrize("data", TEXTS + [t.encode() for t in TEXTS] + BYTES)
def test_loads_gives_what_json_gives(data: str | bytes) -> None:
    assert outcome(rawjson.loads, data) == outcome(json.loads, data)


def test_scan_once_is_jsons() -> None:
    line = '{"a": [1, {"b": null}]} tail'
    assert rawjson.scan_once(line, 0) == json.JSONDecoder().scan_once(line, 0)  # type: ignore[attr-defined]
    with pytest.raises(StopIteration):
        rawjson.scan_once("  x", 0)


def test_compact_sorted_writes_what_json_writes() -> None:
    def dumps(value: Any) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    looped: list[Any] = []
    looped.append(looped)
    values: list[Any] = [{"b": 1, "a": [1.5, None, True, "é\u2028\n\"\\", {"z": {}, "y": []}]}, {3: 1, 2.5: 2, True: 3},
                         "text", 1.0, float("nan"), [float("inf")], {"k": 10**30}, [(1, 2)], {"a": object()},
                         {1: 1, "a": 2}, {(1,): 2}, looped]
    for value in values:
        assert outcome(rawjson.compact_sorted, value) == outcome(dumps, value)
    assert rawjson.encode_basestring("é\"\n\x7f") == json.encoder.encode_basestring("é\"\n\x7f")


def test_it_imports_neither_json_nor_re() -> None:
    """Against a baseline of the same interpreter without site: whatever Python itself loads does not count."""
    package = str(Path(rawjson.__file__).resolve().parents[1])
    code = ("import sys\nsys.path.append(sys.argv[1])\nbefore = set(sys.modules)\nfrom shiftgit import rawjson\n"
            "rawjson.loads(b'{\"a\": [1]}'); rawjson.compact_sorted({'a': 1})\n"
            "print(sorted({'json', 're'} & (set(sys.modules) - before)))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-S", "-c", code, package], capture_output=True, text=True, env=env)
    assert proc.stdout == "[]\n", proc.stderr[-2000:]


def test_invalid_json_before_json_is_imported_gets_jsons_error() -> None:
    """CPython 3.11's scanner raises its error class from json.decoder and fails otherwise (a SystemError) while
    json was never imported: `status` reading a hand-edited ledger reads it this way."""
    package = str(Path(rawjson.__file__).resolve().parents[1])
    code = ("import sys\nsys.path.append(sys.argv[1])\nfrom shiftgit import rawjson\n"
            "try:\n    rawjson.loads(b'{ not json')\nexcept ValueError as exc:\n    print(type(exc).__name__, exc)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-S", "-c", code, package], capture_output=True, text=True, env=env)
    assert proc.stdout == f"{outcome(json.loads, b'{ not json')[1]} {outcome(json.loads, b'{ not json')[2]}\n", \
        proc.stderr[-2000:]


def test_json_nested_too_deeply_is_a_value_error_not_a_crash() -> None:
    """A hostile file nested thousands deep: json's RecursionError becomes the ValueError every reader handles."""
    for text in ("[" * 100_000 + "]" * 100_000, '{"a":' * 50_000 + "1" + "}" * 50_000):
        with pytest.raises(ValueError, match="nested too deeply"):
            rawjson.loads(text)
