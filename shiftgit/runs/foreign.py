"""Effects recorded on another machine: brought into this work tree's ledger before a key may run again.

An effect changes the world outside git, so its record must reach whoever takes the run over even when no
checkpoint follows it: `effect run` commits the working ledger to refs/shift/ledgers/<run> when the effect is
attempted (before its command starts) and again when it ends, and starts the publisher where one is configured
(`share`). Another clone fetches those commits with `sync`; before `effect run`, `effect record|reconcile`,
`checkpoint` and `resume` decide anything, `absorb` brings each published effect record that is further along
than this ledger's (`_rank`: a later attempt, then model.EFFECT_RANK's order; a tie keeps the record here) into
the working ledger, with a history line naming the host and ledger commit it came from. A record left `attempted`
on another machine then reads `unknown` here (procs.is_alive cannot see that machine's process): refused until a
human reconciles it; a completed one is returned, not run again. Service records are never brought in (a process
lives on one machine).

A record the schema refuses, or whose command holds a secret (ledger/commandsecrets.py), is named once and not
brought in. When it says the effect was attempted, done or undone there, its key still reads `unknown` here
(`_stub`: its key, kind and attempt count, no command, probe or outcome: any of them may be what was refused), so
this clone never reruns it before a human reconciles it.

Every commit on the run's ledger refs that is not yet merged here is read once (`git rev-list` from the tips,
stopping at the commits already seen), so an effect recorded between two checkpoints of a diverged history is
found too. The commits seen are remembered per work tree (`<git-dir>/shift/effects-seen`): with nothing new
fetched, this costs the one `for-each-ref` the caller's fence check also needs, and no ledger is read.
"""

from __future__ import annotations

import os

from shiftgit import rawjson, textsafe
from shiftgit.errors import Fenced, GitError
from shiftgit.git import ledgerref
from shiftgit.ledger.model import EFFECT_RANK, Effect, Ledger
from shiftgit.ledger.record import replace
from shiftgit.ledger.store import Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NamedTuple

    from shiftgit.git.fence import Claim
    from shiftgit.git.shiftrefs import Writer
else:
    from shiftgit.tuples import NamedTuple

SEEN = "effects-seen"
SEEN_KEPT = 4096


def absorb(store: Store, run: str, tips: tuple[str, ...] | None = None) -> list[str]:
    """Bring effect records published elsewhere that are further along than this ledger's into it. Returns one line
    per record brought in (for the user); nothing when the run has no ledger file here or nothing new was fetched.
    TIPS: the run's ledger-ref commits, when the caller's fence check read them (lease.Ticket.commits)."""
    if not store.exists(run):
        return []
    if tips is None:
        tips = tuple(tip.commit for tip in ledgerref.tips(store.repo).get(run, []))
    kept = _seen(store)
    seen = set(kept)
    unseen = [commit for commit in dict.fromkeys(tips) if commit not in seen]
    if not unseen:
        return []
    commits = _walk(store, unseen, seen)
    here = store.read(run)
    records, lines = _records(store, commits, here)
    found = {key: record for key, record in records.items() if _further(record, here)}
    if found:  # else nothing is written (a write would also renew the lease)
        from shiftgit.effects.approvals import now_iso
        from shiftgit.effects.runner import put

        brought: list[str] = []

        def change(ledger: Ledger) -> Ledger:
            brought.clear()
            for record in found.values():
                effect, where = record.effect, record.where
                if not _further(record, ledger):  # re-checked under the lock
                    continue
                mine = ledger.effect(effect.key)
                if record.problem is None:
                    ledger = put(ledger, _brought(effect, mine, where), now_iso())
                    state = effect.state if effect.state != "attempted" else "attempted there, outcome unknown here"
                    brought.append(f"effect {textsafe.quote(effect.key)}: {state} (recorded {where})")
                else:
                    ledger = put(ledger, _unknown_here(record, mine), now_iso())
                    brought.append(f"effect {textsafe.quote(effect.key)}: outcome unknown here, as its record {where} "
                                   f"could not be brought in; it will not run until `shiftgit effect reconcile "
                                   f"{effect.key} --state completed|failed|compensated --evidence TEXT`")
            return ledger

        store.update(run, change)
        lines += brought
    _remember(store, kept, commits)  # a record refused above is named once, not at every command
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
                data, ledger = store.current(self.run)  # as the write just made left them: no parse, no hash
                point = {"seq": ledger.checkpoint.seq} if ledger.checkpoint else None
                facts: dict[str, object] = {"checkpoint": point, "lease": dict(ledger.lease) if ledger.lease else None}
                commit = ledgerref.commit_ledger(store.repo, self.run, data, clone_id(store.repo), self.by, self.tip,
                                                 what="effects since checkpoint", facts=facts)
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


class Found(NamedTuple):
    """An effect record of another clone's ledger commit, with where it was recorded and its rank there. PROBLEM: why
    it could not be brought in (the schema refused it, its command holds a secret); EFFECT is then `_stub`'s."""
    effect: Effect
    where: str
    rank: tuple[int, int]
    problem: str | None = None


def _records(store: Store, commits: list[str], mine: Ledger) -> tuple[dict[str, Found], list[str]]:
    """Per key, the furthest-along effect record among COMMITS' ledgers (newest first: on a tie the newer commit's,
    and a record brought in before one that could not be); and a line for each record that cannot be brought in.
    Only ledgers of this very run count: the same id and creation time as MINE (two clones may each start a run
    named `demo`)."""
    from shiftgit.git.notestree import CatFile
    from shiftgit.repo import clean_env

    if not commits:
        return {}, []
    hosts = _hosts(store, commits)
    best: dict[str, Found] = {}
    refused: list[str] = []
    with CatFile(store.repo.root, clean_env()) as cat:
        answers = cat.get([f"{commit}:{ledgerref.FILE}" for commit in commits])
    checker = _Checker(mine)
    for commit, answer in zip(commits, answers, strict=True):
        where = f"on host {textsafe.quote(hosts.get(commit) or 'an unknown host')}, ledger commit {commit[:12]}"
        for item in _items(answer[2] if answer else b"", mine):
            effect, problem = checker.effect(item)
            if problem is not None:
                key = textsafe.quote(textsafe.one_line(str(item.get("key")), 80))
                refused.append(f"effect {key} ({where}) was not brought in: {problem}")
                found = _stub(item, where, problem)
            else:
                found = Found(effect, where, _rank(effect)) if effect is not None else None
            if found is not None and (found.effect.key not in best or _order(found) > _order(best[found.effect.key])):
                best[found.effect.key] = found
    return best, refused[:5]


def _order(found: Found) -> tuple[tuple[int, int], bool]:
    return found.rank, found.problem is None


def _stub(item: dict[str, Any], where: str, problem: str) -> Found | None:
    """What may be kept of a record that cannot be brought in: that its key was attempted, done or undone there
    (None: it failed there, so it may run again anyway, or its key is unusable). Its command, probe and outcome stay
    out: any of them may be what was refused."""
    from shiftgit.effects.approvals import now_iso, valid_kind, validate_key
    from shiftgit.effects.runner import REVERSIBILITY
    from shiftgit.errors import UsageError

    state, key, kind = item.get("state"), item.get("key"), item.get("kind")
    if state not in ("attempted", "unknown", "completed", "compensated") or not isinstance(key, str):
        return None
    try:
        validate_key(key)
    except UsageError:
        return None
    attempts = item.get("attempts")
    attempts = attempts if isinstance(attempts, int) and not isinstance(attempts, bool) and attempts >= 0 else 1
    kind = kind if isinstance(kind, str) and valid_kind(kind) else "unknown"
    reversibility = item.get("reversibility")
    reversibility = reversibility if reversibility in REVERSIBILITY else "irreversible"
    why = f"a record {where} says it was {state} there, but could not be brought in ({problem})"
    stub = Effect(key=key, kind=kind, reversibility=reversibility, state="unknown", result=textsafe.one_line(why, 600),
                  created_at=now_iso(), attempts=min(attempts, 1 << 30))
    return Found(stub, where, (attempts, EFFECT_RANK[str(state)]), problem)


def _unknown_here(found: Found, mine: Effect | None) -> Effect:
    """This ledger's record of FOUND's key (or FOUND's stub itself), made `unknown` with the stub's reason: a record
    elsewhere says it ran."""
    from shiftgit.effects.approvals import now_iso
    from shiftgit.effects.runner import HISTORY_CAP

    base, why, at = mine if mine is not None else found.effect, found.effect.result, now_iso()
    note = {"at": at, "state": "unknown", "result": why}
    return replace(base, state="unknown", result=why, updated_at=at, attempts=max(base.attempts, found.effect.attempts),
                   history=(*base.history, note)[-HISTORY_CAP:])


def _items(data: bytes, mine: Ledger) -> list[dict[str, Any]]:
    """The effect records of a ledger of MINE's run; service records stay out (a process lives on one machine:
    the one taking over starts its own, and another clone's record names a pid here that is not its process)."""
    try:
        document = rawjson.loads(data)
    except ValueError:
        return []
    if not isinstance(document, dict) or document.get("run") != mine.run:
        return []
    if document.get("created_at") != mine.created_at or not isinstance(document.get("effects"), list):
        return []
    return [item for item in document["effects"] if isinstance(item, dict) and item.get("kind") != "service"
            and item.get("state") in EFFECT_RANK and item.get("state") != "planned"]


class _Checker:
    """Each foreign record checked against the schema as this ledger would hold it, before it may be brought in."""

    def __init__(self, mine: Ledger) -> None:
        self.base = mine.to_dict()

    def effect(self, item: dict[str, Any]) -> tuple[Effect | None, str | None]:
        from shiftgit.ledger.commandsecrets import effect_secret
        from shiftgit.ledger.schema import schema_errors

        errors = schema_errors({**self.base, "effects": [item]})
        if errors:
            return None, f"its record breaks the schema: {textsafe.one_line(errors[0], 200)}"
        where = effect_secret(item)  # it would land in this ledger, in commits and in what this clone publishes
        if where is not None:
            return None, f"its command holds what looks like a secret ({where}); it stays where it was recorded"
        try:
            return Effect.from_dict(item), None
        except (TypeError, ValueError, KeyError) as exc:
            return None, f"its record breaks the schema: {textsafe.one_line(str(exc), 200)}"


def _hosts(store: Store, commits: list[str]) -> dict[str, str]:
    out = store.repo.git("log", "--no-walk=unsorted", "--format=%H %(trailers:key=Shift-Host,valueonly,separator=)",
                         *commits, check=False)
    return {line[:line.find(" ")]: line[line.find(" ") + 1:].strip() for line in out.splitlines() if " " in line}


def _further(found: Found, ledger: Ledger) -> bool:
    """FOUND is further along than LEDGER's record of its key (or LEDGER has none)."""
    mine = ledger.effect(found.effect.key)
    return mine is None or found.rank > _rank(mine)


def _rank(effect: Effect) -> tuple[int, int]:
    """A later attempt before any outcome of an earlier one (attempt 2 died mid-run: its `attempted` beats attempt
    1's `failed`), then the state's order. No clock: another machine's `updated_at` never decides a tie, the
    record here stays."""
    return effect.attempts, EFFECT_RANK.get(effect.state, -1)


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

def _seen(store: Store) -> list[str]:
    """The commits seen here, oldest first."""
    try:
        with open(store.repo.private(SEEN), encoding="ascii") as handle:
            return handle.read().split()
    except (OSError, UnicodeDecodeError):
        return []


def _remember(store: Store, kept: list[str], commits: list[str]) -> None:
    """Add COMMITS to KEPT (the seen list as read) and write it (a cache: a lost write only means reading those
    ledgers again)."""
    known = set(kept)
    fresh = [c for c in dict.fromkeys(commits) if c not in known]
    if not fresh:
        return
    path = store.repo.private(SEEN)
    kept = (kept + fresh)[-SEEN_KEPT:]
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="ascii") as handle:
            handle.write("\n".join(kept) + "\n")
        os.replace(tmp, path)
    except OSError:
        pass
