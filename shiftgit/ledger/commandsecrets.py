"""Secrets in the commands a ledger records, wherever the ledger came from: a person's hand, another clone, a remote.

The commands that record a command line refuse one holding a secret (`argvsecrets.argv_secret`), but a ledger
shiftgit did not write itself never went through them: a hand-edited one, one merged or published by another clone.
Its commands are read here at every place the schema keeps one (checks, acceptance checks, effects with their
probe and compensation, the recovery plan's `inspect` and `escalate_when`, and the old and new values of an
amendment of those) and judged by the same rule; the commit gate, `sync`'s push and the absorbing of another clone's
records refuse what is found, as they refuse any other secret.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import Any

__all__ = ["command_secret", "effect_secret", "may_hold_commands", "recorded_commands"]

_SPLIT_FIELDS = ("inspect", "escalate_when")  # contract fields: command lines as strings, split like a shell
_EFFECT_STRINGS = ("probe", "compensate")
_COMMAND_KEYS = (b'"argv"', b'"probe"', b'"compensate"', b'"inspect"', b'"escalate_when"')


def command_secret(document: Any) -> str | None:
    """Where the first recorded command of a ledger document holds a secret, said without repeating it
    (`checkpoint.checks[0]: argv[4], the word after --password`); None when none does (or it is not a ledger)."""
    from shiftgit.ledger.argvsecrets import argv_secrets

    commands = list(recorded_commands(document))
    unique = list(dict.fromkeys(argv for _, argv in commands))  # one command recorded in many places: judged once
    judged = dict(zip(unique, argv_secrets(unique), strict=True))
    return next((_shown(label, judged[argv]) for label, argv in commands if judged[argv] is not None), None)


def effect_secret(effect: Any) -> str | None:
    """`command_secret` of one effect record (another clone's, before it is brought in)."""
    from shiftgit.ledger.argvsecrets import argv_secret

    for label, argv in _effect_commands("effect", effect):
        where = argv_secret(argv)
        if where is not None:
            return _shown(label, where)
    return None


def _shown(label: str, where: str | None) -> str:
    """One line (an option's name comes from the recorded words: no line break or terminal code of it is obeyed)."""
    from shiftgit.textsafe import one_line

    return one_line(f"{label}: {where}", 200)


def may_hold_commands(data: bytes) -> bool:
    """Whether bytes could be a ledger recording a command (a cheap look before any parse)."""
    return b'"schema_version"' in data and any(key in data for key in _COMMAND_KEYS)


def recorded_commands(document: Any) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(where in the ledger, the command's words) for every command the document records; only well-formed parts."""
    if not isinstance(document, dict):
        return
    contract = document.get("contract")
    if isinstance(contract, dict):
        yield from _argvs("contract.accept", contract.get("accept"))
        for name in _SPLIT_FIELDS:
            yield from _lines(f"contract.{name}", contract.get(name))
    yield from _argvs("pending_checks", document.get("pending_checks"))
    point = document.get("checkpoint")
    if isinstance(point, dict):
        yield from _argvs("checkpoint.checks", point.get("checks"))
    for index, effect in _items(document.get("effects")):
        yield from _effect_commands(f"effects[{index}]", effect)
    for index, amendment in _items(document.get("amendments")):
        for side in ("old", "new"):
            label, value = f"amendments[{index}].{side}", amendment.get(side)
            if amendment.get("field") in _SPLIT_FIELDS:
                yield from _lines(label, value)
            else:  # acceptance checks: records with an argv
                yield from _argvs(label, value)


def _effect_commands(label: str, effect: Any) -> Iterator[tuple[str, tuple[str, ...]]]:
    if not isinstance(effect, dict):
        return
    argv = _words(effect.get("argv"))
    if argv:
        yield f"{label}.argv", argv
    for name in _EFFECT_STRINGS:
        yield from _lines(f"{label}.{name}", [effect.get(name)], single=True)


def _items(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    if isinstance(value, list):
        yield from ((index, item) for index, item in enumerate(value) if isinstance(item, dict))


def _argvs(label: str, value: Any) -> Iterator[tuple[str, tuple[str, ...]]]:
    for index, item in _items(value):
        argv = _words(item.get("argv"))
        if argv:
            yield f"{label}[{index}]", argv


def _lines(label: str, value: Any, single: bool = False) -> Iterator[tuple[str, tuple[str, ...]]]:
    if not isinstance(value, list):
        return
    for index, line in enumerate(value):
        if isinstance(line, str) and line.strip():
            yield (label if single else f"{label}[{index}]"), _split(line)


def _words(value: Any) -> tuple[str, ...]:
    return tuple(word for word in value if isinstance(word, str)) if isinstance(value, list) else ()


def _split(line: str) -> tuple[str, ...]:
    if line.isprintable() and "'" not in line and '"' not in line and "\\" not in line:
        return tuple(line.split())  # what shlex gives when no quote or escape is in it (spaces its only blanks)
    import shlex  # here: only a command kept as a string is split

    try:
        return tuple(shlex.split(line))
    except ValueError:
        return tuple(line.split())
