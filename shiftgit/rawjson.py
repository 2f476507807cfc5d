"""JSON read, and its compact sorted form written, without importing the json package.

`import json` loads re, and with it enum, functools and collections: on a 2-core machine that is about as long as
Python's own start-up without site, most of what the commit gate imported. CPython's `_json` (the C code json
itself runs) does the work here; whatever it does not take (another encoding, a byte-order mark, invalid JSON, a
value it cannot write) goes to json itself, so every answer and every error is json's own.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

try:
    import _json
except ImportError:  # not CPython: json it is
    _json = None  # type: ignore[assignment]

_SPACE = " \t\n\r"  # what json skips around a value


class _Decoding:
    """What `_json.make_scanner` reads of a `json.JSONDecoder()` with its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}[name]


_SCAN: Callable[[str, int], tuple[Any, int]] | None = _json.make_scanner(_Decoding()) if _json else None  # type: ignore[arg-type]


def _json_scan(text: str, start: int) -> tuple[Any, int]:
    import json

    found: tuple[Any, int] = json.JSONDecoder().scan_once(text, start)  # type: ignore[attr-defined]
    return found


# What json.loads runs, without the calls around it: (the value starting at START, where it ends); StopIteration
# when no value starts there, ValueError (json's JSONDecodeError) when it is not JSON.
scan_once: Callable[[str, int], tuple[Any, int]] = _SCAN or _json_scan


def loads(data: bytes | str) -> Any:
    """`json.loads(data)`: the same value, or json's own error (a ValueError)."""
    if _SCAN is not None:
        try:
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            if not text.startswith("\ufeff"):  # json refuses a BOM in text, and reads bytes with one otherwise
                value, end = _SCAN(text, len(text) - len(text.lstrip(_SPACE)))
                if not text[end:].strip(_SPACE):
                    return value
        except (StopIteration, ValueError):  # UnicodeDecodeError too: bytes json may read in UTF-16/32
            pass
        except SystemError:  # CPython 3.11's scanner raises its error from json.decoder, found only once imported
            pass
        except RecursionError:
            raise ValueError(_DEEP) from None
    import json

    try:
        return json.loads(data)
    except RecursionError:  # a value nested thousands deep (a hostile file): not JSON shiftgit reads
        raise ValueError(_DEEP) from None


_DEEP = "JSON nested too deeply to read"


def _unknown(value: object) -> object:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def compact_sorted(value: Any) -> str:
    """`json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`, with json's encoder."""
    return _dumps(value, True, (",", ":"))


def dumps(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False)`, with json's encoder."""
    return _dumps(value, False, (", ", ": "))


def _dumps(value: Any, sort_keys: bool, separators: tuple[str, str]) -> str:
    if _json is not None:
        try:
            encode = _json.make_encoder({}, _unknown, _json.encode_basestring, None, separators[1], separators[0],
                                        sort_keys, False, True)
            return "".join(encode(value, 0))
        except (TypeError, ValueError, OverflowError):  # json says what is wrong (or how this Python's encoder is made)
            pass
    import json

    return json.dumps(value, sort_keys=sort_keys, separators=separators, ensure_ascii=False)


def _encode_basestring(text: str) -> str:
    import json

    return str(json.encoder.encode_basestring(text))


# `json.encoder.encode_basestring`: text as a JSON string, non-ASCII kept (`ensure_ascii=False`)
encode_basestring: Callable[[str], str] = _json.encode_basestring if _json is not None else _encode_basestring
