"""A ledger write at the cost of what changed, not of the whole ledger.

`Store.write` redacts secrets from every string, schema-checks the document and serializes it
canonically; at 1,000 effects that was most of an `effect run` (three writes, each linear). The model is
immutable and a change keeps the records it does not touch as the same objects, so against a base —
a ledger this process wrote, or read from bytes shiftgit itself wrote (`validated.is_written`) — a
record (or a whole top-level value) that *is* the base's needs nothing again: its JSON was redacted and
schema-checked, and its canonical text is known. What differs is built, redacted and checked:

- the schema check covers the whole top level and, of each top-level array whose schema says nothing
  but `items` (so every item is judged alone), the items that are new; an array whose schema constrains
  the array itself, or a root schema with a keyword that couples properties, is checked whole;
- the canonical bytes are spliced from per-item texts, byte for byte what `canonical_bytes` gives
  (the tests compare them).

Bytes shiftgit did not write itself are never a base: the first write after them is the full one.
Reads are not affected (store.py): bytes nobody vouched for are checked whole, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from itertools import chain, repeat
from operator import attrgetter, is_

from shiftgit import rawjson

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any

    from shiftgit.ledger.model import Ledger

# Root keywords under which a property's value is judged by its own subschema alone.
_ROOT_KEYWORDS = frozenset({"$schema", "$id", "$defs", "title", "description", "type", "required", "properties",
                            "additionalProperties", "$comment"})
_ITEMS_ONLY = frozenset({"type", "items", "description", "$comment"})
_SEP = ",\n    "  # between two items of a top-level array


class Item:
    """One record of a top-level array: the model object, its JSON (redacted; None: its `to_dict`, made when asked),
    its canonical text at depth 2; `read`: the record is what `from_dict` makes of that JSON (snapshot.py keeps it)."""

    __slots__ = ("_json", "read", "record", "text")

    def __init__(self, record: object, data: Any, read: bool = False, text: str = "") -> None:
        self.record, self._json, self.text, self.read = record, data, text, read

    @property
    def json(self) -> Any:
        if self._json is None:  # a record taken from a snapshot: bytes shiftgit wrote, so its JSON is its to_dict
            self._json = self.record.to_dict()  # type: ignore[attr-defined]
        return self._json

    def canonical(self) -> str:
        if not self.text:
            self.text = _text(self.json, 2)
        return self.text


class Part:
    """One top-level key: the model's value, its JSON (redacted), its items when it is an array of records (then its
    JSON is made from theirs when asked: a write that reuses them needs their texts alone). `head`: the joined text
    of its first items and each one's length, when they were read as one (a snapshot's): written whole, not split."""

    __slots__ = ("_json", "head", "items", "text", "value")

    def __init__(self, value: object, data: Any, items: list[Item] | None = None,
                 head: tuple[str, list[int]] | None = None) -> None:
        self.value, self._json, self.items, self.text, self.head = value, data, items, "", head

    def spread(self) -> None:
        """The head's items get their own texts (a change reached into them)."""
        if self.head is not None and self.items is not None:
            text, at = self.head[0], 0
            for item, length in zip(self.items, self.head[1], strict=False):
                item.text, at = text[at:at + length], at + length + len(_SEP)
            self.head = None

    @property
    def json(self) -> Any:
        if self._json is None and self.items is not None:
            self._json = [item.json for item in self.items]
        return self._json

    def add_to(self, out: list[str]) -> None:
        """Its canonical text at depth 1 onto OUT, an array of records item by item (one join makes the ledger)."""
        if self.items:
            out.append("[\n    ")
            rest = self.items
            if self.head is not None:
                out += [self.head[0], _SEP]
                rest = rest[len(self.head[1]):]
            out.extend(chain.from_iterable(zip([item.text or item.canonical() for item in rest], repeat(_SEP))))
            out[-1] = "\n  ]"
        else:
            if not self.text:
                self.text = _text(self.json, 1)
            out.append(self.text)


class Written:
    """A ledger's bytes as this process last read or wrote them, the model (None when redaction changed it)
    and its parts; `written`: whether shiftgit wrote those bytes (None: not asked yet). Only written
    bytes are a base for the next write. `arrays`: top-level record arrays already made parts (a snapshot's)."""

    __slots__ = ("_document", "arrays", "data", "ledger", "parts", "written")

    def __init__(self, data: bytes, ledger: Ledger | None, parts: dict[str, Part] | None = None,
                 document: dict[str, Any] | None = None, written: bool | None = True,
                 arrays: dict[str, Part] | None = None) -> None:
        self.data, self.ledger, self.parts, self._document, self.written = data, ledger, parts, document, written
        self.arrays = arrays or {}

    def base(self) -> dict[str, Part]:
        """The parts, derived once from a read document: only those whose model value gives back the same JSON."""
        if self.parts is None:
            from shiftgit.ledger.roundtrip import round_trips

            assert self.ledger is not None and self._document is not None
            parts: dict[str, Part] = {}
            text = self.data.decode("utf-8")
            keys = sorted(self._document)  # the text's order (canonical): each array's end is where the next key starts
            for name, value in _values(self.ledger):
                if name in self.arrays:
                    parts[name] = self.arrays[name]
                    continue
                if name not in self._document:
                    continue
                old = self._document[name]
                if isinstance(value, tuple) and _records(value) and isinstance(old, list) and len(old) == len(value):
                    # An item whose model gives back its JSON keeps it (a flat record with every field: known
                    # without building it, round_trips), else the model's JSON, kept only when it is the same.
                    items = [Item(r, data if type(data) is dict and round_trips(type(r), data) else r.to_dict(), True)
                             for r, data in zip(value, old, strict=True)]
                    pieces = _slices(text, name, len(items), _next(keys, name)) if items else []
                    for item, piece in zip(items, pieces, strict=False):
                        item.text = piece  # the bytes are canonical (shiftgit wrote them): its text as it is
                    items = [i for i, data in zip(items, old, strict=True) if i.json is data or i.json == data]
                    parts[name] = Part(None, None, items)  # value None: never reused whole, only by item
                # Other top-level values are small and built again: what `on_write` (the lease) put in
                # these bytes was not redacted, and a full write would redact it now.
            self.parts, self._document, self.arrays = parts, None, {}
        return self.parts


def render(ledger: Ledger, base: Written | None, *, check: bool, schema: str = "ledger.schema.json",
           on_write: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> tuple[Written, list[str]]:
    """`ledger` redacted, changed by `on_write` (the lease renewal, after redaction), checked (when `check`)
    and serialized, reusing what is `base`'s: (written, problems)."""
    from shiftgit.ledger.record import _dump
    from shiftgit.ledger.secrets import redact_obj

    old_parts = base.base() if base is not None else {}
    arrays = _item_arrays(schema)
    parts: dict[str, Part] = {}
    fresh: dict[str, list[Any]] = {}  # the items the schema has not seen
    differs = False
    for name, value in _values(ledger):
        old = old_parts.get(name)
        if old is not None and old.value is value and old.value is not None:
            parts[name] = old
        elif name in arrays and _records(value):
            olds = (old.items or []) if old is not None else []
            same = _same(value, olds)  # type: ignore[arg-type]
            if old is not None and old.head is not None and same < len(old.head[1]):
                old.spread()
            items = olds[:same]  # the records the change left in front: an effect added or ended is the last
            index = {id(item.record): item for item in olds[same:]}
            for record in value[same:]:  # type: ignore[index]
                item = index.get(id(record))
                if item is None or item.record is not record:
                    raw = record.to_dict()
                    item = Item(record, redact_obj(raw))
                    differs = differs or item.json != raw
                    fresh.setdefault(name, []).append(item.json)
                items.append(item)
            parts[name] = Part(value, None, items, old.head if old is not None else None)
        else:
            raw = _dump(value)
            parts[name] = Part(value, redact_obj({name: raw})[name])  # type: ignore[index]  # the key's own rule
            differs = differs or parts[name].json != raw
    written = ledger
    if on_write is not None:  # what it sets is never reused (the next write redacts it, as a full write did)
        changed = on_write(_flat(parts))  # the arrays of records stay as they are (their JSON is not even made)
        for name in [n for n, part in parts.items() if n not in changed and part.items is None]:
            del parts[name]
            differs = True
        updates = {}
        for name, value in changed.items():
            if name not in parts or (parts[name].items is None and value is not parts[name].json):
                updates[name] = value
                parts[name] = Part(None, value)
        written = _patched(ledger, updates) if updates else ledger
    problems: list[str] = []
    if check:
        from shiftgit.ledger.schema import schema_errors

        if base is not None:
            problems = schema_errors({**_flat(parts), **{n: fresh.get(n, []) for n in arrays if n in parts}}, schema)
        if problems or base is None:  # every problem, with the real paths
            problems = schema_errors({name: part.json for name, part in parts.items()}, schema)
    out = Written(canonical(parts), None if differs else written, parts)
    # A command a person wrote into the ledger giving a secret (commandsecrets.py): bytes shiftgit does not vouch
    # for (validated.WRITTEN), so the commit gate judges them and the next write is a whole one, judging all again
    out.written = not _command_secret(parts, base)
    return out, problems


def _command_secret(parts: dict[str, Part], base: Written | None) -> bool:
    """Whether a command the written document records gives a secret, judging only what is not BASE's: a spliced
    write's base was judged when it was written, so a write costs the records it adds, not the ledger's size."""
    from shiftgit.ledger.commandsecrets import command_secret

    old = {id(item) for part in (base.parts or {}).values() for item in part.items or ()} if base is not None else set()
    return command_secret({name: [item.json for item in part.items if id(item) not in old] if part.items else part.json
                           for name, part in parts.items()}) is not None


def _same(records: tuple[object, ...], items: list[Item]) -> int:
    """How many of RECORDS, from the first, are the records of ITEMS, in order (C's loops: 1,000 effects)."""
    count = min(len(records), len(items))
    flags = list(map(is_, records[:count], map(_RECORD, items[:count])))
    return flags.index(False) if False in flags else count


_RECORD = attrgetter("record")


def _flat(parts: dict[str, Part]) -> dict[str, Any]:
    """The document but its arrays of records (what a write changes beside them, and checks whole)."""
    return {name: part.json for name, part in parts.items() if part.items is None}


def _patched(ledger: Ledger, updates: dict[str, Any]) -> Ledger:
    """The model of `ledger` with top-level values set as a read of the written bytes would build them."""
    from shiftgit.ledger.record import _plan, replace

    fields = dict(_plan(type(ledger))[0])
    values: dict[str, Any] = {}
    extra = dict(ledger.extra)
    for name, value in updates.items():
        if name in fields:
            convert = fields[name]
            values[name] = value if value is None or convert is None else convert(value)
        else:
            extra[name] = value
    return replace(ledger, **values, extra=extra)


def canonical(parts: dict[str, Part]) -> bytes:
    """`canonical_bytes` of the parts' document, from their texts (sorted keys, two-space indent)."""
    if not parts:
        return b"{}\n"
    out = ["{\n"]  # pieces, joined once: a 1 MiB ledger is not copied from one temporary string to the next
    for name in sorted(parts):
        out.append(f"  {rawjson.encode_basestring(name)}: ")
        parts[name].add_to(out)
        out.append(",\n")
    out[-1] = "\n}\n"
    return "".join(out).encode("utf-8")


def _slices(text: str, name: str, count: int, after: str | None) -> list[str]:
    """The canonical texts of the COUNT items of top-level array NAME in canonical `text` ([] if not found);
    AFTER: the top-level key that follows NAME in `text` (None: NAME is the last).

    At depth 1 a line is indented two spaces, an item of a top-level array starts four spaces in, and
    the lines inside it six or more (a string holds no raw line break): those markers are unambiguous.
    The array's end is searched for from the end of `text` (what follows it is small next to 1,000 effects:
    a search forward read the whole array, slowly, for a needle of spaces and a line break).
    """
    head = f"\n  {rawjson.encode_basestring(name)}: [\n    "
    tail = "\n  ]\n}\n" if after is None else f"\n  ],\n  {rawjson.encode_basestring(after)}: "
    start = text.find(head)
    end = text.rfind(tail, start + len(head)) if start >= 0 else -1
    if end < 0:
        return []
    pieces = text[start + len(head):end].split(",\n    {")
    pieces = pieces[:1] + ["{" + piece for piece in pieces[1:]]
    return pieces if len(pieces) == count else []


def _next(keys: list[str], name: str) -> str | None:
    at = keys.index(name) + 1
    return keys[at] if at < len(keys) else None


def _text(value: Any, depth: int) -> str:
    from shiftgit.ledger.canonical import canonical_text

    return canonical_text(value, depth)


def _values(ledger: Ledger) -> list[tuple[str, object]]:
    """The top-level keys and values as `Ledger.to_dict` orders them: unknown keys, then the fields."""
    from shiftgit.ledger.record import fields_of

    values: dict[str, object] = dict(ledger.extra)
    for f in fields_of(ledger):
        if f.name != "extra":
            values[f.name] = getattr(ledger, f.name)
    return list(values.items())


def _records(value: object) -> bool:
    from shiftgit.ledger.record import Record

    return isinstance(value, tuple) and all(map(isinstance, value, repeat(Record)))  # C's loop: 1,000 effects


@cache
def _item_arrays(name: str) -> frozenset[str]:
    """Top-level properties whose schema is only an array of independently checked items."""
    from shiftgit.ledger.schema import schema_text

    root = rawjson.loads(schema_text(name))
    if not isinstance(root, dict) or set(root) - _ROOT_KEYWORDS or not isinstance(root.get("properties"), dict):
        return frozenset()
    return frozenset(key for key, sub in root["properties"].items()
                     if isinstance(sub, dict) and sub.get("type") == "array" and set(sub) <= _ITEMS_ONLY)
