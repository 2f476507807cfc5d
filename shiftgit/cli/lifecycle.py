"""A run's whole life: archive, runs, gc, insights, review, confirm, memory."""

from __future__ import annotations

from typing import Any

import click

from shiftgit.cli.common import Count, emit, json_option, resolve, run_option, terminal
from shiftgit.cli.common import store as _store
from shiftgit.cli.runs import constraint


@click.command("archive")
@click.argument("run_id", metavar="RUN")
@json_option
def archive_cmd(run_id: str, as_json: bool) -> None:
    """Move a stopped or finished run's ledger out of the work tree into refs/shift/archive.

    `finish` does this by itself; commit the removal it leaves (the commit gate accepts it).

    \b
    Example:
      shiftgit archive fix-login && git commit -am "archive fix-login"
    """
    from shiftgit.ledger.store import validate_run_id
    from shiftgit.runs.archive import archive_run

    store = _store()
    done = archive_run(store, validate_run_id(run_id))
    if as_json:
        emit({"run": done.run, "commit": done.commit, "status": done.status, "ref": "refs/shift/archive"})
        return
    click.echo(f"archived {done.run} ({done.status}) in refs/shift/archive {done.commit[:12]}; commit the removal "
               f"of {store.rel(store.ledger_path(done.run).parent)}")


@click.command("runs")
@click.option("--status", help="Only runs with this status (active, stopped, completed, blocked, abandoned).")
@click.option("--stop-reason", "stop_reason", help="Only runs stopped for this reason.")
@click.option("--since", metavar="DATE", help="Only runs updated since DATE (YYYY-MM-DD or ISO time).")
@click.option("--archived", is_flag=True, help="Include the archived runs (refs/shift/archive).")
@json_option
def runs_cmd(status: str | None, stop_reason: str | None, since: str | None, archived: bool, as_json: bool) -> None:
    """List the runs here, and with --archived the archived ones.

    \b
    Example:
      shiftgit runs --archived --stop-reason blocked_external --since 2026-11-01
    """
    from shiftgit.runs import archive

    filters = archive.Filters(status, stop_reason, archive.parse_since(since), archived)
    rows = archive.list_runs(_store(), filters)
    emit({"runs": rows}) if as_json else click.echo(terminal(archive.table(rows)))


@click.command("gc")
@click.option("--dry-run", "dry_run", is_flag=True, help="List what would be dropped; change nothing.")
@json_option
def gc_cmd(dry_run: bool, as_json: bool) -> None:
    """Apply the retention policy (.shift/config.json "retention") to snapshots, rescue refs and memory.

    Keeps the last keep_last (20) snapshots of an active run, a finished run's final checkpoint always
    and its other snapshots finished_days (14), a failed run's failed_days (90), rescue refs rescue_days
    (30). Nothing reachable from a branch, a tag, a note or the archive is ever dropped.

    \b
    Example:
      shiftgit gc --dry-run
    """
    from shiftgit.runs import retention

    report = retention.gc(_store(), dry_run=dry_run)
    emit(report) if as_json else click.echo(retention.text(report))


@click.command("insights")
@click.option("--since", metavar="DATE", help="Only runs updated since DATE.")
@click.option("--suggest", "template", metavar="NAME", help="Show the template change the clusters suggest.")
@click.option("--apply", "apply_", is_flag=True, help="With --suggest: write it to .shift/templates/NAME.json.")
@click.option("--min", "minimum", type=Count(min=1), default=2, show_default=True,
              help="Runs a cluster needs to count as recurring.")
@json_option
def insights_cmd(since: str | None, template: str | None, apply_: bool, minimum: int, as_json: bool) -> None:
    """Recurring friction over current and archived runs, each with a suggested change to the next contract.

    \b
    Example:
      shiftgit insights --since 2026-11-01
      shiftgit insights --suggest billing            # show the diff
      shiftgit insights --suggest billing --apply    # write it
    """
    from shiftgit.errors import UsageError
    from shiftgit.runs import insights
    from shiftgit.runs.archive import parse_since

    if apply_ and not template:
        raise UsageError("--apply writes a template: give its name with --suggest NAME; nothing was written")
    store = _store()
    clusters = insights.clusters(store, parse_since(since), minimum)
    if template is None:
        emit({"clusters": clusters}) if as_json else click.echo(terminal(insights.text(clusters)))
        return
    proposal = insights.suggest(store, template, clusters, apply=apply_)
    if as_json:
        emit(proposal)
        return
    click.echo(terminal(proposal["diff"] or f"no change suggested for template {template}"))
    if proposal["written"]:
        click.echo(f"wrote {proposal['path']}")
    elif proposal["diff"]:
        click.echo(f"to write it: shiftgit insights --suggest {template} --apply")


@click.group("review")
def review() -> None:
    """Review feedback that follows the job: it reaches the briefing, and reopens a finished run."""


@review.command("add")
@click.argument("words", nargs=-1, required=True, metavar="[RUN] TEXT")
@click.option("--file", "path", metavar="PATH", help="The file the feedback is about.")
@click.option("--line", type=Count(min=1), help="The line in --file.")
@click.option("--by", help="Who gives the feedback.")
@json_option
def review_add(words: tuple[str, ...], path: str | None, line: int | None, by: str | None, as_json: bool) -> None:
    """Record review feedback on a run (default: the run discovery picks).

    \b
    Example:
      shiftgit review add fix-login "rename sub() to subtract()" --file calc.py --line 5 --by rita@example.com
    """
    from shiftgit.errors import UsageError
    from shiftgit.runs import reviews

    if len(words) > 2:
        raise UsageError("give the run and the text as two arguments (quote the text); nothing was recorded")
    store = _store()
    run = words[0] if len(words) == 2 else resolve(store, None)
    added = reviews.add_review(store, run, words[-1], file=path, line=line, by=by)
    if as_json:
        emit({"run": run, "review": added.review.to_dict(), "reopened": added.reopened})
        return
    click.echo(f"review {added.review.id} on {run}" + (" (the run is reopened: status active)" if added.reopened
                                                        else ""))


@review.command("resolve")
@click.argument("review_id", metavar="ID")
@click.option("--reason", required=True, help="How it was addressed.")
@run_option
@json_option
def review_resolve(review_id: str, reason: str, run: str | None, as_json: bool) -> None:
    """Close a review with the reason.

    \b
    Example:
      shiftgit review resolve r-1a2b3c4d5e6f --reason "renamed in 3f2a1c"
    """
    from shiftgit.runs import reviews

    owner, record = reviews.resolve_review(_store(), review_id, reason, run)
    emit({"run": owner, "review": record.to_dict()}) if as_json else click.echo(f"resolved {record.id} on {owner}")


@click.command("confirm")
@click.argument("run_id", required=False, metavar="[RUN]")
@click.option("--by", help="The owner who confirms (required).")
@click.option("--correct", "correction", metavar="TEXT",
              help="A correction instead of agreement (kept as an amendment).")
@json_option
def confirm_cmd(run_id: str | None, by: str | None, correction: str | None, as_json: bool) -> None:
    """The owner confirms (or corrects) a milestone checkpointed with --milestone --confirm.

    \b
    Example:
      shiftgit confirm fix-login --by owner@example.com
      shiftgit confirm --by owner@example.com --correct "keep the old endpoint too"
    """
    from shiftgit.runs import reviews

    store = _store()
    record = reviews.confirm(store, resolve(store, run_id), by, correction)
    if as_json:
        emit(record.to_dict())
        return
    click.echo(f"milestone #{record.seq} {record.state} by {record.by}")


@click.group("memory")
def memory() -> None:
    """Repository memory: standing rules promoted from runs (`constraint promote`)."""


@memory.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include expired entries.")
@json_option
def memory_list(show_all: bool, as_json: bool) -> None:
    """List the standing rules.

    \b
    Example:
      shiftgit memory list --json
    """
    from shiftgit.runs import memory as mem

    store = _store()
    entries: list[dict[str, Any]] = mem.read(store)["entries"] if show_all else mem.live(store)
    if as_json:
        emit({"entries": entries})
        return
    for e in entries:
        click.echo(terminal(f"{e['id']}  {e['text']}  (from {e['origin'].get('run')}, approved by {e['approved_by']}"
                            + (f", until {e['expires_at']})" if e.get("expires_at") else ")")))
    if not entries:
        click.echo("no standing rules")


@memory.command("expire")
@click.argument("entry_id", metavar="ID")
@click.option("--by", help="Who ends it.")
@json_option
def memory_expire(entry_id: str, by: str | None, as_json: bool) -> None:
    """End a standing rule now (`gc` then drops it).

    \b
    Example:
      shiftgit memory expire m-1a2b3c4d5e6f --by lead@example.com
    """
    from shiftgit.runs import memory as mem

    entry = mem.expire(_store(), entry_id, by)
    emit(entry) if as_json else click.echo(f"expired {entry['id']}: {entry['text']}")


@constraint.command("promote")
@click.argument("which", metavar="ID")
@click.option("--by", help="The person who approves it as a standing rule (required).")
@click.option("--until", metavar="DATE", help="When it expires (YYYY-MM-DD); default: never, until `memory expire`.")
@run_option
@json_option
def constraint_promote(which: str, by: str | None, until: str | None, run: str | None, as_json: bool) -> None:
    """Copy a run's constraint into repository memory (.shift/memory.json): every later run's briefing lists it.

    \b
    Example:
      shiftgit constraint promote c-1a2b3c4d5e6f --by lead@example.com --until 2027-06-30
    """
    from shiftgit.runs import memory

    entry = memory.promote(_store(), which, by, until, run)
    if as_json:
        emit(entry)
        return
    click.echo(f"memory {entry['id']}: {entry['text']} (approved by {entry['approved_by']})")


COMMANDS = (archive_cmd, runs_cmd, gc_cmd, insights_cmd, review, confirm_cmd, memory)
