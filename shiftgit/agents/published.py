"""Whether a published record of a run is newer than this work tree's ledger, for the session start's briefing,
without a git process when the git dir's files settle it.

git/sources.newer_published asks `for-each-ref` and `cat-file` for every published copy of the run (this clone's
`refs/shift/ledgers/<run>`, each remote's fetched copy): two git processes and the modules that read them, at every
session start. A ledger commit never changes, so the (owner epoch, checkpoint seq) its ledger holds is kept by commit
id (git/ledgerref.py `known`: written when shiftgit commits a checkpoint there, and from every answer of the full
look). With the refs read from the files (git/headref.py `read_refs`), a session start whose published copies are
all known compares them with the work tree's ledger as `sources.pick` does (a published record wins only with a
higher epoch, or a higher seq at the same epoch) and asks git nothing. Anything else (a ref only git can read, a
commit not seen yet, a published record that wins) takes the full look.
"""

from __future__ import annotations

from shiftgit.git import headref, ledgerref
from shiftgit.ledger.store import Store

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def newer_is_none(store: Store, run: str, document: Mapping[str, Any]) -> bool:
    """True when no published record of `run` can be newer than DOCUMENT (this work tree's ledger, as read)."""
    refs = headref.read_refs(str(store.repo.common_dir), (ledgerref.LEDGERS, ledgerref.TRACKING))
    if isinstance(refs, str):  # headref.ASK_GIT
        return False
    commits = [commit for ref, commit in refs.items() if ledgerref.run_of(ref) == run]
    if not commits:
        return True
    seen = ledgerref.known(store.repo)
    here = (ledgerref.epoch_of(dict(document)), ledgerref.seq_of(dict(document)))
    return all(commit in seen and seen[commit] <= here for commit in commits)

