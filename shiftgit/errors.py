"""The one family of expected errors; each maps to one exit code (SPEC §4)."""

from __future__ import annotations


class ShiftError(Exception):
    """An expected failure: bad input, bad state. The CLI prints one line and exits 2."""

    exit_code = 2


class UsageError(ShiftError):
    """Bad arguments or an unknown name."""


class NotInitialized(ShiftError):
    """No `.shift/` in this repository."""


class LedgerError(ShiftError):
    """A ledger that cannot be read: corrupt JSON, schema-invalid, newer schema."""


class StorageError(ShiftError):
    """A write the file system refused (full, read-only, over the file size limit, not permitted).

    Raised before the rename: the old file is intact and nothing was changed.
    """


class GitError(ShiftError):
    """A git command failed; carries the command and its stderr."""

    def __init__(self, argv: list[str], stderr: str) -> None:
        first = stderr.strip().splitlines()[0] if stderr.strip() else "no output"
        super().__init__(f"git {' '.join(argv)} failed: {first}")
        self.argv = argv
        self.stderr = stderr


class CheckFailed(ShiftError):
    """The check said no (stale, mismatch)."""

    exit_code = 1


class Refused(ShiftError):
    """verify refused to run an untrusted command."""

    exit_code = 3


class BudgetSpent(ShiftError):
    """A budget is spent: a new effect or service waits until `amend` raises it."""

    exit_code = 4


class Fenced(ShiftError):
    """A write refused: the run's owner lease is held elsewhere, or a newer owner epoch took the run over."""

    exit_code = 4
