"""A big ledger's effect records as the model holds them, kept with their text: a read parses the JSON of the rest.

Every `effect run` is a new process, and at 1,000 effects each one parsed a 1 MiB ledger (its JSON, a record per
effect, then each record's text for the next write): ~9 ms of its ~25 ms over the same command at 10 effects.
When a process has written a ledger of at least MIN bytes, it leaves (at exit: its last write counts) the canonical
text of its `effects` array's items, their lengths and the records' field values in `<git-dir>/shift/snapshots/<run>`
(marshal: plain values, no code; a cache, never synced to disk), with FINGERPRINT (the Effect fields and their
types, this Python, this shiftgit). A later read of bytes shiftgit validated (`validated.is_known`) whose effects
begin with exactly that text — the same ledger, or one a later write (a checkpoint, another version's `effect run`,
an agent hook) changed after those effects — takes their records from it and parses the JSON of the rest: the same
records a full read makes of the same text. Anything else (no file, other text, another version, a torn or foreign
file) reads as before: the snapshot never decides what is valid.
"""

from __future__ import annotations

import os
import sys

from shiftgit import rawjson
from shiftgit.digests import BIG

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from shiftgit.ledger.incremental import Written

MIN = BIG  # 256 KiB: below, reading the JSON costs less than the snapshot's own write and read (store.py asks BIG)
FIELD = "effects"
HEAD = f'\n  "{FIELD}": [\n    '  # canonical: a top-level key's line (a string holds no raw line break), items 4 in
SEP, TAIL = ",\n    ", "\n  ]"
FORMAT = 1
_PENDING: dict[tuple[str, str], Written] = {}
_READ: dict[tuple[str, str], tuple[object, ...]] = {}  # the records this process took from a snapshot
_REGISTERED: list[bool] = []  # `_save_all` is an exit handler of this process


def fingerprint() -> tuple[Any, ...]:
    from shiftgit import __version__
    from shiftgit.ledger.canonical import SCHEMA_VERSION
    from shiftgit.ledger.model import Effect
    from shiftgit.ledger.record import fields_of

    return (FORMAT, __version__, SCHEMA_VERSION, tuple(sys.version_info[:2]),
            tuple((f.name, f.type, f.scope) for f in fields_of(Effect)), _code())


def _code() -> tuple[tuple[int, int], ...]:
    """The code that makes records from text, as its files stand (size, mtime): two builds under one version string
    (a checkout being edited, branches sharing a clone) never take each other's records."""
    from shiftgit.ledger import model, record, roundtrip

    try:
        return tuple((found.st_size, found.st_mtime_ns) for found in map(os.stat, (
            str(model.__file__), str(record.__file__), str(roundtrip.__file__), __file__)))
    except OSError:
        return ()


def _path(git_dir: str, run: str) -> str:
    return os.path.join(git_dir, "shift", "snapshots", run)


def keep(git_dir: Any, run: str, written: Written) -> None:
    """Remember the last ledger this process wrote for RUN: at exit, its snapshot is left (`save`), unless the one
    this process read still holds all of its effects but the last few (`behind`): then it stays as it is."""
    import operator

    key = (str(git_dir), run)
    part = (written.parts or {}).get(FIELD)
    if len(written.data) < MIN or written.ledger is None or written.written is False or part is None or not part.items:
        _PENDING.pop(key, None)
        return
    read = _READ.get(key)
    if read is not None and len(part.items) - len(read) < behind(len(part.items)) and \
            all(map(operator.is_, map(operator.attrgetter("record"), part.items[:len(read)]), read)):
        _PENDING.pop(key, None)  # it still begins this ledger's text: the next read parses the few after it
        return
    if not _REGISTERED:
        import atexit

        atexit.register(_save_all)
        _REGISTERED.append(True)
    _PENDING[key] = written


def behind(count: int) -> int:
    """How many effects after a snapshot's a read may parse as JSON before a write leaves a new one: its save costs
    about what reading ~40 effects as JSON does (a 1,000-effect ledger: ~2 ms; every `effect run` adds one)."""
    return max(16, count // 16)


def _save_all() -> None:
    while _PENDING:
        (git_dir, run), written = _PENDING.popitem()
        try:
            save(git_dir, run, written)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):  # a cache: the next read parses the JSON
            pass


def save(git_dir: str, run: str, written: Written) -> None:
    import marshal

    from shiftgit.ledger.model import Effect

    part = (written.parts or {}).get(FIELD)
    if written.ledger is None or part is None or not part.items:
        return
    text = written.data.decode("utf-8")
    start = text.find(HEAD) + len(HEAD)
    lengths = list(part.head[1]) if part.head is not None else []
    lengths += [len(item.text or item.canonical()) for item in part.items[len(lengths):]]
    end = start + sum(lengths) + len(SEP) * (len(lengths) - 1)
    first = part.head[0] if part.head is not None else part.items[0].text
    if start < len(HEAD) or text[end:end + len(TAIL)] != TAIL or not text.startswith(first, start):
        return
    names = tuple(Effect.__record_fields__)  # type: ignore[attr-defined]
    values = []
    for item in part.items:  # a record made here (not read) as a read of its JSON makes it: tuples, not lists
        record = item.record if item.read and type(item.record) is Effect else Effect.from_dict(item.json)
        values.append(tuple(map(record.__dict__.__getitem__, names)))
    blob = marshal.dumps((fingerprint(), text[start:end], lengths, values))
    path = _path(git_dir, run)
    if not os.path.isdir(os.path.dirname(os.path.dirname(path))):  # <git-dir>/shift/ gone (a removed clone)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as handle:
        handle.write(blob)
    os.replace(tmp, path)


def _texts(text: str, start: int, count: int) -> list[str]:
    """The canonical texts of the COUNT items from START to the end of the array ([] when they are not COUNT): a line
    at depth 1 starts two spaces in, an item four, the lines inside one six or more (no string holds a raw break)."""
    end = text.find(TAIL, start)
    pieces = text[start:end].split(SEP + "{") if end >= 0 else []
    return [pieces[0], *("{" + piece for piece in pieces[1:])] if len(pieces) == count else []


def load(git_dir: Any, run: str, data: bytes) -> Written | None:
    """The read of DATA (bytes shiftgit validated: the caller made sure) with the records of its first effects from
    RUN's snapshot, when its text begins with theirs (a later write added or changed effects after them, or none);
    None when it has none of them."""
    import marshal
    from collections import deque
    from itertools import repeat, zip_longest

    from shiftgit.ledger.canonical import SCHEMA_VERSION
    from shiftgit.ledger.incremental import Item, Part, Written
    from shiftgit.ledger.model import Effect, Ledger
    from shiftgit.ledger.record import replace
    from shiftgit.ledger.roundtrip import round_trips

    text = data.decode("utf-8")
    start = text.find(HEAD) + len(HEAD)
    try:
        with open(_path(str(git_dir), run), "rb") as handle:
            kept, known, lengths, values = marshal.loads(handle.read())
    except (OSError, ValueError, TypeError, EOFError):
        return None
    end = start + len(known)
    if start < len(HEAD) or kept != fingerprint() or len(lengths) != len(values) or not lengths or \
            sum(lengths) + len(SEP) * (len(lengths) - 1) != len(known) or not text.startswith(known, start):
        return None
    if text.startswith(SEP, end):  # more effects after these: parsed as JSON
        rest = rawjson.loads(text[:start] + text[end + len(SEP):])
    elif text.startswith(TAIL, end):
        rest = rawjson.loads(text[:start - len("[\n    ")] + "[]" + text[end + len(TAIL):])
    else:
        return None
    if not isinstance(rest, dict) or rest.get("schema_version") != SCHEMA_VERSION or type(rest.get(FIELD)) is not list:
        return None
    names = tuple(Effect.__record_fields__)  # type: ignore[attr-defined]
    if set(map(len, values)) - {len(names)}:
        return None
    # What `from_dict` made of each text when it was saved (C's loops: a Python loop per effect cost ~2 us each).
    records: list[Any] = list(map(object.__new__, repeat(Effect, len(values))))
    deque(map(dict.update, map(vars, records), map(zip, repeat(names), values)), maxlen=0)
    items = list(map(Item, records, repeat(None), repeat(True)))  # their text: the part's head, `known`
    after = Ledger.from_dict(rest)  # the effects after the snapshot's: as any read makes them
    texts = _texts(text, end + len(SEP), len(after.effects)) if after.effects else []
    for record, json, piece in zip_longest(after.effects, rest[FIELD], texts):
        item = Item(record, json if round_trips(Effect, json) else record.to_dict(), True)
        item.text = piece if piece and item.json is json else ""  # else made from its JSON when written
        items.append(item)
        records.append(record)
    ledger = replace(after, effects=tuple(records))
    _READ[(str(git_dir), run)] = tuple(records[:len(lengths)])
    return Written(data, ledger, document=rest, written=None, arrays={FIELD: Part(None, None, items, (known, lengths))})
