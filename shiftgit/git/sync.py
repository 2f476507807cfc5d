"""Many machines: share handoff notes, snapshot and ledger refs through a git remote; register the ledger merge driver.

`sync` fetches the remote's notes and `refs/shift/*` (forced, into private tracking refs under
`refs/shift-remote/<remote>/`, never over local refs), merges the remote notes into `refs/notes/shift`
(per commit: only one side's note is taken as is, two different notes are merged as JSON by
notemerge), swaps the local ref compare-and-swap to a notes commit with both tips as parents, merges
diverged snapshot refs the same way (a commit keeping both histories, our tree; for the ledger refs
`refs/shift/ledgers/<run>`, the newer ledger's tree), and pushes without
force. Any rejection, or a local ref that moved meanwhile, starts again from the fetch, a bounded
number of times with backoff. Two machines that sync in any order end with the same notes.

Nothing secret is pushed (defence in depth behind the checkpoint's own scan): before each push,
every blob the `refs/shift/*` refs would send passes the secret scanner (`secretscan`), and a ref
holding a finding stays here, reported in `refused`. `push_refs` is that push path, for every
caller that publishes `refs/shift/*`.
"""

from __future__ import annotations

import random
import shlex
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shiftgit.errors import GitError, UsageError
from shiftgit.git import archive, fence, handoff, ledgerref, secretscan
from shiftgit.git.fetchstate import mark_synced
from shiftgit.git.headview import is_ancestor
from shiftgit.git.notemerge import merge_note_texts
from shiftgit.git.notes import DATA_REF, NOTES_REF, note_blobs, read_notes
from shiftgit.git.notestree import (
    CatFile,
    git_env,
    id_width,
    note_text,
    notes_under,
    plan_trees,
    read_root,
    unpack,
)
from shiftgit.git.rawgit import object_id
from shiftgit.ledger.store import Store, write_atomic
from shiftgit.procs import module_argv
from shiftgit.repo import Repo, clean_env

MERGE_DRIVER = "shiftgit-ledger"
ATTRIBUTE = f"runs/*/ledger.json merge={MERGE_DRIVER}"
TRACKING = "refs/shift-remote"
SNAPSHOTS = "refs/shift/"
# Ref families a clone takes whole from the remote when it has none of its own: a run's saved conversation
# and kept check outputs (diverged ones merge like snapshots: both histories kept).
PACKED = 100  # new notes objects from here on are written as one pack, not one file each
CARRIED = ("refs/shift/context/", "refs/shift/outputs/", "refs/shift/archive")


# -- init: configuration ---------------------------------------------------------------------------

def configure(store: Store) -> list[str]:
    """Register the ledger merge driver and a notes fetch refspec per remote. Idempotent, repo-local."""
    repo = store.repo
    repo.git("config", "--local", f"merge.{MERGE_DRIVER}.name", "shiftgit: merge run ledgers by id")
    driver = f"{shlex.join(module_argv('shiftgit'))} merge-driver %O %A %B %P"
    repo.git("config", "--local", f"merge.{MERGE_DRIVER}.driver", driver)
    attributes = store.inside(".gitattributes")  # never through a symbolic link
    text = attributes.read_text(encoding="utf-8") if attributes.exists() else ""
    if ATTRIBUTE not in text.splitlines():
        glue = "\n" if text and not text.endswith("\n") else ""
        write_atomic(attributes, f"{text}{glue}{ATTRIBUTE}\n".encode())
    lines = [f"registered the ledger merge driver ({store.rel(attributes)})"]
    for remote in repo.git("remote").split():
        key, spec = f"remote.{remote}.fetch", notes_refspec(remote)
        if spec not in repo.git("config", "--local", "--get-all", key, check=False).splitlines():
            repo.git("config", "--local", "--add", key, spec)
            lines.append(f"git fetch {remote} now also fetches its notes into {TRACKING}/{remote}/notes/")
    return lines


def notes_refspec(remote: str) -> str:
    """A glob (so a remote without notes never fails a fetch) into a private ref (never over local notes)."""
    return f"+refs/notes/*:{TRACKING}/{remote}/notes/*"


def notes_refs(repo: Repo) -> list[str]:
    """Where handoff records live here: the machine records first (ours, then each remote's fetched copy),
    then the human notes (those written before the split carry the JSON on their last line)."""
    out = repo.git("for-each-ref", "--format=%(refname)", f"{TRACKING}/").split()
    return [DATA_REF, *sorted(r for r in out if r.endswith("/notes/shift-data")),
            NOTES_REF, *sorted(r for r in out if r.endswith("/notes/shift"))]


# -- sync ------------------------------------------------------------------------------------------

@dataclass
class Report:
    remote: str
    attempts: int = 0
    notes: str = "none"  # none | up-to-date | fast-forward | merged
    added: int = 0  # notes only the remote had
    merged: int = 0  # commits whose two different notes were merged
    total: int = 0
    snapshots: dict[str, str] = field(default_factory=dict)  # ref -> fast-forward | merged
    pushed: list[str] = field(default_factory=list)
    refused: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # ref -> [{path, rule}]: a secret
    fenced: dict[str, str] = field(default_factory=dict)  # run -> why its refs stay here: taken over elsewhere

    def to_dict(self) -> dict[str, Any]:
        return {"remote": self.remote, "attempts": self.attempts, "notes": {"result": self.notes, "added": self.added,
                "merged": self.merged, "total": self.total}, "snapshots": self.snapshots, "pushed": self.pushed,
                "refused": self.refused, "fenced": self.fenced}


def default_remote(repo: Repo) -> str:
    branch = repo.branch()
    upstream = repo.git("config", f"branch.{branch}.remote", check=False).strip() if branch else ""
    return upstream if upstream and upstream != "." else "origin"


def sync(repo: Repo, remote: str | None = None, retries: int = 8) -> Report:
    """Fetch, merge, push; again from the fetch on any rejection, at most `retries` more times."""
    name = remote or default_remote(repo)
    remotes = repo.git("remote").split()
    if name not in remotes:
        raise UsageError(f"no remote {name!r} here (remotes: {', '.join(remotes) or 'none'}); add one with "
                         f"`git remote add {name} URL` or name another: `shiftgit sync REMOTE`")
    report = Report(name)
    from shiftgit.git.repair import repair

    if repo.head() is not None:
        repair(repo.root, clean_env())  # notes a killed post-commit never wrote go out with the others
    for attempt in range(retries + 1):
        report.attempts = attempt + 1
        if _fetch(repo, name, last=attempt == retries) and _merge_all(repo, name, report) \
                and not _push(repo, name, report):
            mark_synced(repo, name)
            return report
        time.sleep(min(2.0, 0.05 * 2 ** attempt) * random.uniform(0.5, 1.0))
    raise GitError(["push", name], f"gave up after {retries + 1} attempts: the remote or the local refs kept "
                                   "moving; run `shiftgit sync` again")


def _fetch(repo: Repo, remote: str, last: bool = True) -> bool:
    """False when another fetch of the same tracking refs (a checkpoint's background publisher) held a ref's lock."""
    try:
        repo.git("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, notes_refspec(remote),
                 f"+{SNAPSHOTS}*:{TRACKING}/{remote}/shift/*")
    except GitError as exc:
        if last or "cannot lock ref" not in exc.stderr:
            raise
        return False
    return True


def _merge_all(repo: Repo, remote: str, report: Report) -> bool:
    """Merge the fetched refs into the local ones; False when a local ref moved meanwhile (retry)."""
    outcome = _merge_notes(repo, remote, report)
    if outcome is None:
        return False
    report.notes = outcome
    report.fenced = fenced_runs(repo, remote)
    for ref, how in _merge_snapshots(repo, remote, report.fenced).items():
        report.snapshots[ref] = how
    report.snapshots.update(_adopt(repo, remote))
    return True


def _merge_notes(repo: Repo, remote: str, report: Report) -> str | None:
    """Merge the machine records first, then the human notes (rendered again from the merged records)."""
    outcomes = []
    for ref in (DATA_REF, NOTES_REF):
        outcome = _merge_ref(repo, remote, ref, report)
        if outcome is None:
            return None
        outcomes.append(outcome)
    return max(outcomes, key=["none", "up-to-date", "fast-forward", "merged"].index)


def _merge_ref(repo: Repo, remote: str, ref: str, report: Report) -> str | None:
    """One notes ref. Each notes tree is listed once; the report's counts are the human notes'."""
    theirs_ref = f"{TRACKING}/{remote}/{ref.removeprefix('refs/')}"
    local, theirs = repo.ref(ref), repo.ref(theirs_ref)
    counted = ref == NOTES_REF
    if theirs is None or theirs == local or (local and is_ancestor(repo, theirs, local)):
        if counted:
            report.total = len(note_blobs(repo.root, ref)) if local else 0
        return "none" if local is None else "up-to-date"
    if local is None or is_ancestor(repo, local, theirs):
        other = note_blobs(repo.root, theirs_ref)
        if counted:
            report.added = len(set(other) - set(note_blobs(repo.root, ref) if local else ()))
            report.total = len(other)
        return "fast-forward" if _swap(repo, ref, theirs, local) else None
    tree = _merged_notes_tree(repo, ref, local, theirs, report if counted else Report(report.remote))
    commit = repo.commit_tree(tree, [local, theirs], f"shiftgit sync: merge notes from {remote}")
    return "merged" if _swap(repo, ref, commit, local) else None


def _merged_notes_tree(repo: Repo, ref: str, local: str, theirs: str, report: Report) -> str:
    """The tree of the union of both notes commits, two different notes of one commit merged (a human
    note is rendered again from the commit's merged record when there is one). Each tree is listed once;
    a note only the remote has keeps its blob (never read), only merged texts are new objects."""
    with CatFile(repo.root, git_env()) as cat:
        tip, _, root = read_root(cat, local)
        width = id_width(tip)
        mine = notes_under(cat, root, width, None)
        other = notes_under(cat, read_root(cat, theirs)[2], width, None)
        added = [c for c in other if c not in mine]
        differ = [c for c in other if c in mine and mine[c].oid != other[c].oid]
        found = cat.get([side[c].oid for c in differ for side in (mine, other)])  # ours, theirs, ours, ...
        texts = [note_text(c, blob) for c, blob in zip([c for c in differ for _ in (mine, other)], found, strict=True)]
        records = read_notes(repo.root, differ, DATA_REF) if ref == NOTES_REF and differ else {}
        wanted = {c: entry.oid for c, entry in mine.items()} | {c: other[c].oid for c in added}
        blobs: list[bytes] = []
        for commit, ours, remote in zip(differ, texts[0::2], texts[1::2], strict=True):
            record = handoff.parse_note(records.get(commit))
            text = handoff.note_text(record) if record is not None else merge_note_texts(ours, remote)
            if text != ours:
                blobs.append(text.encode())
                wanted[commit] = object_id("blob", blobs[-1], width)
        report.added, report.merged, report.total = len(added), len(differ), len(mine) + len(added)
        trees = plan_trees(cat, "", {}, wanted, width)  # built whole from the listings: nothing read again
    if not trees:
        return repo.git("rev-parse", f"{local}^{{tree}}").strip()
    objects = [("blob", body) for body in blobs] + [("tree", body) for _, body in trees]
    if len(objects) < PACKED:
        unpack(repo.root, git_env(), objects, width)  # a few loose objects, as a checkpoint's notes write
    else:
        _store_pack(repo, [(3 if kind == "blob" else 2, body) for kind, body in objects], width)
    return trees[-1][0]


def _store_pack(repo: Repo, objects: list[tuple[int, bytes]], width: int) -> None:
    """Write whole objects ((pack type, body): 2 tree, 3 blob) as one pack kept as it is (`git index-pack`):
    hundreds of trees at once, where loose objects (`unpack-objects`) cost a file each."""
    import hashlib
    import zlib

    parts = [b"PACK", (2).to_bytes(4, "big"), len(objects).to_bytes(4, "big")]
    for code, body in objects:
        header, size = bytearray(), len(body) >> 4
        byte = code << 4 | len(body) & 0x0F
        while size:
            header.append(byte | 0x80)
            byte, size = size & 0x7F, size >> 7
        header.append(byte)
        parts += [bytes(header), zlib.compress(body, 1)]
    pack = b"".join(parts)
    digest = (hashlib.sha256 if width == 64 else hashlib.sha1)(pack).digest()
    repo.git("index-pack", "--stdin", input=pack + digest)


def fenced_runs(repo: Repo, remote: str) -> dict[str, str]:
    """Runs whose ledger ref here carries an older owner epoch than the remote's: they were taken over there,
    and nothing this clone recorded for them since may land on the remote (runs/lease.py)."""
    found = {}
    for name in _refs(repo, ledgerref.LEDGERS):
        claims = fence.claims(repo.git, name)
        mine = max((c.epoch for c in claims if c.ref == ledgerref.LEDGERS + name), default=0)
        theirs = [c for c in claims if c.ref.startswith(f"{TRACKING}/{remote}/") and c.epoch > mine]
        if theirs:
            found[name] = fence.fenced_line(name, mine, max(theirs))
    return found


def _merge_snapshots(repo: Repo, remote: str, fenced: Mapping[str, str]) -> dict[str, str]:
    """Snapshot refs both sides have: fast-forward to theirs, or keep both histories in a merge commit."""
    prefix = f"{TRACKING}/{remote}/shift/"
    theirs = _refs(repo, prefix)
    done: dict[str, str] = {}
    for name, mine in _refs(repo, SNAPSHOTS).items():
        other = theirs.get(name)
        ref = SNAPSHOTS + name
        if other is None or other == mine or is_ancestor(repo, other, mine):
            continue
        if is_ancestor(repo, mine, other):
            if _swap(repo, ref, other, mine):
                done[ref] = "fast-forward"
            continue
        if name.split("/", 1)[-1] in fenced and name.startswith(("ledgers/", "snapshots/")):
            continue  # taken over elsewhere: what this clone recorded since stays here, unmerged and unpushed
        tree = repo.git("rev-parse", f"{mine}^{{tree}}").strip()
        message = f"shiftgit sync: keep both histories of {ref}"
        if ref.startswith(ledgerref.LEDGERS):  # two machines checkpointed one run: the newer ledger on top
            tree = ledgerref.newer_tree(repo, mine, other)
            message += "\n\n" + fence.trailers(ledgerref.lease_of(repo.show(f"{tree}:{ledgerref.FILE}") or b""))
        elif ref == archive.ARCHIVE_REF:  # two machines archived runs: every run directory kept
            tree = archive.merged_tree(repo, mine, other)
        commit = repo.commit_tree(tree, [mine, other], message.rstrip("\n"))
        if _swap(repo, ref, commit, mine):
            done[ref] = "merged"
    return done


def _adopt(repo: Repo, remote: str) -> dict[str, str]:
    """Refs of the CARRIED families only the remote has: created here, at the remote's commit."""
    mine = _refs(repo, SNAPSHOTS)
    theirs = {SNAPSHOTS + name: oid for name, oid in _refs(repo, f"{TRACKING}/{remote}/shift/").items()
              if name not in mine}
    return {ref: "fetched" for ref, oid in theirs.items() if ref.startswith(CARRIED) and _swap(repo, ref, oid, None)}


def push_refs(repo: Repo, remote: str,
              fenced: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, list[dict[str, str]]]]:
    """The refspecs to push (notes and records, and every `refs/shift/*` ref that leaks nothing and whose run
    was not taken over elsewhere), and the refs refused."""
    specs = [f"{ref}:{ref}" for ref in (NOTES_REF, DATA_REF) if repo.ref(ref)]
    held = fenced if fenced is not None else fenced_runs(repo, remote)
    refs = [SNAPSHOTS + name for name in _refs(repo, SNAPSHOTS)
            if not (name.startswith(("ledgers/", "snapshots/")) and name.split("/", 1)[-1] in held)]
    refused = secretscan.refused_refs(repo, refs, remote, TRACKING)
    specs += [f"{ref}:{ref}" for ref in refs if ref not in refused]
    return specs, {ref: [w.to_dict() for w in found] for ref, found in refused.items()}


def _push(repo: Repo, remote: str, report: Report) -> bool:
    """Push without force; True when any ref was rejected (the caller starts again from the fetch)."""
    specs, report.refused = push_refs(repo, remote, report.fenced)
    if not specs:
        return False
    argv = ["push", "--porcelain", "--no-verify", remote, *specs]
    proc = subprocess.run(["git", *argv], cwd=repo.root, capture_output=True, text=True, env=clean_env())
    verdicts = [line.split("\t")[:2] for line in proc.stdout.splitlines() if line.count("\t") >= 2]
    if proc.returncode != 0 and not any(flag == "!" for flag, _ in verdicts):
        raise GitError(argv, proc.stderr)  # the push itself failed (network, permissions): say so
    report.pushed = sorted(set(report.pushed) | {ref.split(":")[-1] for flag, ref in verdicts if flag not in "!="})
    return any(flag == "!" for flag, _ in verdicts)


def _refs(repo: Repo, prefix: str) -> dict[str, str]:
    out = repo.git("for-each-ref", "--format=%(objectname) %(refname)", prefix)
    return {name[len(prefix):]: oid for oid, name in (line.split(" ", 1) for line in out.splitlines())}


def _ok(repo: Repo, *args: str) -> bool:
    try:
        repo.git(*args)
    except GitError:
        return False
    return True


def _swap(repo: Repo, ref: str, new: str, old: str | None) -> bool:
    """Compare-and-swap: False when the ref moved since we read it."""
    return _ok(repo, "update-ref", "-m", "shiftgit sync", ref, new, old or repo.null_id)
