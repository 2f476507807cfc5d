"""`--accept NAME=CMD`: an acceptance check's name and its command as argv, split like a shell would."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from shiftgit.errors import UsageError
from shiftgit.ledger.model import Acceptance

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}$")


def parse(values: Sequence[str]) -> tuple[Acceptance, ...]:
    """`NAME=CMD` -> Acceptance(name, argv split like a shell would); any bad value -> one UsageError line."""
    out: list[Acceptance] = []
    for value in values:
        name, sep, command = value.partition("=")
        name = name.strip()
        if not sep or not NAME.match(name) or " " in name:
            raise UsageError(f"--accept {value!r} has no NAME=: write it as NAME=CMD, e.g. "
                             "--accept 'unit=pytest -q tests'; nothing was written")
        try:
            argv = tuple(shlex.split(command))
        except ValueError as exc:
            raise UsageError(f"--accept {name}: the command does not parse ({exc}); nothing was written") from None
        if not argv:
            raise UsageError(f"--accept {name}= has no command; write it as {name}=CMD; nothing was written")
        from shiftgit.ledger.argvsecrets import argv_secret  # here: the regular expressions load only for --accept

        where = argv_secret(argv)
        if where is not None:
            raise UsageError(f"--accept {name}: the command holds what looks like a secret ({where}); pass it "
                             "through an environment variable so it never lands in git; nothing was written")
        if any(a.name == name for a in out):
            raise UsageError(f"--accept {name} is given twice: each acceptance check needs its own name; "
                             "nothing was written")
        out.append(Acceptance(name=name, argv=argv))
    return tuple(out)
