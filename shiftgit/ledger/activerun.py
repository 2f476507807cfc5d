"""The active-run pointer of a work tree (`<git-dir>/shift/active`), part of `Store` (ledger/store.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from shiftgit import textsafe
from shiftgit.errors import UsageError
from shiftgit.ledger.files import write_atomic
from shiftgit.ledger.runids import run_id_problem, validate_run_id
from shiftgit.repo import Repo


class ActivePointer:
    """`Store`'s active-run methods (per worktree, in the git dir)."""

    repo: Repo

    def exists(self, run: str) -> bool:
        raise NotImplementedError

    def active_run(self, environ: Mapping[str, str] | None = None) -> str | None:
        env = os.environ if environ is None else environ
        if env.get("SHIFT_RUN"):
            return validate_run_id(env["SHIFT_RUN"])
        pointer = self.repo.private("active")
        try:
            run = pointer.read_text("utf-8").strip()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise _bad_pointer(pointer, getattr(exc, "strerror", None) or "not UTF-8 text") from None
        if run and run_id_problem(run):
            raise _bad_pointer(pointer, f"it holds {textsafe.quote(run, 80)}, not a run id")
        return run if run and self.exists(run) else None

    def set_active(self, run: str | None) -> None:
        pointer = self.repo.private("active")
        if pointer.is_dir() and not pointer.is_symlink():
            try:
                pointer.rmdir()  # an empty directory in the way: nothing of value is lost
            except OSError:
                pass
        if run is None:
            pointer.unlink(missing_ok=True)
        else:
            write_atomic(pointer, (run + "\n").encode())


def _bad_pointer(pointer: Path, why: str) -> UsageError:
    return UsageError(f"the active-run pointer {pointer} cannot be read ({why}); remove it (`rm -r {pointer}`), "
                      "then pick the run with `shiftgit resume RUN`")
