"""The work tree's ledger files read without following a link: one directory listing and one `open` per run.

`status` reads every run's ledger (1,000 and more); each `stat` or `lstat` of a path costs about what the `open`
does, so the checks `Store` makes on each path (no symbolic link on the way: a hostile clone can commit one) are
made by the listing (`d_type`) and by the open itself (O_NOFOLLOW) instead of asking the file system again.
Stdlib only.
"""

from __future__ import annotations

import gc
import os
import stat

from shiftgit.ledger.runids import RUN_ID

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from collections.abc import Iterable

FILE = "ledger.json"
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)  # a FIFO never blocks it


class GcPaused:
    """Python's cycle collector held off while a ledger's JSON and records are built (re-entrant).

    Building a big ledger (1,000 effects) or every run's (`status` at 1,000 runs) keeps tens of thousands of new
    containers alive, and each 700 of them started a collection that walked the young ones again: 40-60 passes,
    about a tenth of those commands. The JSON and the records hold no reference cycles, so nothing is left
    uncollected: the objects are freed by their counts, and the collector runs again once this is left.
    """

    __slots__ = ("freeze", "was")

    def __init__(self, *, freeze: bool = False) -> None:
        self.freeze = freeze

    def __enter__(self) -> None:
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was:
            if self.freeze:
                gc.freeze()
            gc.enable()


def read_ledgers(top: str, runs: Iterable[str] | None = None) -> tuple[dict[str, bytes | None], str | None]:
    """Each run's ledger bytes under TOP, the runs directory (None: the run has no ledger file), and the first run
    whose directory or ledger file is a symbolic link (nothing read after it: the caller refuses it).

    RUNS None: the runs TOP lists as `Store.run_ids` does (a run id naming a directory that holds a regular
    `ledger.json`, links followed): a link there is only reported when it leads to such a file, and a run without
    the file is left out. RUNS given: a link is reported wherever it leads."""
    listed = runs is None
    links: set[str] = set()
    if runs is None:
        with os.scandir(top) as entries:
            names = [(e.name, e.is_symlink()) for e in entries if RUN_ID.match(e.name) and e.is_dir()]
        links = {name for name, link in names if link}
        runs = sorted(name for name, _ in names)
    found: dict[str, bytes | None] = {}
    for run in runs:
        folder = f"{top}/{run}"  # os.path.join's checks cost more than the open here (a run id holds no "/")
        path = f"{folder}/{FILE}"
        if run in links if listed else os.path.islink(folder):
            if listed and not os.path.isfile(path):
                continue
            return found, run
        try:
            fd = os.open(path, _FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            if not listed:
                found[run] = None
            continue
        except OSError:
            if not os.path.islink(path):
                raise
            if listed and not os.path.isfile(path):  # a dangling link is no run's ledger
                continue
            return found, run
        try:
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
            data = _read(fd) if regular else None
        finally:
            os.close(fd)
        if data is not None:
            found[run] = data
        elif not listed:  # a directory or a FIFO by that name: as a plain open and read of it goes
            with open(path, "rb") as handle:
                found[run] = handle.read()
    return found, None


def _read(fd: int) -> bytes:
    parts = []
    while part := os.read(fd, 1 << 20):
        parts.append(part)
    return b"".join(parts)
