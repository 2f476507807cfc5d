"""`sync` and `merge-driver`: many machines, many branches."""

from __future__ import annotations

import sys
from typing import Any

import click

from shiftgit.cli.common import emit, json_option
from shiftgit.cli.common import store as _store
from shiftgit.errors import ShiftError

# -- sync and ledger merges (issue 6) ------------------------------------------------------------

@click.command("merge-driver")
@click.argument("base", type=click.Path(dir_okay=False))
@click.argument("ours", type=click.Path(dir_okay=False, exists=True))
@click.argument("theirs", type=click.Path(dir_okay=False, exists=True))
@click.argument("path", required=False)
def merge_driver(base: str, ours: str, theirs: str, path: str | None) -> None:
    """Merge two branches' copies of a run ledger by id; git runs it (`init` registers it).

    Writes the merged ledger into OURS and exits 0; on a real conflict (a field both sides changed
    differently) OURS holds valid JSON with our value, each conflict is named on stderr, exit 1.

    \b
    Example (what `shiftgit init` configures):
      git config merge.shiftgit-ledger.driver "python -m shiftgit merge-driver %O %A %B %P"
    """
    from pathlib import Path

    from shiftgit.ledger import merge
    from shiftgit.ledger.model import canonical_bytes
    from shiftgit.ledger.schema import parse_ledger, schema_errors
    from shiftgit.ledger.store import write_atomic

    where = path or ours
    sides = [parse_ledger(Path(p).read_bytes(), f"{where} ({side})").to_dict()
             for p, side in ((ours, "ours"), (theirs, "theirs"))]
    try:
        common = parse_ledger(Path(base).read_bytes(), f"{where} (base)").to_dict()
    except (OSError, ShiftError):  # add/add (empty base) or an unreadable ancestor: merge without one
        common = None
    result = merge.merge_ledgers(common, sides[0], sides[1])
    problems = schema_errors(result.document)
    if problems:  # a bug in the merge, not bad input: keep the traceback, leave OURS alone
        raise AssertionError("merged ledger is invalid: " + "; ".join(problems))
    write_atomic(Path(ours), canonical_bytes(result.document))
    for conflict in result.conflicts:
        click.echo(f"shiftgit: merge conflict: {conflict.line(where)}", err=True)
    sys.exit(1 if result.conflicts else 0)


@click.command("sync")
@click.argument("remote", required=False)
@json_option
def sync_command(remote: str | None, as_json: bool) -> None:
    """Share handoff notes and snapshots through a remote: fetch, merge by id, push (never forced).

    REMOTE defaults to the current branch's upstream remote, else origin. Retries from the fetch
    when the remote moved meanwhile. A refs/shift/ ref that would push what looks like a secret
    stays here (exit 1, naming the ref, the file and the rule); everything else is pushed.

    \b
    Example:
      shiftgit sync origin
    """
    from shiftgit import textsafe
    from shiftgit.git import sync

    store = _store(require=False)
    report = sync.sync(store.repo, remote)
    brought = _bring_effects(store)
    if as_json:
        emit(report.to_dict())
        sys.exit(1 if report.refused else 0)
    click.echo(f"synced with {report.remote}: notes {report.notes} ({report.added} from the remote, "
               f"{report.merged} merged, {report.total} in all)")
    for ref, how in sorted(report.snapshots.items()):
        click.echo(f"  {ref}: {how}")
    if report.pushed:
        click.echo(f"  pushed {', '.join(report.pushed)}")
    for line in report.fenced.values():
        click.echo(f"shiftgit: not pushed: {line}", err=True)
    from shiftgit.cli.writes import brought as say_brought

    say_brought(click.echo, brought)
    for ref, found in sorted(report.refused.items()):
        what = ", ".join(f"{textsafe.one_line(f['path'])} ({f['rule']})" for f in found[:5])
        click.echo(f"shiftgit: not pushed: {ref} holds what looks like a secret: {what}; drop the ref "
                   f"(`git update-ref -d {ref}`) or remove the secret, then sync again", err=True)
    sys.exit(1 if report.refused else 0)


def _bring_effects(store: Any) -> list[str]:
    """The effects the fetch brought that this work tree's active run lacks, brought into its ledger now
    (runs/foreign.py): `effect list` and `status` then show them before anything else runs."""
    from shiftgit.recovery.takeover import bring_effects

    try:
        run = store.active_run()
    except ShiftError:  # no .shift/ here
        return []
    return bring_effects(store, run) if run else []


# == verify, resume, rollback, trust (issue 4: the replacement-process test) ==================
