"""The `.shift/` store: atomic reads and writes, per-run locks, the active-run pointer.

A write is durable or nothing changes: every byte is written (a short write is retried, then fails), the temp
file is checked (its size, and for JSON a parse of what is on disk) and fsynced before it replaces the old file.
A full disk, a file size limit, a read-only file system or a refused permission end in one StorageError line, the
old file intact. `.shift/` and every path shiftgit uses under it must be real directories and files inside the
work tree: a symbolic link there (a hostile clone can commit one) is refused before anything is read or written.

The data model, the schema and the model's writing and reading helpers are imported where they are used, not
here: an agent hook that only needs a ledger's JSON (`document`) never loads them, and bytes shiftgit already
validated (`validated`) are never schema-checked again.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from shiftgit import rawjson, textsafe
from shiftgit.digests import BIG
from shiftgit.errors import LedgerError, NotInitialized, UsageError
from shiftgit.ledger import validated
from shiftgit.ledger.activerun import ActivePointer
from shiftgit.ledger.canonical import SCHEMA_VERSION, canonical_bytes, current
from shiftgit.ledger.files import RunLock, remove_stale_temps, storage_error, write_atomic
from shiftgit.ledger.runids import RUN_ID as _RUN_ID
from shiftgit.ledger.runids import run_id_problem, validate_run_id
from shiftgit.repo import SHIFT_DIR, Repo

__all__ = ["Store", "run_id_problem", "storage_error", "validate_run_id", "write_atomic"]  # runids.py, files.py
TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any  # noqa: I001 (one block: this module is at the size guideline)
    from shiftgit.ledger import incremental  # (and reading: imported where used; an agent hook reads JSON only)
    from shiftgit.ledger.model import Ledger

CONFIG_VERSION = 1
ARCHIVE_REF = "refs/shift/archive"  # finished runs' final ledgers (git/archive.py writes it)
DEFAULT_CONFIG: dict[str, Any] = {"schema_version": CONFIG_VERSION, "require_fresh_checks": False,
                                  "trailers": True}
GITIGNORE = "# shiftgit's temporary files (atomic writes)\n*.tmp\n"
SNAPSHOT_MIN = BIG  # ledger/snapshot.MIN, known without importing it (a small ledger's read and write need none)
class Store(ActivePointer):
    """One worktree's `.shift/` directory."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.root = repo.shift_dir
        self._seen: dict[str, incremental.Written] = {}  # run -> the bytes shiftgit wrote, last read or written here
        # set by runs/lease.guard: renews the owner lease in every ledger document this process writes
        self.on_write: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    @classmethod
    def open(cls, cwd: str | Path | None = None, *, require: bool = True, repo: Repo | None = None) -> Store:
        """The store of the work tree at CWD (REPO: that repository, already opened)."""
        store = cls(Repo.open(cwd) if repo is None else repo)
        config = store.inside("config.json")
        if os.path.lexists(store.root) and not store.root.is_dir():
            raise UsageError(f"{SHIFT_DIR} in {store.repo.root} is not a directory; move it away, then run "
                             "`shiftgit init`")
        if require and not config.exists():
            raise NotInitialized(f"{store.repo.root}: no {SHIFT_DIR}/ here; run `shiftgit init` first")
        return store

    # -- paths -----------------------------------------------------------------------------
    def rel(self, path: Path) -> str:
        return str(path.relative_to(self.repo.root))

    def inside(self, *parts: str) -> Path:
        """`.shift/<parts>`, refused when it or a directory on the way is a symbolic link (it could lead
        anywhere: a hostile clone commits `.shift -> ../../elsewhere`). Nothing is followed or written."""
        return Path(self._inside(parts))

    def _inside(self, parts: tuple[str, ...]) -> str:
        here = str(self.root)
        for part in ("", *parts):
            here = os.path.join(here, part) if part else here
            if os.path.islink(here):  # os.path, not pathlib: `status` asks this four times for each of 1,000 runs
                path = Path(here)
                rel = self.rel(path)
                raise UsageError(f"refusing to use {rel}: it is a symbolic link (to "
                                 f"{textsafe.quote(os.readlink(path), 120)}), and shiftgit keeps its files inside the "
                                 f"work tree; nothing was read or written. Remove the link (`git rm {rel}`), then run "
                                 "`shiftgit init`")
        return here

    def ledger_path(self, run: str) -> Path:
        return self.inside("runs", validate_run_id(run), "ledger.json")

    def ledger_files(self, runs: list[str] | None = None) -> dict[str, bytes | None]:
        """The bytes of each run's ledger file in the work tree (None: it has none; RUNS None: every run `run_ids`
        lists, one directory listing), each path refused as `inside` refuses it (`.shift/`, `runs/` asked once)."""
        from shiftgit.ledger.reading import read_ledgers
        top = self._inside(("runs",))
        if runs is None and not os.path.isdir(top):
            return {}
        found, linked = read_ledgers(top, runs if runs is None else [validate_run_id(run) for run in runs])
        if linked is not None:
            self._inside(("runs", linked, "ledger.json"))  # the refusal, worded as everywhere
        return found

    def run_ids(self) -> list[str]:
        runs = str(self.inside("runs"))
        if not os.path.isdir(runs):
            return []
        with os.scandir(runs) as entries:  # os, not pathlib: `status` lists 1,000 runs
            return sorted(e.name for e in entries
                          if _RUN_ID.match(e.name) and os.path.isfile(os.path.join(e.path, "ledger.json")))

    def skipped_runs(self) -> list[str]:
        """A line per dir in `.shift/runs/` named as no run may be (`a..b`): lists skip it; status/resume/log say so."""
        from shiftgit.ledger.runids import skipped_lines
        return skipped_lines(str(self.inside("runs")), self.rel(self.inside("runs")))

    # -- config ----------------------------------------------------------------------------
    def read_config(self) -> dict[str, Any]:
        """The settings over the defaults; schema-checked unless these bytes were checked before here."""
        path = self.inside("config.json")
        try:
            data = path.read_bytes()
            document = rawjson.loads(data)
        except FileNotFoundError:
            return dict(DEFAULT_CONFIG)
        except ValueError as exc:
            raise LedgerError(f"{self.rel(path)}: corrupt JSON ({exc}); fix it or restore it with "
                              f"`git checkout -- {self.rel(path)}`") from None
        if validated.config_id(data) in validated.known(self.repo.git_dir) and isinstance(document, dict):
            return {**DEFAULT_CONFIG, **document}
        from shiftgit.ledger.schema import check_version, schema_errors

        check_version(document, self.rel(path))
        problems = schema_errors(document, "config.schema.json")
        if problems:
            raise LedgerError(f"{self.rel(path)}: invalid config: " + "; ".join(problems))
        validated.record_config(self.repo.git_dir, data)
        return {**DEFAULT_CONFIG, **document}

    def init(self) -> bool:
        """Create `.shift/`; returns True when something was written. Idempotent."""
        config, ignore = self.inside("config.json"), self.inside(".gitignore")
        self.inside("runs")
        wrote = False
        if not config.exists():
            write_atomic(config, canonical_bytes(DEFAULT_CONFIG))
            wrote = True
        else:
            self.read_config()
        if not ignore.exists():
            write_atomic(ignore, GITIGNORE.encode())
            wrote = True
        (self.root / "runs").mkdir(exist_ok=True)
        return wrote

    # -- ledgers ---------------------------------------------------------------------------
    def exists(self, run: str) -> bool:
        return self.ledger_path(run).exists()

    def read(self, run: str) -> Ledger:
        """The run's ledger as the model; schema-checked unless shiftgit already validated these bytes.

        The same bytes read again in this process (`effect run` reads and writes three times) give the
        same immutable model without parsing them again.
        """
        from shiftgit.ledger import incremental
        from shiftgit.ledger.model import Ledger
        from shiftgit.ledger.reading import GcPaused
        data = self._bytes(run)
        seen = self._seen.get(run)
        if seen is not None and seen.data == data and seen.ledger is not None:
            return seen.ledger
        with GcPaused():  # a big ledger's JSON and records: see reading.GcPaused
            kept = None if seen is not None and seen.data == data else self._snapshot(run, data)
            if kept is not None:
                self._seen[run] = kept
                return kept.ledger  # type: ignore[return-value]  # a snapshot's Written has its ledger
            document = self._known(data, migrate=True) if seen is None or seen.data != data else rawjson.loads(data)
            ledger = self._checked(run, data) if document is None else Ledger.from_dict(document)
        if document is None:
            return ledger
        written = seen.written if seen is not None and seen.data == data else None  # None: asked at the next write
        self._seen[run] = incremental.Written(data, ledger, document=document, written=written)
        return ledger

    def current(self, run: str) -> tuple[bytes, Ledger]:
        """The ledger's bytes and model (`read`); the bytes object last written or read here when the file still
        holds it, so an id hashed from it is not hashed again (digests.blob_id)."""
        ledger, seen = self.read(run), self._seen.get(run)
        return (seen.data if seen is not None and seen.ledger is ledger else self._bytes(run)), ledger

    def document(self, run: str, *, migrate: bool = False, data: bytes | None = None,
                 parsed: dict[str, Any] | None = None) -> dict[str, Any]:
        """The run's ledger as JSON, without building the model (the agent hooks' hot path, `status`).

        `migrate`: a checked schema 1 ledger as schema 2 reads it (as `read`). `data`, `parsed`: the file's
        bytes and their JSON when the caller just read them (checked here all the same)."""
        data = self._bytes(run) if data is None else data
        document = self._known(data, migrate=migrate, parsed=parsed)
        return document if document is not None else self._checked(run, data).to_dict()

    def _bytes(self, run: str) -> bytes:
        try:
            return self.ledger_path(run).read_bytes()
        except FileNotFoundError:
            archived = self.archived_bytes(run)
            if archived is not None:
                return archived
            from shiftgit.ledger.runids import unknown_run
            raise UsageError(unknown_run(self.repo, run, self.run_ids)) from None

    def archived_bytes(self, run: str) -> bytes | None:
        """The run's final ledger as `refs/shift/archive` keeps it (the run was finished or archived), or None."""
        return self.repo.show(f"{ARCHIVE_REF}:{validate_run_id(run)}/ledger.json")

    def is_archived(self, run: str) -> bool:
        """The run's ledger left the work tree for the archive (reads still find it there)."""
        return not self.exists(run) and self.archived_bytes(run) is not None

    def _writable(self, run: str) -> None:
        """An archived run is read-only: writing would bring its ledger back into the tree unasked."""
        if self.is_archived(run):
            raise UsageError(f"run {run!r} is finished and archived (refs/shift/archive); read it with "
                             f"`shiftgit show {run}`, reopen it with `shiftgit review add {run} TEXT`, or start "
                             "a new run; nothing was changed")

    def _known(self, data: bytes, *, migrate: bool = False, parsed: Any = None) -> dict[str, Any] | None:
        """The JSON of bytes shiftgit already validated (current schema; with `migrate`, a schema 1 ledger
        that passed the check as schema 2, as schema 2 reads it); None when they need a check."""
        if not validated.is_known(self.repo.git_dir, data):
            return None
        try:
            document = rawjson.loads(data) if parsed is None else parsed
        except ValueError:
            return None
        if migrate and isinstance(document, dict) and document.get("schema_version") != SCHEMA_VERSION:
            document = dict(current(document))  # what `_checked` validated (schema.migrate), without jsonschema
        return document if isinstance(document, dict) and document.get("schema_version") == SCHEMA_VERSION else None

    def _snapshot(self, run: str, data: bytes) -> incremental.Written | None:
        """The read of bytes shiftgit wrote (canonical, each key once) with the run's snapshot of their first effects
        (ledger/snapshot.py). Validated is not enough: a hand edit the schema takes may repeat a key (`"effects"`
        twice: JSON keeps the last), and the snapshot's text matches the first."""
        if len(data) < SNAPSHOT_MIN:
            return None
        from shiftgit.ledger import snapshot

        return snapshot.load(self.repo.git_dir, run, data) if validated.is_written(self.repo.git_dir, data) else None

    def _checked(self, run: str, data: bytes) -> Ledger:
        """Full check (JSON, version, schema); valid current-version bytes are remembered as validated."""
        from shiftgit.ledger.schema import parse_ledger

        ledger = parse_ledger(data, self.rel(self.ledger_path(run)))
        if ledger.schema_version == SCHEMA_VERSION:
            validated.record(self.repo.git_dir, [data])
        return ledger

    def write(self, ledger: Ledger, *, checked: bool = True, interim: bool = False) -> None:
        """Validate, redact secrets from every string, write atomically.

        `checked=False` skips the schema check (jsonschema's import alone costs more than an agent hook
        may): only for a ledger read valid and changed by shiftgit's own typed code, as the agent hooks'
        automatic checkpoint is (the same code `shiftgit checkpoint` runs checked; tests validate both).
        `interim`: bytes this process replaces next, at once (`effect run`'s `planned`): durable all the same, but
        not listed as validated (hashing 1 MiB); a reader that finds them (the process died) checks them whole.
        """
        from shiftgit.ledger import incremental  # against what shiftgit wrote, only what the change touched is
        base = self._seen.get(ledger.run)  # redacted, checked and serialized again
        if base is not None and base.written is None:
            base.written = validated.is_written(self.repo.git_dir, base.data)
        spliced = base is not None and bool(base.written)
        written, problems = incremental.render(ledger, base if spliced else None, check=checked, on_write=self.on_write)
        if problems:  # a bug, not bad input: keep the traceback
            raise AssertionError("refusing to write an invalid ledger: " + "; ".join(problems))
        path = self.ledger_path(ledger.run)
        if path.parent.exists():
            remove_stale_temps(path.parent)
        data = written.data
        write_atomic(path, data, is_json=not spliced)  # spliced: checked texts joined (test_incremental_writes)
        self._seen[ledger.run] = written
        if len(data) >= SNAPSHOT_MIN or "shiftgit.ledger.snapshot" in sys.modules:
            from shiftgit.ledger import snapshot  # a small ledger leaves none

            snapshot.keep(self.repo.git_dir, ledger.run, written)  # the last write's records, left at exit
        if interim:
            return
        try:  # the gate skips re-validating (and, clean, re-scanning) these bytes; not written: incremental.render
            validated.record(self.repo.git_dir, [data], written=bool(written.written), clean=bool(written.written)
                             and validated.scanned_clean(data), sha1_only=self.repo.object_format == "sha1")
        except OSError:  # noqa: S110
            pass

    def patch(self, run: str, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> dict[str, Any] | None:
        """Change a few keys of the ledger's JSON under the run's lock, without the model or jsonschema.

        For small changes shiftgit builds itself from checked values (the agent hooks' `sessions` list): the bytes
        read were validated and the change keeps the schema (the tests validate every such write), so the result is
        recorded as validated. `change` returns the new document, or None to write nothing. Redacting what it adds
        is the caller's job; `updated_at` and spend stay as they are (the next full write counts the work time)."""
        with self.lock(run):
            self._writable(run)
            changed = change(self.document(run))
            if changed is None:
                return None
            if self.on_write is not None:
                changed = self.on_write(changed)
            path = self.ledger_path(run)
            remove_stale_temps(path.parent)
            data = canonical_bytes(changed)
            write_atomic(path, data, is_json=True)
            try:  # only a speed-up, as in `write`; not `written`: what the change
                validated.record(self.repo.git_dir, [data])  # added is not redacted here: the next write redacts all
            except OSError:
                pass
            return changed

    def create(self, ledger: Ledger) -> None:
        with self.lock(ledger.run):
            if self.exists(ledger.run):
                raise UsageError(f"run {ledger.run!r} already exists; pick another id, or continue it with "
                                 f"`shiftgit resume {ledger.run}`")
            self.write(ledger)

    def update(self, run: str, change: Callable[[Ledger], Ledger], *, checked: bool = True,
               interim: bool = False) -> Ledger:
        """Read, change and write one ledger under its lock (the lock dies with its holder).

        Wall minutes since the previous write accrue to the run's spend (budgets.accrue). `checked`, `interim`: `write`.
        """
        from shiftgit.ledger.budgets import accrue
        from shiftgit.ledger.reading import GcPaused
        with self.lock(run), GcPaused():  # the read, the change and the write build and drop many objects
            self._writable(run)
            before = self.read(run)
            ledger = accrue(before, change(before))
            self.write(ledger, checked=checked, interim=interim)
            return ledger

    def lock(self, run: str) -> RunLock:
        """The run's lock, for `with` (an flock: the kernel lets go of it when its holder dies)."""
        return RunLock(self.repo.private("locks", f"{validate_run_id(run)}.lock"))

    def resolve_run(self, run: str | None, environ: Mapping[str, str] | None = None) -> str:
        """The named run, else the one discovery picks (ledger/discovery.py); a clear error when none fits."""
        from shiftgit.ledger.discovery import discover

        return discover(self, run, environ).run

