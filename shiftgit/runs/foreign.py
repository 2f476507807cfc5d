"""Effects recorded on another machine: brought into this work tree's ledger before a key may run again.

An effect changes the world outside git, so its record must reach whoever takes the run over even when no
checkpoint follows it: `effect run` commits the working ledger to refs/shift/ledgers/<run> when the effect is
attempted (before its command starts) and again when it ends, and starts the publisher where one is configured
(`share`). Another clone fetches those commits with `sync`; before `effect run`, `effect record|reconcile`,
`checkpoint` and `resume` decide anything, `absorb` brings each published effect record that is further along
than this ledger's (the merge driver's rule: merge.EFFECT_RANK, then time) into the working ledger, with a
history line naming the host and ledger commit it came from. A record left `attempted` on another machine then
reads `unknown` here (procs.is_alive cannot see that machine's process): refused until a human reconciles it;
a completed one is returned, not run again.

Every commit on the run's ledger refs that is not yet merged here is read once (`git rev-list` from the tips,
stopping at the commits already seen), so an effect recorded between two checkpoints of a diverged history is
found too. The commits seen are remembered per work tree (`<git-dir>/shift/effects-seen`): with nothing new
fetched, this costs the one `for-each-ref` the caller's fence check also needs, and no ledger is read.
"""

from __future__ import annotations

import os

from shiftgit import rawjson, textsafe
from shiftgit.errors import Fenced, GitError, LedgerError
from shiftgit.git import ledgerref
from shiftgit.ledger.model import Effect, Ledger
from shiftgit.ledger.record import replace
from shiftgit.ledger.store import Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from shiftgit.git.fence import Claim
    from shiftgit.git.shiftrefs import Writer

SEEN = "effects-seen"
SEEN_KEPT = 4096
RANK = {"planned": 0, "attempted": 1, "unknown": 2, "failed": 3, "completed": 4, "compensated": 5}  # merge.EFFECT_RANK


def absorb(store: Store, run: str, tips: tuple[str, ...] | None = None) -> list[str]:
    """Bring effect records published elsewhere that are further along than this ledger's into it. Returns one line
    per record brought in (for the user); nothing when the run has no ledger file here or nothing new was fetched.
    TIPS: the run's ledger-ref commits, when the caller's fence check read them (lease.Ticket.commits)."""
    if not store.exists(run):
        return []
    if tips is None:
        tips = tuple(tip.commit for tip in ledgerref.tips(store.repo).get(run, []))
    seen = _seen(store)
    unseen = [commit for commit in dict.fromkeys(tips) if commit not in seen]
    if not unseen:
        return []
    commits = _walk(store, unseen, seen)
    here = store.read(run)
    found = {key: record for key, record in _records(store, commits, here).items() if _further(record[0], here)}
    lines: list[str] = []
    if found:  # else nothing is written (a write would also renew the lease)
        from shiftgit.effects.approvals import now_iso
        from shiftgit.effects.runner import put

        def change(ledger: Ledger) -> Ledger:
            lines.clear()
            for effect, where in found.values():
                if not _further(effect, ledger):  # re-checked under the lock
                    continue
                ledger = put(ledger, _brought(effect, ledger.effect(effect.key), where), now_iso())
                state = effect.state if effect.state != "attempted" else "attempted there, outcome unknown here"
                lines.append(f"effect {textsafe.quote(effect.key)}: {state} (recorded {where})")
            return ledger

        try:
            store.update(run, change)
        except LedgerError as exc:  # a published record this schema refuses: named, and not brought in
            return [f"effects published for run {run!r} could not be brought into its ledger: {exc}"]
    _remember(store, seen, commits)
    return lines


def share(store: Store, run: str) -> str | None:
    """Commit the working ledger to the run's ledger ref and start the publisher (when configured), as a checkpoint
    does: an effect's state reaches another machine without waiting for the next checkpoint. Never raises: returns a
    warning line when the record could not be committed (it stays in the working ledger)."""
    return Sharer(store, run)()


class Sharer:
    """`share`, called more than once by one command (`effect run`: attempted, then the result): who commits is asked
    of git once, started at once beside the command's own work (shiftrefs.ask_writer), and each commit goes onto the
    one before it without a look at the ref (ledgerref.commit_ledger's `tip`; a wrong guess only costs that look).
    TIP: the run's ledger-ref tip as the caller's fence read it (lease.Ticket.tip)."""

    def __init__(self, store: Store, run: str, tip: Claim | None = None) -> None:
        from shiftgit.git.shiftrefs import ask_writer

        self.store, self.run, self.tip = store, run, tip
        self.asked: Callable[[], Writer | None] | None = ask_writer(store.repo)
        self.by: Writer | None = None

    def __call__(self) -> str | None:
        from shiftgit.git import publish
        from shiftgit.procs import clone_id

        store = self.store
        if self.asked is not None:
            self.by, self.asked = self.asked(), None
        try:
            with store.lock(self.run):
                data = store.ledger_path(self.run).read_bytes()
                commit = ledgerref.commit_ledger(store.repo, self.run, data, clone_id(store.repo), self.by, self.tip,
                                                 what="effects since checkpoint")
        except Fenced as exc:
            return f"this effect's record stays on this machine: {exc}"
        except (GitError, OSError) as exc:
            return f"this effect's record could not be committed to {ledgerref.ref_name(self.run)}: {exc}"
        if commit is not None:
            mark_seen(store, [commit])
            self.tip = self.tip._replace(commit=commit) if self.tip is not None else None
        publish.start_configured(store)
        return None


def mark_seen(store: Store, commits: list[str]) -> None:
    """Ledger commits this work tree wrote itself: their effects are the working ledger's own."""
    _remember(store, _seen(store), commits)


# -- reading what was published --------------------------------------------------------------------------

def _walk(store: Store, tips: list[str], seen: set[str]) -> list[str]:
    """The ledger commits reachable from TIPS and not from a commit already seen, newest first."""
    stop = "".join(f"^{commit}\n" for commit in seen)
    proc = store.repo.git("rev-list", "--ignore-missing", "--stdin", input="".join(f"{t}\n" for t in tips) + stop,
                          check=False)
    return [line for line in proc.split() if len(line) in (40, 64)]


def _records(store: Store, commits: list[str], mine: Ledger) -> dict[str, tuple[Effect, str]]:
    """Per key, the furthest-along effect record among COMMITS' ledgers, with where it was recorded. Only ledgers of
    this very run count: the same id and creation time as MINE (two clones may each start a run named `demo`)."""
    from shiftgit.git.notestree import CatFile
    from shiftgit.repo import clean_env

    if not commits:
        return {}
    hosts = _hosts(store, commits)
    best: dict[str, tuple[Effect, str]] = {}
    with CatFile(store.repo.root, clean_env()) as cat:
        answers = cat.get([f"{commit}:{ledgerref.FILE}" for commit in commits])
    for commit, answer in zip(commits, answers, strict=True):
        if answer is None:
            continue
        for effect in _effects(answer[2], mine):
            held = best.get(effect.key)
            if effect.state != "planned" and (held is None or _rank(effect) > _rank(held[0])):
                host = textsafe.quote(hosts.get(commit) or "an unknown host")
                best[effect.key] = (effect, f"on host {host}, ledger commit {commit[:12]}")
    return best


def _effects(data: bytes, mine: Ledger) -> list[Effect]:
    try:
        document = rawjson.loads(data)
    except ValueError:
        return []
    if not isinstance(document, dict) or document.get("run") != mine.run:
        return []
    if document.get("created_at") != mine.created_at:
        return []
    records = document.get("effects")
    found = []
    for item in records if isinstance(records, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str) or item.get("state") not in RANK:
            continue
        try:
            found.append(Effect.from_dict(item))
        except (TypeError, ValueError, KeyError):
            continue  # not a record this version reads: the ledger's validation would refuse it anyway
    return found


def _hosts(store: Store, commits: list[str]) -> dict[str, str]:
    out = store.repo.git("log", "--no-walk=unsorted", "--format=%H %(trailers:key=Shift-Host,valueonly,separator=)",
                         *commits, check=False)
    return {line[:line.find(" ")]: line[line.find(" ") + 1:].strip() for line in out.splitlines() if " " in line}


def _further(effect: Effect, ledger: Ledger) -> bool:
    """EFFECT is further along than LEDGER's record of its key (or LEDGER has none)."""
    mine = ledger.effect(effect.key)
    return mine is None or _rank(effect) > _rank(mine)


def _rank(effect: Effect) -> tuple[int, str]:
    return RANK.get(effect.state, -1), str(effect.updated_at or "")


def _brought(theirs: Effect, mine: Effect | None, where: str) -> Effect:
    """THEIR record, with both histories and a line saying where it came from."""
    from shiftgit.effects.approvals import now_iso
    from shiftgit.effects.runner import HISTORY_CAP

    history = {rawjson.dumps(h): h for h in [*(mine.history if mine else ()), *theirs.history]}
    events = sorted(history.values(), key=lambda h: str(h.get("at", "")))
    note = {"at": now_iso(), "state": theirs.state, "result": f"recorded {where}; brought into this ledger"}
    return replace(theirs, history=(*events, note)[-HISTORY_CAP:],
                   attempts=max(theirs.attempts, mine.attempts if mine else 0))


# -- what this work tree has seen ----------------------------------------------------------------------

def _seen(store: Store) -> set[str]:
    try:
        with open(store.repo.private(SEEN), encoding="ascii") as handle:
            return set(handle.read().split())
    except (OSError, UnicodeDecodeError):
        return set()


def _remember(store: Store, seen: set[str], commits: list[str]) -> None:
    """Add COMMITS to the seen list (a cache: a lost write only means reading those ledgers again)."""
    fresh = [c for c in commits if c not in seen]
    if not fresh:
        return
    path = store.repo.private(SEEN)
    try:
        with open(path, encoding="ascii") as handle:
            kept = handle.read().split()
    except (OSError, UnicodeDecodeError):
        kept = []
    kept = (kept + fresh)[-SEEN_KEPT:]
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="ascii") as handle:
            handle.write("\n".join(kept) + "\n")
        os.replace(tmp, path)
    except OSError:
        pass
