"""`shiftgit notes repair [RANGE]`: recompute the handoff notes that commits lack.

A commit's note and record are pure functions of the commit (git/handoff.py), written by post-commit.
A post-commit killed before its write (or a commit made with hooks off) leaves a checkpointed commit
without them. Repair walks the commits of RANGE that change a ledger (`rev-list --full-history RANGE --
.shift/runs`), computes each one's record from its tree against its first parent's, and writes the
missing human note and machine record, both refs in one compare-and-swap. A note already there is
kept as it is (a note written before the split keeps its JSON, which readers still read); a SHIFT_SKIP
reason cannot be recomputed (it lived in the committer's environment), so a commit that only skipped the
gate is left alone. `sync` and post-rewrite run it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from shiftgit.errors import GitError, UsageError
from shiftgit.git import handoff
from shiftgit.git import view as gitview
from shiftgit.git.notes import DATA_REF, NOTES_REF, read_notes, write_handoff
from shiftgit.git.view import Objects

DEFAULT_RANGE = ("--max-count=1000", "HEAD")  # the newest commits first; a range names more
RUNS = ".shift/runs"


def ledger_commits(root: Path, env: Mapping[str, str], spec: Iterable[str]) -> list[str]:
    """The commits of a rev-list range that change some run's ledger, newest first."""
    args = list(spec)
    if any(a.startswith("-") and not a.startswith("--max-count=") for a in args):
        raise UsageError(f"notes repair: {' '.join(args)!r} is not a range; give one like `main..HEAD` or `HEAD~20..`")
    try:
        out = gitview.git(root, env, "rev-list", "--full-history", *args, "--", RUNS)
    except GitError as err:
        raise UsageError(f"notes repair: git knows no range {' '.join(args)!r} here ({err.stderr.strip()[:200]}); "
                         "give one like `main..HEAD`") from None
    return out.split()


def records(root: Path, env: Mapping[str, str], commits: Iterable[str]) -> dict[str, dict[str, Any]]:
    """commit -> its record, recomputed from the commit (commits that earn none are left out)."""
    out = {}
    with Objects(root, env) as objects:
        for commit in commits:
            document = handoff.note_document(gitview.ledger_changes(objects, commit), None)
            if document is not None:
                out[commit] = document
    return out


def repair(root: Path, env: Mapping[str, str], spec: Iterable[str] = DEFAULT_RANGE) -> list[dict[str, Any]]:
    """Write the missing notes and records of RANGE; returns what was written: [{commit, wrote}]."""
    commits = ledger_commits(root, env, spec)
    if not commits:
        return []
    human, data = read_notes(root, commits, NOTES_REF), read_notes(root, commits, DATA_REF)
    lacking = [c for c in commits if c not in human or (c not in data and handoff.parse_note(human[c]) is None)]
    found = records(root, env, lacking)
    updates: dict[str, tuple[str, str]] = {}
    done = []
    for commit, document in found.items():
        note, record = handoff.pair(document)
        wrote = [name for name, have in (("note", commit in human), ("record", commit in data)) if not have]
        if commit in human and handoff.parse_note(human[commit]) is not None:
            wrote = []  # an old note: its JSON is the record
        if wrote:
            updates[commit] = (human.get(commit, note), data.get(commit, record))
            done.append({"commit": commit, "wrote": wrote})
    if updates:
        write_handoff(root, updates, f"shiftgit: notes repair ({len(updates)} commit(s))")
    return done
