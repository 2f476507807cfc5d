"""`verify`, `resume`, `rollback`, `trust`: the replacement-process test."""

from __future__ import annotations

import sys
from typing import Any

import click

from shiftgit.cli import writes
from shiftgit.cli.common import Count, emit, json_option, options, resolve
from shiftgit.cli.common import store as _store

verbose_option = options([writes.VERIFY[3]])  # -v, --verbose


@click.command("verify")
@click.argument("run_id", metavar="[RUN]", required=False)
@options(writes.VERIFY)
def verify_cmd(**params: Any) -> None:
    """Rerun the latest checkpoint's checks as recorded, compare with the record, report drift.

    Exit 0 reproduced (or nothing to run), 1 mismatch, 3 refused: a command not trusted in this clone.
    A line per check and its time goes to stderr as it runs (with -v, the check's own output too).
    With --chain: exit 0 when the chain holds, 1 naming the first checkpoint that breaks it.

    \b
    Example:
      shiftgit verify --repeat 3
      shiftgit verify fix-login --json --expect-sha256 3f5a...e1
      shiftgit verify --chain fix-login
    """
    sys.exit(writes.verify(click.echo, **params))


@click.command("resume")
@click.argument("run_id", metavar="[RUN]", required=False)
@click.option("--no-run", "no_run", is_flag=True, help="Decide from the record alone; rerun no checks.")
@click.option("--adopt", is_flag=True, help="First restore a newer published ledger (another machine's "
              "checkpoint) and its files; what they replace is kept under refs/shift/rescue/.")
@click.option("--take-over", "take_over", is_flag=True, help="Start a new owner epoch here (recorded in the "
              "ledger and published): the old holder's writes are refused from then on.")
@click.option("--context", "with_context", is_flag=True,
              help="Append the run's saved conversation (`shiftgit context show`) to the briefing.")
@verbose_option
@json_option
def resume_cmd(run_id: str | None, no_run: bool, adopt: bool, take_over: bool, with_context: bool, verbose: bool,
               as_json: bool) -> None:
    """Inspect, re-verify, decide resume / rollback / escalate, brief; make the run active here.

    It decides from the newest record of the run: this work tree's ledger, or a checkpoint another
    machine published (fetched by `shiftgit sync`), and says which. Exit 0 resume, 3 rollback,
    4 escalate (also while another machine or work tree holds the run's lease: --take-over takes it).
    A line per rerun check and its time goes to stderr (with -v, its output too).

    \b
    Example:
      shiftgit resume --json
      shiftgit resume fix-login --no-run --context
      shiftgit sync && shiftgit resume fix-login --adopt
      shiftgit sync && shiftgit resume fix-login --adopt --take-over
    """
    from shiftgit.cli import quick
    from shiftgit.cli.progress import CheckProgress
    from shiftgit.cli.reports import echo
    from shiftgit.recovery import resume as core

    store = _store()
    report = core.resume(store, run_id, run_checks=not no_run, adopt=adopt, take_over=take_over,
                         progress=CheckProgress(verbose))
    writes.verified(store, report["run"], report.get("verify"))
    if not with_context:
        sys.exit(echo(quick.resumed(report, as_json)))
    saved, text = _saved_context(store, report["run"])
    if as_json:
        report = {**report, "context": saved}
    sys.exit(echo(quick.resumed(report, as_json, text)))


def _saved_context(store: Any, run: str) -> tuple[dict[str, Any] | None, str]:
    """The run's saved conversation (`context show`) and its text as shown (provenance, fence), or None and why
    there is none."""
    from shiftgit.agents import context
    from shiftgit.errors import UsageError

    try:
        saved = context.show(store, run)
    except UsageError as exc:
        return None, str(exc)
    return saved, context.presented(saved)


@click.command("rollback")
@click.argument("args", metavar="[RUN] [-- PATHS]...", nargs=-1)
@click.option("--to", "to_seq", type=Count(min=1), metavar="N", help="Go back to checkpoint #N.")
@click.option("--last-green", "last_green", is_flag=True,
              help="Go back to the latest checkpoint whose checks all passed on its own tree.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def rollback_cmd(args: tuple[str, ...], to_seq: int | None, last_green: bool, yes: bool, as_json: bool) -> None:
    """Restore the files outside .shift/ to a checkpoint's snapshot (default: the latest); keep what it replaces.

    HEAD, the index and .shift/ are never touched. What the working tree held is first saved as a
    commit under refs/shift/rescue/RUN/TIME, which is printed. PATHS (after --) reopen only those
    files or directories; the rest of the work tree stays as it is.

    \b
    Example:
      shiftgit rollback --yes
      shiftgit rollback --to 3 --yes
      shiftgit rollback --last-green -- src/parser.py
    """
    from shiftgit import textsafe
    from shiftgit.errors import UsageError
    from shiftgit.recovery import rollback as core
    from shiftgit.recovery import steps

    store = _store()
    if to_seq is not None and last_green:
        raise UsageError("give --to N or --last-green, not both")
    run_arg = args[0] if args and args[0] in store.run_ids() else None
    paths = args[1:] if run_arg is not None else args
    run = resolve(store, run_arg)
    if to_seq is not None:
        plan = core.plan_checkpoint(store, run, steps.pick(store, run, to_seq), tuple(paths))
    elif last_green:
        plan = core.plan_checkpoint(store, run, steps.last_green(store, run), tuple(paths))
    elif paths:
        point = store.read(run).checkpoint
        if point is None:
            raise UsageError(f"run {run!r} has no checkpoint to roll back to; record one with `shiftgit checkpoint`")
        plan = core.plan_checkpoint(store, run, point, tuple(paths))
    else:
        plan = core.plan(store, run)
    summary = plan.to_dict()
    if plan.changes and not yes:
        if not sys.stdin.isatty():
            raise UsageError(f"rollback would restore {len(summary['restore'])} and remove {len(summary['remove'])} "
                             "file(s), and there is no terminal to confirm it; run it in a terminal, or add --yes")
        for path in summary["restore"]:
            click.echo(f"  restore {path}")
        for path in summary["remove"]:
            click.echo(f"  remove  {path}")
        if not click.confirm(f"Roll back to checkpoint #{plan.seq} (the current files are kept under a rescue ref)?"):
            click.echo("rollback cancelled; nothing was changed", err=True)
            sys.exit(1)
    report = core.apply(store, plan)
    for left in report["withheld"] if not as_json else ():
        click.echo(f"shiftgit: not rolled back: {textsafe.one_line(left['path'])}: {left['why']}", err=True)
    recreated: list[str] = []
    if report["rescue"] is not None:
        report["undo"], recreated = core.restore_command(store.repo, report["rescue"],
                                                         [*report["restore"], *report["remove"]])
    if as_json:
        emit(report)
    elif report["rescue"] is None:
        click.echo(f"nothing to roll back: the working tree already matches checkpoint #{plan.seq}")
    else:
        click.echo(f"rolled back {plan.run} to checkpoint #{plan.seq}: restored {len(report['restore'])}, "
                   f"removed {len(report['remove'])} file(s)")
        click.echo(f"  what was replaced is kept at {report['rescue']} (git show --stat {report['rescue']})")
        if report["undo"]:
            click.echo(f"  to bring those files back: `{report['undo']}`")
        if recreated:
            click.echo(f"  (rollback also re-created {', '.join(recreated[:10])}: delete them to undo that)")


@click.command("trust")
@click.argument("run_id", metavar="[RUN]", required=False)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (a person still runs this, not an agent).")
@click.option("--allow-control", "allow_control", is_flag=True,
              help="Trust commands holding control characters too (read their escaped form first).")
@json_option
def trust_cmd(run_id: str | None, yes: bool, allow_control: bool, as_json: bool) -> None:
    """Approve the run's recorded commands (checks, acceptance, inspect, escalate-when, probes) for this clone.

    Shows who recorded them, then each command: its kind, name, cwd and sha256, and one argument
    per line, quoted, with every control character escaped. A command holding a control character
    (a carriage return, an escape sequence) is refused unless --allow-control. Trust is kept outside
    the repository ($XDG_DATA_HOME/shiftgit/), bound to the exact argv + cwd and to this clone.
    Refused inside a coding agent's own process.

    \b
    Example:
      shiftgit trust fix-login
    """
    import os

    from shiftgit import textsafe
    from shiftgit.git import record
    from shiftgit.ledger import trustdb
    from shiftgit.recovery import trust
    from shiftgit.runs.contract import now_iso

    store = _store()
    run = resolve(store, run_id)
    commands = trust.recorded_commands(store.read(run))
    pending = trustdb.untrusted(store.repo, commands)
    prov = record.ledger_provenance(store.repo, store.rel(store.ledger_path(run)))
    report = {"run": run, "clone": trustdb.clone_id(store.repo), "provenance": prov.to_dict(),
              "trusted": [c.to_dict() for c in pending], "already": len(commands) - len(pending)}
    if not pending:
        emit(report) if as_json else click.echo(f"all {len(commands)} command(s) of {run} are trusted in this clone")
        return
    if not as_json:
        click.echo(f"{len(pending)} command(s) of run {run}, recorded by {textsafe.one_line(prov.describe())}:")
        for command in pending:
            click.echo("\n".join(trust.describe(command)))
    trust.require_human(os.environ, sys.stdin.isatty(), yes, "shiftgit trust")
    if not allow_control:
        trust.refuse_control(pending, run)
    if not yes and not click.confirm("Trust these commands in this clone?"):
        click.echo("nothing trusted", err=True)
        sys.exit(1)
    trustdb.remember(store.repo, pending, "trust", now_iso())
    emit(report) if as_json else click.echo(f"trusted {len(pending)} command(s) in this clone")


@click.command("diff")
@click.argument("run_id", metavar="[RUN]", required=False)
@click.argument("span", metavar="[N | N..M]", required=False)
@click.option("--stat", is_flag=True, help="Files and line counts only.")
@json_option
def diff_cmd(run_id: str | None, span: str | None, stat: bool, as_json: bool) -> None:
    """What a step changed: the diff between two checkpoints' snapshots (.shift/ left out).

    N is the step checkpoint #N made (N-1..N; #0 is the commit the first checkpoint was made on);
    N..M spans several; nothing means the latest step.

    \b
    Example:
      shiftgit diff 3
      shiftgit diff fix-login 1..4 --stat
    """
    from shiftgit import textsafe
    from shiftgit.recovery import steps

    store = _store()
    if span is None and run_id is not None and run_id not in store.run_ids() and run_id.replace(".", "").isdigit():
        run_id, span = None, run_id
    run = resolve(store, run_id)
    first, last, text = steps.diff(store, run, span, stat)
    if as_json:
        emit({"run": run, "from": first, "to": last, "diff": text})
        return
    header = f"# shiftgit diff {run} #{first}..#{last}"
    click.echo(header + ("" if text.strip() else ": no change outside .shift/"))
    if text:
        click.echo(textsafe.for_terminal(text) if sys.stdout.isatty() else text, nl=False)
