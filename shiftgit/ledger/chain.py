"""The tamper-evident chain and the owner epochs, judged over raw ledger JSON. Stdlib only (the commit gate).

Each checkpoint records `prev`, the digest of the checkpoint before it (None for a run's first),
`epoch`, the owner epoch it was written in (runs/lease.py), and `ledger`, the id of the
`refs/shift/ledgers/<run>` commit it was written onto (git's digest of the ledger it was written into
and of every ledger before it; absent in checkpoints written before it was added, and for a run's first
write where no ledger ref exists). When a checkpoint moves to the ledger's `history`, its entry keeps its
`digest`, `prev`, `epoch` and `ledger`. So one ledger is a chain (history entries,
then the checkpoint), and the checkpoints kept in git history, notes and `refs/shift/ledgers/<run>` are
links of one chain: a checkpoint rewritten, dropped or inserted after the fact breaks a link.

The digest is sha256 over the checkpoint's JSON (sorted keys, compact) with empty values left out
(None, false, [] and {}), so a field a later shiftgit adds with an empty default does not change the
digest of a checkpoint written before it. The ledger's `lease.epochs` lists every owner epoch with who
took it: an epoch no takeover recorded, or an epoch going down along the chain, is a forged epoch.
"""

from __future__ import annotations

from _collections_abc import Mapping  # = collections.abc's, without the collections package

from shiftgit import rawjson
from shiftgit.ledger.validated import sha256  # CPython's own sha256: no OpenSSL load in the commit gate

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NamedTuple

    Doc = Mapping[str, Any]
else:
    from shiftgit.tuples import NamedTuple

PREFIX = "sha256:"
CHAIN_KEYS = ("prev", "epoch")  # recorded on every checkpoint since the chain began


class Break(NamedTuple):
    """Where the chain breaks: the checkpoint seq (None: the lease) and what is wrong there."""

    seq: int | None
    what: str

    def line(self) -> str:
        return f"checkpoint #{self.seq}: {self.what}" if self.seq is not None else self.what


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _normal(value: Any) -> Any:
    if type(value) in _PLAIN:  # most values: as they are, without asking the Mapping ABC
        return value
    if isinstance(value, Mapping):
        return {k: _normal(v) for k, v in value.items() if v not in (None, False, [], {}, ())}
    if isinstance(value, list | tuple):
        return [_normal(v) for v in value]
    return value


def digest(point: Doc) -> str:
    """The digest later checkpoints chain to (a note's added `run` key is not part of the checkpoint)."""
    body = {k: v for k, v in point.items() if k != "run"}
    text = rawjson.compact_sorted(_normal(body))
    hexdigest: str = sha256(text.encode("utf-8")).hexdigest()
    return PREFIX + hexdigest


def is_chained(point: Any) -> bool:
    """A checkpoint written since the chain began (it carries `prev`, None for a run's first)."""
    return isinstance(point, Mapping) and "prev" in point


def history_link(point: Doc) -> dict[str, Any]:
    """The chain fields a history entry keeps of the checkpoint it summarises."""
    return {"digest": digest(point), "prev": point.get("prev"), "epoch": point.get("epoch"),
            **({"ledger": point["ledger"]} if point.get("ledger") else {})}


# -- one ledger ------------------------------------------------------------------------------------

def _seq(entry: Any) -> int | None:
    seq = entry.get("seq") if isinstance(entry, Mapping) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


def _epoch(entry: Any) -> int:
    epoch = entry.get("epoch") if isinstance(entry, Mapping) else None
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else 0


def lease_epochs(document: Doc) -> dict[int, Doc]:
    """Every owner epoch the ledger's lease records (epoch -> its record)."""
    lease = document.get("lease")
    records = lease.get("epochs") if isinstance(lease, Mapping) else None
    found: dict[int, Doc] = {}
    for record in records if isinstance(records, list) else []:
        if isinstance(record, Mapping) and _epoch(record):
            found[_epoch(record)] = record
    return found


def ledger_breaks(document: Doc) -> list[Break]:
    """What breaks the chain inside one ledger: links between history entries and the checkpoint, epochs."""
    point = document.get("checkpoint")
    history = [e for e in document.get("history") or [] if isinstance(e, Mapping) and "digest" in e]
    links: list[Doc] = [*history, *([point] if isinstance(point, Mapping) and is_chained(point) else [])]
    digests: dict[int, set[Any]] = {}
    for entry in history:  # a seq twice is a fork two branches' ledgers merged: either may be linked to
        digests.setdefault(_seq(entry) or 0, set()).add(entry.get("digest"))
    lowest = min((_seq(link) or 0 for link in links), default=0)
    found: list[Break] = []
    for link in links:
        seq = _seq(link)
        if seq is None or seq <= lowest:
            continue
        before = digests.get(seq - 1)
        if not before:
            found.append(Break(seq, f"checkpoint #{seq - 1} is missing from the history (dropped)"))
        elif link.get("prev") not in before:
            found.append(Break(seq, f"its prev is not the digest of checkpoint #{seq - 1} (that one was "
                                    "rewritten, or this one was inserted)"))
    return found + epoch_breaks(document, links)


def epoch_breaks(document: Doc, links: Sequence[Doc]) -> list[Break]:
    """Epochs never go down along the chain; each one a checkpoint or the lease claims was recorded as taken."""
    recorded = lease_epochs(document)
    lease = document.get("lease")
    found: list[Break] = []
    previous = 0
    for link in links:
        epoch = _epoch(link)
        if epoch < previous:
            found.append(Break(_seq(link), f"epoch {epoch} after epoch {previous}: an older owner's write"))
        elif epoch and recorded and epoch not in recorded:
            found.append(Break(_seq(link), f"claims owner epoch {epoch}, which no takeover in the lease records "
                                           "(a forged epoch)"))
        previous = max(previous, epoch)
    if isinstance(lease, Mapping):
        current = _epoch(lease)
        if current and current not in recorded:
            found.append(Break(None, f"the lease claims owner epoch {current}, which no takeover records "
                                     "(a forged epoch)"))
        elif current < previous:
            found.append(Break(None, f"the lease's epoch {current} is older than checkpoint epoch {previous}"))
    return found


# -- the commit gate: the staged ledger's chain extends HEAD's ----------------------------------------

def extends(head: Doc, staged: Doc) -> list[Break]:
    """The staged ledger keeps HEAD's checkpoint, links to it, and keeps HEAD's recorded epochs."""
    found = ledger_breaks(staged)
    found += _epochs_kept(head, staged)
    old, new = head.get("checkpoint"), staged.get("checkpoint")
    if not is_chained(old) or not isinstance(old, Mapping):
        return found
    old_seq, old_digest = _seq(old) or 0, digest(old)
    if not is_chained(new) or not isinstance(new, Mapping):
        return [*found, Break(_seq(new), "it carries no chain link (prev), although HEAD's checkpoint "
                                         f"#{old_seq} does: the chain was cut")]
    new_seq = _seq(new) or 0
    if new_seq < old_seq:
        return [*found, Break(new_seq, f"older than HEAD's checkpoint #{old_seq}: later checkpoints were dropped")]
    entries = {_seq(e): e for e in staged.get("history") or [] if isinstance(e, Mapping) and "digest" in e}
    entries[new_seq] = {**new, "digest": digest(new)}
    kept = entries.get(old_seq)
    if kept is None:
        return found  # HEAD's checkpoint fell out of the capped history: nothing to compare here
    if kept["digest"] != old_digest:
        found.append(Break(old_seq, "differs from the one HEAD records (rewritten since HEAD)"))
    return found


def same_as_published(published: Doc, staged: Doc) -> list[Break]:
    """The staged checkpoint, when the ledger ref's tip holds the same one (by id), has the content it had there."""
    mine, theirs = staged.get("checkpoint"), published.get("checkpoint")
    if not isinstance(mine, Mapping) or not isinstance(theirs, Mapping) or mine.get("id") != theirs.get("id"):
        return []
    if digest(mine) == digest(theirs):
        return []
    return [Break(_seq(mine), "differs from the checkpoint `shiftgit checkpoint` committed to the run's ledger ref "
                              "(edited after the fact)")]


def _epochs_kept(head: Doc, staged: Doc) -> list[Break]:
    old, new = lease_epochs(head), lease_epochs(staged)
    gone = [e for e in old if e not in new or _who(new[e]) != _who(old[e])]
    return [Break(None, f"owner epoch {e} as HEAD records it was dropped or rewritten in the lease") for e in gone]


def _who(record: Doc) -> Any:
    return record.get("holder"), record.get("at")
