"""`effect run|record|reconcile|list`: the side-effect ledger."""

from __future__ import annotations

import sys
from typing import Any

import click

from shiftgit.cli import writes
from shiftgit.cli.common import COMMAND, emit, json_option, options, resolve, run_option
from shiftgit.cli.common import store as _store

# == effects, approvals, services (effects engineer) =========================================

reversibility_options = options(writes.REVERSIBILITY)


@click.group()
def effect() -> None:
    """The side-effect ledger: run an effect at most once per key, record one, settle an unknown one.

    \b
    Example:
      shiftgit effect run --key migrate-0042 --kind db_migration --irreversible -- ./migrate 0042
      shiftgit effect reconcile migrate-0042 --state completed --evidence "schema shows v42"
    """


@effect.command("run", context_settings=COMMAND)
@options(writes.EFFECT_RUN)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def effect_run(**params: Any) -> None:
    """Run CMD as a keyed effect: recorded as attempted before it starts; a completed key never runs again.

    Exits with CMD's exit code (0 when a completed key's recorded result is returned, 124 on timeout);
    1 when the key waits for a human (unknown outcome, missing approval, running elsewhere); 2 when the
    contract forbids the kind or the input is wrong.

    \b
    Example:
      shiftgit effect run --key deploy-7 --kind deploy --reversible \\
        --probe "./deployed-version --expect 7" --compensate "./deploy 6" -- ./deploy 7
      shiftgit effect run --key pr --kind pull_request --reversible --capture-id 'pull/(\\d+)' -- gh pr create
    """
    sys.exit(writes.effect_run(click.echo, **params))


@effect.command("record")
@click.argument("key_arg", metavar="[KEY]", required=False)
@click.option("--key", help="The idempotency key (or give it as KEY).")
@click.option("--kind", required=True, help="What kind of effect.")
@reversibility_options
@click.option("--state", type=click.Choice(["completed", "failed"]), default="completed", show_default=True)
@click.option("--evidence", help="How you know (a URL, a log line, a ticket).")
@click.option("--probe", metavar="CMD", help="A command that checks the effect safely.")
@click.option("--compensate", metavar="CMD", help="The command that undoes it.")
@click.option("--external-id", "external_id", metavar="ID", help="The external object's stable id (a PR URL...).")
@run_option
@json_option
def effect_record(key_arg: str | None, key: str | None, run: str | None, as_json: bool, state: str,
                  evidence: str | None, external_id: str | None, **fields: Any) -> None:
    """Log an effect done outside shiftgit (recorded even where the contract would have refused it).

    \b
    Example:
      shiftgit effect record --key pr-118 --kind pull_request --reversible --evidence https://git.example/pr/118
    """
    from shiftgit.effects import reconcile
    from shiftgit.effects import runner as effects
    from shiftgit.errors import UsageError
    from shiftgit.runs import foreign

    if not (key or key_arg) or (key and key_arg and key != key_arg):
        raise UsageError("give the key once: KEY or --key KEY")
    store = _store()
    spec = effects.EffectInput(key=str(key or key_arg), **fields)
    run_id = resolve(store, run)
    writes.brought(click.echo, foreign.absorb(store, run_id))
    record, warnings = reconcile.record(store, run_id, spec, state, evidence, external_id)
    for warning in [*warnings, foreign.share(store, run_id)]:
        if warning:
            click.echo(f"shiftgit: warning: {warning}", err=True)
    emit(effects.view(record)) if as_json else click.echo(f"recorded effect {record.key!r}: {record.state}")


@effect.command("status")
@click.argument("key")
@run_option
@json_option
def effect_status(key: str, run: str | None, as_json: bool) -> None:
    """Refresh an effect's external object status through its recorded probe (run only when trusted here).

    The probe gets the effect's external id in SHIFT_EXTERNAL_ID; its exit code and last line are kept.

    \b
    Example:
      shiftgit effect status pr-118
    """
    from shiftgit.effects import external
    from shiftgit.effects import runner as effects

    store = _store()
    record = external.status(store, resolve(store, run), key)
    answer = external.external_status(record) or {}
    if as_json:
        emit(effects.view(record))
        return
    click.echo(f"effect {record.key!r} ({external.external_id(record) or 'no external id'}): probe exit "
               f"{answer.get('exit_code')}: {answer.get('said', '')}")


@effect.command("reconcile")
@click.argument("key")
@click.option("--state", type=click.Choice(["completed", "failed", "compensated"]),
              help="What really happened (failed: it may run again).")
@click.option("--probe", "use_probe", is_flag=True, help="Run the probe recorded with the effect: exit 0 completed.")
@click.option("--evidence", help="How you know.")
@click.option("--by", help="Who settles it.")
@click.option("--yes", is_flag=True, help="Run the recorded probe without asking.")
@run_option
@json_option
def effect_reconcile(key: str, state: str | None, use_probe: bool, evidence: str | None, by: str | None,
                     yes: bool, run: str | None, as_json: bool) -> None:
    """Settle an effect's outcome, by your word (--state) or by its recorded probe (--probe).

    \b
    Example:
      shiftgit effect reconcile deploy-7 --state completed --evidence "version 7 answers on /health"
      shiftgit effect reconcile deploy-7 --probe
    """
    from shiftgit import textsafe
    from shiftgit.effects import reconcile
    from shiftgit.effects import runner as effects
    from shiftgit.errors import UsageError
    from shiftgit.evidence import runner
    from shiftgit.runs import foreign

    if (state is None) == (not use_probe):
        raise UsageError("give exactly one of --state S or --probe")
    store = _store()
    run_id = resolve(store, run)
    writes.brought(click.echo, foreign.absorb(store, run_id))  # a key attempted elsewhere is settled here
    if use_probe:
        probe = reconcile.probe_of(store.read(run_id), key)
        click.echo(f"shiftgit: probe recorded for {key!r}: {textsafe.one_line(probe)}", err=True)
        if not yes and not sys.stdin.isatty():
            raise UsageError("add --yes to run the recorded probe without a terminal")
        if not yes:
            click.confirm("run it?", abort=True)
    echo = None if as_json else runner.stdout_binary()
    record = reconcile.reconcile(store, run_id, key, reconcile.Settlement(state=state, evidence=evidence, by=by),
                                 echo=echo)
    warning = foreign.share(store, run_id)
    if warning:
        click.echo(f"shiftgit: warning: {warning}", err=True)
    emit(effects.view(record)) if as_json else click.echo(f"effect {record.key!r}: {record.state}")


@effect.command("list")
@run_option
@json_option
def effect_list(run: str | None, as_json: bool) -> None:
    """Every effect of the run with its state now (an attempt whose runner is gone shows as unknown).

    \b
    Example:
      shiftgit effect list --json
    """
    from shiftgit import textsafe
    from shiftgit.effects import runner as effects

    store = _store()
    ledger = store.read(resolve(store, run))
    rows = [effects.view(e) for e in ledger.effects]
    if as_json:
        emit(rows)
        return
    for row in rows:
        repeat = "safe to repeat" if row["safe_to_repeat"] else "not safe to repeat"
        line = f"{row['key']:<24} {row['kind']:<14} {row['state']:<11} {row['reversibility']:<12} {repeat}"
        click.echo(textsafe.one_line(line))
    if not rows:
        click.echo("no effects recorded")
