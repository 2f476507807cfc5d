"""Which owner epoch of a run this clone can see: the epochs its ledger refs carry. Stdlib only (the commit gate).

Every commit on `refs/shift/ledgers/<run>` carries `Shift-Epoch: N` and `Shift-Holder: WHO` trailers
(the ledger's lease when it was committed). One `for-each-ref` over this clone's ref and each remote's
fetched copy (`refs/shift-remote/<remote>/shift/ledgers/<run>`, fetched by `sync`, by the publisher and
before each write: `fetch`) tells a writer whether someone took the run over since its own epoch.
"""

from __future__ import annotations

from _collections_abc import Mapping  # = collections.abc's, without the collections package

TYPE_CHECKING = False  # typing and pathlib cost ~4 and ~5 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any, NamedTuple
else:
    from shiftgit.tuples import NamedTuple

LEDGERS = "refs/shift/ledgers/"
TRACKING = "refs/shift-remote/"
SEP = "\x1f"
FORMAT = SEP.join(("%(refname)", "%(trailers:only,unfold,separator=%x1e)", "%(committerdate:iso-strict)",
                   "%(objectname)"))


class Claim(NamedTuple):
    """An owner epoch some ledger ref carries, who held it and where it was seen."""

    epoch: int
    holder: str
    ref: str
    at: str
    until: str = ""  # when that holder's lease expires (its last write plus the lease time)
    commit: str = ""  # the ledger-ref commit carrying it (for-each-ref only)

    def describe(self) -> str:
        return f"epoch {self.epoch}, held by {shown(self.holder)} (seen on {self.ref}, {self.at})"


def trailers(lease: Any) -> str:
    """The trailer lines a ledger-ref commit carries for this lease ('' without one)."""
    if not isinstance(lease, Mapping) or not isinstance(lease.get("epoch"), int):
        return ""
    until = f"Shift-Lease-Until: {lease['expires_at']}\n" if lease.get("expires_at") else ""
    return f"Shift-Epoch: {lease['epoch']}\nShift-Holder: {holder_text(lease.get('holder'))}\n{until}"


def holder_text(holder: Any) -> str:
    """`host:/work/tree (pid 123, session s-1)`: one line naming a holder."""
    if not isinstance(holder, Mapping):
        return "unknown"
    extra = [f"pid {holder['pid']}" for _ in [0] if holder.get("pid")]
    extra += [f"session {holder['session']}" for _ in [0] if holder.get("session")]
    where = f"{holder.get('host') or '?'}:{holder.get('worktree') or '?'}"
    return f"{where} ({', '.join(extra)})" if extra else where


def shown(holder: Any) -> str:
    """A holder as one quoted value for a message: its host and work tree are whatever the machine that published
    the ledger ref wrote (a `Shift-Holder` trailer, a ledger's lease), so they never read as shiftgit's words
    and no control character in them reaches a terminal or an agent raw."""
    from shiftgit import textsafe  # here: only a refusal shows a holder; the commit gate's usual path does not

    if not isinstance(holder, str | Mapping):
        return "unknown"
    return textsafe.quote(holder if isinstance(holder, str) else holder_text(holder), 300)


def tips(git: Callable[..., str], run: str) -> list[Claim]:
    """The run's ledger refs here (this clone's and each remote's copy), one git call; epoch 0 without a trailer."""
    out = git("for-each-ref", f"--format={FORMAT}", LEDGERS + run, f"{TRACKING}*/shift/ledgers/{run}")
    found = []
    for line in out.split("\n"):
        fields = line.split(SEP)
        if len(fields) != 4:
            continue
        ref, trailers_text, at, commit = fields
        meta = dict(t.partition(": ")[::2] for t in trailers_text.split("\x1e") if ": " in t)
        epoch = meta.get("Shift-Epoch", "").strip()
        found.append(Claim(int(epoch) if epoch.isdigit() else 0, meta.get("Shift-Holder", "").strip() or "unknown",
                           ref, at, meta.get("Shift-Lease-Until", "").strip(), commit))
    return found


def claims(git: Callable[..., str], run: str) -> list[Claim]:
    """Every epoch the run's ledger refs here carry (this clone's and each remote's copy)."""
    return [claim for claim in tips(git, run) if claim.epoch > 0]


def place(holder: str) -> str:
    """`host:/work/tree` of a holder's text (without the calling process and session)."""
    return holder.split(" (", 1)[0]


def rival(claim: Claim | None, epoch: int, where: str) -> bool:
    """`claim` fences a writer of `epoch` at `where` (host:worktree): a newer epoch, or this one held elsewhere."""
    if claim is None or claim.epoch < epoch or claim.epoch == 0:
        return False
    return claim.epoch > epoch or place(claim.holder) != where


def claim_of_commit(ref: str, data: bytes | None) -> Claim | None:
    """The claim a ledger-ref commit's raw bytes carry (read with `cat-file --batch`, no process of its own)."""
    if not data:
        return None
    text = data.decode("utf-8", "replace")
    meta = dict(line.partition(": ")[::2] for line in text.split("\n\n", 1)[-1].splitlines() if ": " in line)
    epoch = meta.get("Shift-Epoch", "").strip()
    if not epoch.isdigit():
        return None
    at = next((line.rsplit(" ", 2)[-2] for line in text.split("\n\n", 1)[0].splitlines()
               if line.startswith("committer ")), "")
    return Claim(int(epoch), meta.get("Shift-Holder", "").strip() or "unknown", ref, at,
                 meta.get("Shift-Lease-Until", "").strip())


def newest(git: Callable[..., str], run: str) -> Claim | None:
    found = claims(git, run)
    return max(found, key=lambda c: (c.epoch, c.ref.startswith(LEDGERS))) if found else None


def newer_than(git: Callable[..., str], run: str, epoch: int) -> Claim | None:
    """The newest epoch visible here when it is newer than `epoch` (the writer is fenced), else None."""
    claim = newest(git, run)
    return claim if claim is not None and claim.epoch > epoch else None


def fenced_line(run: str, epoch: int, claim: Claim) -> str:
    if claim.epoch == epoch:
        return (f"run {run} is held by {shown(claim.holder)} in owner epoch {epoch} (seen on {claim.ref}); this "
                f"process took the same epoch and may not write to it: `shiftgit resume {run} --take-over` makes this "
                "place its owner (the other holder's writes are refused from then on)")
    return (f"run {run} was taken over: {claim.describe()}; this process holds epoch {epoch} and may no longer "
            f"write to it (`shiftgit resume {run}` here shows the newer record)")


def fetch(root: Path, remote: str, run: str, env: Mapping[str, str], timeout: float) -> str | None:
    """Fetch the run's ledger ref from `remote`, bounded; None when done, else why not (the caller warns)."""
    spec = f"+{LEDGERS}{run}:{TRACKING}{remote}/shift/ledgers/{run}"
    argv = ["git", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, spec]
    import subprocess  # here: the commit gate imports this module and never fetches

    try:
        proc = subprocess.Popen(argv, cwd=root, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        return f"could not run git fetch: {exc}"
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        import os
        import signal

        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return f"{remote} did not answer within {timeout:g} s"
    if proc.returncode == 0:
        return None
    text = err.decode("utf-8", "replace")
    if "couldn't find remote ref" in text:
        return None  # nothing published for this run yet: nobody took it over there
    if "cannot lock ref" in text:
        return None  # another fetch (a sync, the background publisher) was updating the same ref just now
    return (text.strip().splitlines() or ["git fetch failed"])[-1][:200]


REJECTED = "rejected"


def push(root: Path, remote: str, run: str, commit: str, env: Mapping[str, str], timeout: float) -> str | None:
    """Push an owner-epoch claim to `remote`'s ledger ref without force, bounded: the remote's compare-and-swap.

    None when it landed; REJECTED when the remote's ref moved since this clone fetched it (another clone took
    it first); else why it could not be pushed (the caller warns and goes on)."""
    argv = ["git", "push", "--quiet", "--porcelain", "--no-verify", remote, f"{commit}:{LEDGERS}{run}"]
    import subprocess  # here: the commit gate imports this module and never pushes

    try:
        proc = subprocess.run(argv, cwd=root, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        return f"{remote} did not answer within {timeout:g} s"
    except OSError as exc:
        return f"could not run git push: {exc}"
    if proc.returncode == 0:
        return None
    out = proc.stdout.decode("utf-8", "replace")
    if "[rejected]" in out or "[remote rejected]" in out:
        return REJECTED
    text = proc.stderr.decode("utf-8", "replace")
    return (text.strip().splitlines() or ["git push failed"])[-1][:200]
