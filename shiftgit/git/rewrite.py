"""post-rewrite: after `commit --amend` and rebase, each new commit carries the handoff its own ledger records.

Git runs post-commit for the amended commit and for every rebase pick, then copies the old
notes onto the new commits (`notes.rewriteMode=ignore` keeps a note post-commit already wrote),
then runs post-rewrite with "OLD NEW" lines on stdin. Here every new commit's note is computed
again from the commit alone (`githooks.note_of`) and the notes ref is updated once, compare-and-
swap; a copied note that the new commit no longer earns is removed. A skip reason survives
(from SHIFT_SKIP, the new commit's note, or an old one's) when the new commit carries no
checkpoint of its own.

The pre-commit framework runs post-rewrite without stdin (it sets PRE_COMMIT_REWRITE_COMMAND):
then the pairs come from the reflog for an amend (HEAD@{1} -> HEAD) and, for a rebase, the new
commits are those of ORIG_HEAD..HEAD, whose copied notes stand in for the old ones.
"""

from __future__ import annotations

from pathlib import Path

from shiftgit.git import handoff
from shiftgit.git import view as gitview
from shiftgit.git.context import Context
from shiftgit.git.notes import DATA_REF, NOTES_REF, read_notes, write_handoff
from shiftgit.git.view import Objects

MAX_DERIVED = 1000  # commits recomputed when git gave no pairs (a rebase through the pre-commit framework)


def post_rewrite(ctx: Context) -> int:
    pairs = _pairs(ctx)
    if not pairs:
        return 0
    olds: dict[str, list[str]] = {}
    for old, new in pairs:
        olds.setdefault(new, []).extend([old] if old else [])
    commits = [*olds, *(o for group in olds.values() for o in group)]
    human, data = read_notes(ctx.root, commits, NOTES_REF), read_notes(ctx.root, commits, DATA_REF)
    updates: dict[str, tuple[str, str] | None] = {}
    with Objects(ctx.root, ctx.env) as objects:
        for new, group in olds.items():
            changes = gitview.ledger_changes(objects, new)
            kept = _kept_reason([data, human], [new, *group])
            pair = _note(changes, ctx.environ.get("SHIFT_SKIP") or None, kept)
            if (pair is None and (new in human or new in data)) or (
                    pair is not None and pair != (human.get(new), data.get(new))):
                updates[new] = pair
    if updates:
        write_handoff(ctx.root, updates, "shiftgit: handoffs of rewritten commits")
    from shiftgit.errors import ShiftError
    from shiftgit.git import repair

    try:
        repair.repair(Path(ctx.root), ctx.env, ["--max-count=200", "HEAD"])  # notes a killed post-commit never wrote
    except ShiftError as err:  # the rewrite itself is done; `shiftgit notes repair` can be run by hand
        ctx.say(f"shiftgit: post-rewrite: notes repair skipped: {err}")
    return 0


def _note(changes: gitview.LedgerChanges, env_reason: str | None, kept_reason: str | None) -> tuple[str, str] | None:
    """SHIFT_SKIP applies as in post-commit; a kept reason only where the commit carries no checkpoint."""
    document = handoff.note_document(changes, env_reason)
    if env_reason is None and kept_reason and not handoff.carries_checkpoint(document):
        document = handoff.note_document(changes, kept_reason)
    return handoff.pair(document) if document is not None else None


def _kept_reason(refs: list[dict[str, str]], commits: list[str]) -> str | None:
    """The skip reason of the new commit's current record (post-commit's, or git's copy), else an old one's;
    from the machine record, or from a note written before the split (JSON on its last line)."""
    for commit in commits:
        for notes in refs:
            reason = handoff.skip_reason(handoff.parse_note(notes.get(commit)))
            if reason:
                return reason
    return None


def _pairs(ctx: Context) -> list[tuple[str | None, str]]:
    """(old, new) commit ids: from stdin, else derived (see the module's doc)."""
    text = "" if ctx.stdin.isatty() else ctx.stdin.read()
    pairs: list[tuple[str | None, str]] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2:
            pairs.append((fields[0], fields[1]))
    if pairs:
        return pairs
    kind = (ctx.args[:1] or [ctx.environ.get("PRE_COMMIT_REWRITE_COMMAND", "")])[0]
    env = ctx.env
    if kind == "amend":
        old, new = gitview.git(ctx.root, env, "rev-parse", "HEAD@{1}", "HEAD").split()
        return [(old, new)]
    if kind == "rebase":
        out = gitview.git(ctx.root, env, "rev-list", f"--max-count={MAX_DERIVED}", "ORIG_HEAD..HEAD")
        return [(None, new) for new in out.split()]
    return []
