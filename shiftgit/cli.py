"""The command line: parse, call the core, print. The single place errors become exit codes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from shiftgit import __version__
from shiftgit.errors import ShiftError

F = TypeVar("F", bound=Callable[..., Any])


class ShiftGroup(click.Group):
    """Turns every ShiftError into one line on stderr and its exit code; bugs keep their traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ShiftError as exc:
            click.echo(f"shiftgit: {exc}", err=True)
            ctx.exit(exc.exit_code)


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print stable JSON for agents and harnesses.")(f)


def run_option(f: F) -> F:
    return click.option("--run", "run", metavar="ID", help="The run (default: SHIFT_RUN, else the active run).")(f)


def emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False))


def _store(require: bool = True) -> Any:
    from shiftgit.store import Store

    return Store.open(require=require)


@click.group(cls=ShiftGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="shiftgit")
def cli() -> None:
    """Keep a coding agent's work state in git, so a fresh process can verify the handoff.

    \b
    Example:
      shiftgit init
      shiftgit start fix-login --goal "fix the login callback" --stop-when "tests pass"
      shiftgit check -- pytest -q
      shiftgit checkpoint --step "callback parses state" --next "handle expired tokens"
    """


# -- init -----------------------------------------------------------------------------------

@cli.command()
@click.option("--hooks", type=click.Choice(["git", "pre-commit", "none"]), default="git", show_default=True,
              help="Install plain git hooks, add shiftgit to .pre-commit-config.yaml, or install none.")
@click.option("--agent", "agents", multiple=True, type=click.Choice(["claude", "codex", "gemini"]),
              help="Also wire an agent's own hooks (repeatable).")
def init(hooks: str, agents: tuple[str, ...]) -> None:
    """Create .shift/, set repo-local git config, install hooks. Idempotent.

    \b
    Example:
      shiftgit init --hooks git --agent claude
    """
    from shiftgit import install

    store = _store(require=False)
    for line in install.init(store, hooks=hooks, agents=agents):
        click.echo(line)


# -- start ----------------------------------------------------------------------------------

@cli.command()
@click.argument("run_id", metavar="RUN")
@click.option("--goal", required=True, help="What the run must achieve.")
@click.option("--stop-when", "stop_when", required=True, help="The condition that ends the run.")
@click.option("--owner", help="Who runs it (agent or person).")
@click.option("--time-budget", "minutes", type=click.FloatRange(min=0), help="Wall-clock minutes.")
@click.option("--token-budget", "tokens", type=click.IntRange(min=0), help="Model tokens.")
@click.option("--cost-budget", "cost", type=click.FloatRange(min=0), help="Money.")
@click.option("--allow", multiple=True, help="An effect kind the run may cause (repeatable).")
@click.option("--forbid", multiple=True, help="An effect kind the run must never cause (repeatable).")
@click.option("--artifact", "artifacts", multiple=True, help="An expected artifact (repeatable).")
@click.option("--accept", multiple=True, help="An acceptance check (repeatable).")
@click.option("--scope", multiple=True, help="A path glob the run owns (repeatable; default everything).")
@click.option("--constraint", "constraints", multiple=True, help="A hard rule (repeatable).")
@json_option
def start(run_id: str, as_json: bool, **contract: Any) -> None:
    """Write a run's contract and make it the active run in this worktree.

    \b
    Example:
      shiftgit start fix-login --goal "fix the login callback" \\
        --stop-when "tests/test_login.py passes" --constraint "do not touch prod" --scope "src/auth/**"
    """
    from shiftgit import runs
    from shiftgit.store import validate_run_id

    validate_run_id(run_id)
    store = _store()
    spec = runs.ContractInput(**contract)
    ledger, warnings = runs.start(store, run_id, spec)
    for warning in warnings:
        click.echo(f"shiftgit: warning: {warning}", err=True)
    if as_json:
        emit(ledger.to_dict())
        return
    click.echo(f"started {run_id}: {spec.goal}")
    click.echo(f"  ledger {store.rel(store.ledger_path(run_id))} (commit it with your work)")


# -- check ----------------------------------------------------------------------------------

@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@run_option
@click.option("--name", help="A name for this check (default: from the command).")
@click.option("--covers", multiple=True, metavar="GLOB", help="Paths this check exercises (repeatable).")
@click.option("--junit", metavar="PATH", help="Read the outcome from this JUnit XML file after the run.")
@click.option("--timeout", type=click.FloatRange(min=0.1), help="Seconds before the whole process group is killed.")
@click.option("--cwd", default=".", show_default=True, help="Directory to run in, relative to the repo root.")
@click.option("--env", "env_names", multiple=True, metavar="NAME", help="An environment variable the check needs.")
@click.option("--quiet", "-q", is_flag=True, help="Do not echo the command's output.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def check(run: str | None, name: str | None, covers: tuple[str, ...], junit: str | None, timeout: float | None,
          cwd: str, env_names: tuple[str, ...], quiet: bool, command: tuple[str, ...]) -> None:
    """Run a command and keep its real result as evidence; exits with the command's exit code.

    \b
    Example:
      shiftgit check --name unit --covers "src/**" -- pytest -q tests/
    """
    from shiftgit import evidence, runs

    store = _store()
    run_id = store.resolve_run(run)
    spec = runs.CheckInput(argv=command, name=name, cwd=cwd, timeout=timeout, covers=covers, junit=junit,
                           env=env_names)
    record = runs.check(store, run_id, spec, echo=None if quiet else evidence.stdout_binary())
    outcome = record.outcome
    counts = ", ".join(f"{outcome[k]} {k}" for k in ("passed", "failed", "skipped") if outcome.get(k) is not None)
    status = "timed out" if record.timed_out else f"exit {record.exit_code}"
    click.echo(f"shiftgit: check {record.name!r}: {status}" + (f" ({counts})" if counts else ""), err=True)
    for test in record.failing[:10]:
        click.echo(f"  failing: {test}", err=True)
    sys.exit(124 if record.exit_code is None else record.exit_code)


# -- checkpoint -----------------------------------------------------------------------------

@cli.command()
@run_option
@click.option("--step", help="The step just done.")
@click.option("--next", "next_action", help="The next action.")
@click.option("--done-when", "done_when", help="When the next action counts as done.")
@click.option("--done", multiple=True, help="An item finished (repeatable).")
@click.option("--doing", multiple=True, help="An item in progress (repeatable).")
@click.option("--blocked", multiple=True, help="An item blocked (repeatable).")
@click.option("--resolve", multiple=True, help="Close an open item, decision or question by its text.")
@click.option("--decision", "decisions", multiple=True, help='A decision; "what -- why" records a rationale.')
@click.option("--question", "questions", multiple=True, help="An open question (repeatable).")
@click.option("--note", help="A one-line note.")
@click.option("--phase", help="The phase of the work (e.g. explore, implement, verify).")
@click.option("--milestone", is_flag=True, help="Mark this checkpoint as a milestone.")
@click.option("--tokens", type=click.IntRange(min=0), default=0, help="Tokens spent since the last checkpoint.")
@click.option("--cost", type=click.FloatRange(min=0), default=0.0, help="Cost spent since the last checkpoint.")
@json_option
def checkpoint(run: str | None, as_json: bool, **fields: Any) -> None:
    """Record the state at a step boundary: files (from git), evidence, next action, open items.

    \b
    Example:
      shiftgit checkpoint --step "callback parses state" --next "handle expired tokens" \\
        --done-when "test_expired passes"
    """
    from shiftgit import runs

    store = _store()
    run_id = store.resolve_run(run)
    point = runs.checkpoint(store, run_id, runs.CheckpointInput(**fields))
    if as_json:
        emit(point.to_dict())
        return
    stale = sum(1 for c in point.checks if not c.fresh)
    click.echo(f"checkpoint {run_id} #{point.seq}: {len(point.files)} changed file(s), "
               f"{len(point.checks)} check(s)" + (f", {stale} stale" if stale else ""))
    click.echo(f"  stage it with your change: git add -A && git commit   ({store.rel(store.ledger_path(run_id))})")


# -- status / show / validate ---------------------------------------------------------------

@cli.command()
@json_option
def status(as_json: bool) -> None:
    """All runs at a glance.

    \b
    Example:
      shiftgit status --json
    """
    from shiftgit import render

    store = _store()
    report = render.status_report(store)
    if as_json:
        emit(report)
        return
    click.echo(render.status_text(report))


@cli.command()
@click.argument("run_id", metavar="RUN", required=False)
@json_option
@click.option("--markdown", is_flag=True, help="Print the ledger as Markdown for a human reviewer.")
def show(run_id: str | None, as_json: bool, markdown: bool) -> None:
    """One run's ledger (default: the active run).

    \b
    Example:
      shiftgit show fix-login --markdown
    """
    from shiftgit import render

    store = _store()
    ledger = store.read(store.resolve_run(run_id))
    if as_json:
        emit(ledger.to_dict())
    else:
        click.echo(render.markdown(ledger) if markdown else render.summary(ledger))


@cli.command()
@click.argument("run_ids", metavar="[RUN]...", nargs=-1)
@json_option
def validate(run_ids: tuple[str, ...], as_json: bool) -> None:
    """Schema-check ledger files; exit 1 when any is invalid, listing each error with its JSON path.

    \b
    Example:
      shiftgit validate
    """
    from shiftgit import render

    store = _store()
    report = render.validation_report(store, run_ids)
    if as_json:
        emit(report)
    else:
        for entry in report["files"]:
            click.echo(f"{entry['path']}: {'ok' if entry['valid'] else 'INVALID'}")
            for problem in entry["errors"]:
                click.echo(f"  {problem}")
    sys.exit(0 if report["valid"] else 1)


# -- constraints and amendments --------------------------------------------------------------

@cli.group()
def constraint() -> None:
    """Add or lift hard rules. Constraints are never erased: a lifted one stays, with its reason."""


@constraint.command("add")
@click.argument("text")
@run_option
@json_option
def constraint_add(text: str, run: str | None, as_json: bool) -> None:
    """Add a constraint.

    \b
    Example:
      shiftgit constraint add "do not run cutover until replication lag < 2s"
    """
    from shiftgit import runs

    store = _store()
    record = runs.add_constraint(store, store.resolve_run(run), text)
    emit(record.to_dict()) if as_json else click.echo(f"constraint {record.id}: {record.text}")


@constraint.command("lift")
@click.argument("which", metavar="ID-OR-TEXT")
@click.option("--reason", required=True, help="Why the rule no longer applies.")
@run_option
@json_option
def constraint_lift(which: str, reason: str, run: str | None, as_json: bool) -> None:
    """Lift a constraint, with a reason; it stays in the record as lifted.

    \b
    Example:
      shiftgit constraint lift c-1a2b3c4d5e6f --reason "freeze ended"
    """
    from shiftgit import runs

    store = _store()
    record = runs.lift_constraint(store, store.resolve_run(run), which, reason)
    emit(record.to_dict()) if as_json else click.echo(f"lifted {record.id}: {record.text} ({reason})")


@cli.command()
@run_option
@click.option("--reason", required=True, help="Why the contract changes.")
@click.option("--goal")
@click.option("--stop-when", "stop_when")
@click.option("--owner")
@click.option("--time-budget", "time_budget", type=click.FloatRange(min=0))
@click.option("--token-budget", "token_budget", type=click.IntRange(min=0))
@click.option("--cost-budget", "cost_budget", type=click.FloatRange(min=0))
@click.option("--allow", multiple=True, help="Replaces the allowed effect kinds.")
@click.option("--forbid", multiple=True, help="Replaces the forbidden effect kinds.")
@click.option("--artifact", "artifacts", multiple=True, help="Replaces the expected artifacts.")
@click.option("--accept", multiple=True, help="Replaces the acceptance checks.")
@click.option("--scope", multiple=True, help="Replaces the scope globs.")
@json_option
def amend(run: str | None, reason: str, as_json: bool, **fields: Any) -> None:
    """Change the contract; every change is recorded with old value, new value and reason.

    \b
    Example:
      shiftgit amend --token-budget 400000 --reason "the refactor is larger than planned"
    """
    from shiftgit import runs

    changes = {k: v for k, v in fields.items() if v is not None and v != ()}
    store = _store()
    made = runs.amend(store, store.resolve_run(run), changes, reason)
    if as_json:
        emit([a.to_dict() for a in made])
    for record in made if not as_json else ():
        click.echo(f"amended {record.field}: {record.old!r} -> {record.new!r}")


# -- stop / finish -------------------------------------------------------------------------------

@cli.command()
@run_option
@click.option("--reason", required=True, metavar="REASON",
              help="completed, waiting_for_approval, blocked_external, failed_after_retry_budget, "
                   "budget_exhausted, user_paused, cancelled or context_exhausted.")
@click.option("--detail", help="What exactly stopped the run.")
@json_option
def stop(run: str | None, reason: str, detail: str | None, as_json: bool) -> None:
    """Record why execution stopped.

    \b
    Example:
      shiftgit stop --reason waiting_for_approval --detail "migration 0042 needs a DBA"
    """
    from shiftgit import runs

    store = _store()
    record = runs.stop(store, store.resolve_run(run), reason, detail)
    emit(record.to_dict()) if as_json else click.echo(f"stopped: {record.reason}")


@cli.command()
@run_option
@click.option("--status", "final", required=True, type=click.Choice(["completed", "blocked", "abandoned"]))
@click.option("--reviewer-action", "reviewer_action", help="What the reviewer should do next.")
@click.option("--assumption", "assumptions", multiple=True, help="An assumption made (repeatable).")
@click.option("--known-failure", "known_failures", multiple=True, help="A known failure (repeatable).")
@json_option
def finish(run: str | None, final: str, reviewer_action: str | None, assumptions: tuple[str, ...],
           known_failures: tuple[str, ...], as_json: bool) -> None:
    """Write the receipt and end the run.

    \b
    Example:
      shiftgit finish --status completed --reviewer-action "review the diff of src/auth/"
    """
    from shiftgit import runs

    store = _store()
    receipt = runs.finish(store, store.resolve_run(run), final, reviewer_action, assumptions, known_failures)
    if as_json:
        emit(receipt.to_dict())
        return
    click.echo(f"finished: {receipt.status}; {len(receipt.checks)} check(s), "
               f"{len(receipt.known_failures)} known failure(s)")


# -- demo ------------------------------------------------------------------------------------

@cli.command()
@click.argument("directory", metavar="[DIR]", required=False, type=click.Path(file_okay=False))
def demo(directory: str | None) -> None:
    """A self-contained tour in a temporary repo (or DIR): start, check, checkpoint, commit, resume.

    \b
    Example:
      shiftgit demo
    """
    from shiftgit import demo as tour

    sys.exit(tour.run(directory))


# == effects, approvals, services (effects engineer) =========================================

def reversibility_options(f: F) -> F:
    f = click.option("--irreversible", "reversibility", flag_value="irreversible",
                     help="Cannot be undone (the default for a new key): needs a granted approval.")(f)
    f = click.option("--reversible", "reversibility", flag_value="reversible",
                     help="Can be undone by its compensation.")(f)
    return click.option("--repeatable", "reversibility", flag_value="repeatable",
                        help="Harmless to repeat (idempotent).")(f)


_COMMAND = {"ignore_unknown_options": True, "allow_interspersed_args": False}


@cli.group()
def effect() -> None:
    """The side-effect ledger: run an effect at most once per key, record one, settle an unknown one.

    \b
    Example:
      shiftgit effect run --key migrate-0042 --kind db_migration --irreversible -- ./migrate 0042
      shiftgit effect reconcile migrate-0042 --state completed --evidence "schema shows v42"
    """


@effect.command("run", context_settings=_COMMAND)
@click.option("--key", required=True, help="The idempotency key: one effect, run at most once.")
@click.option("--kind", required=True, help="What kind of effect (checked against the contract's allow/forbid).")
@reversibility_options
@click.option("--probe", metavar="CMD", help="A command that checks the effect safely (exit 0: it happened).")
@click.option("--compensate", metavar="CMD", help="The command that undoes it (recorded for a human).")
@click.option("--cwd", default=".", show_default=True, help="Directory to run in, relative to the repo root.")
@click.option("--timeout", type=click.FloatRange(min=0.1), help="Seconds; a timed-out effect's outcome is unknown.")
@click.option("--quiet", "-q", is_flag=True, help="Do not echo the command's output.")
@run_option
@json_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def effect_run(run: str | None, as_json: bool, quiet: bool, command: tuple[str, ...], **fields: Any) -> None:
    """Run CMD as a keyed effect: recorded as attempted before it starts; a completed key never runs again.

    Exits with CMD's exit code (0 when a completed key's recorded result is returned, 124 on timeout);
    1 when the key waits for a human (unknown outcome, missing approval, running elsewhere); 2 when the
    contract forbids the kind or the input is wrong.

    \b
    Example:
      shiftgit effect run --key deploy-7 --kind deploy --reversible \\
        --probe "./deployed-version --expect 7" --compensate "./deploy 6" -- ./deploy 7
    """
    from shiftgit import effects, evidence

    store = _store()
    spec = effects.EffectInput(argv=command, **fields)
    echo = None if quiet or as_json else evidence.stdout_binary()
    outcome = effects.run_effect(store, store.resolve_run(run), spec, echo=echo)
    record = outcome.effect
    if as_json:
        emit({**effects.view(record), "ran": outcome.ran})
    elif not outcome.ran:
        if record.output_tail and not quiet:
            click.echo(record.output_tail, nl=not record.output_tail.endswith("\n"))
        click.echo(f"shiftgit: effect {record.key!r} already completed ({record.result or 'reconciled'}, "
                   f"{record.updated_at}); not run again", err=True)
    else:
        click.echo(f"shiftgit: effect {record.key!r}: {record.state} ({record.result})", err=True)
    sys.exit(outcome.exit_code)


@effect.command("record")
@click.argument("key_arg", metavar="[KEY]", required=False)
@click.option("--key", help="The idempotency key (or give it as KEY).")
@click.option("--kind", required=True, help="What kind of effect.")
@reversibility_options
@click.option("--state", type=click.Choice(["completed", "failed"]), default="completed", show_default=True)
@click.option("--evidence", help="How you know (a URL, a log line, a ticket).")
@click.option("--probe", metavar="CMD", help="A command that checks the effect safely.")
@click.option("--compensate", metavar="CMD", help="The command that undoes it.")
@run_option
@json_option
def effect_record(key_arg: str | None, key: str | None, run: str | None, as_json: bool, state: str,
                  evidence: str | None, **fields: Any) -> None:
    """Log an effect done outside shiftgit (recorded even where the contract would have refused it).

    \b
    Example:
      shiftgit effect record --key pr-118 --kind pull_request --reversible --evidence https://git.example/pr/118
    """
    from shiftgit import effects, reconcile
    from shiftgit.errors import UsageError

    if not (key or key_arg) or (key and key_arg and key != key_arg):
        raise UsageError("give the key once: KEY or --key KEY")
    store = _store()
    spec = effects.EffectInput(key=str(key or key_arg), **fields)
    record, warnings = reconcile.record(store, store.resolve_run(run), spec, state, evidence)
    for warning in warnings:
        click.echo(f"shiftgit: warning: {warning}", err=True)
    emit(effects.view(record)) if as_json else click.echo(f"recorded effect {record.key!r}: {record.state}")


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
    from shiftgit import effects, reconcile
    from shiftgit import evidence as runner
    from shiftgit.errors import UsageError

    if (state is None) == (not use_probe):
        raise UsageError("give exactly one of --state S or --probe")
    store = _store()
    run_id = store.resolve_run(run)
    if use_probe:
        probe = reconcile.probe_of(store.read(run_id), key)
        click.echo(f"shiftgit: probe recorded for {key!r}: {probe}", err=True)
        if not yes and not sys.stdin.isatty():
            raise UsageError("add --yes to run the recorded probe without a terminal")
        if not yes:
            click.confirm("run it?", abort=True)
    echo = None if as_json else runner.stdout_binary()
    record = reconcile.reconcile(store, run_id, key, reconcile.Settlement(state=state, evidence=evidence, by=by),
                                 echo=echo)
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
    from shiftgit import effects

    store = _store()
    ledger = store.read(store.resolve_run(run))
    rows = [effects.view(e) for e in ledger.effects]
    if as_json:
        emit(rows)
        return
    for row in rows:
        repeat = "safe to repeat" if row["safe_to_repeat"] else "not safe to repeat"
        click.echo(f"{row['key']:<24} {row['kind']:<14} {row['state']:<11} {row['reversibility']:<12} {repeat}")
    if not rows:
        click.echo("no effects recorded")


@cli.group()
def approval() -> None:
    """Approvals for effects, addressed by the effect key they are for (never by a position).

    \b
    Example:
      shiftgit approval request migrate-0042 --reason "adds a NOT NULL column"
      shiftgit approval grant migrate-0042 --by dba@example.com --expires-in 60
    """


@approval.command("request")
@click.argument("key")
@click.option("--reason", required=True, help="Why the effect is needed.")
@run_option
@json_option
def approval_request(key: str, reason: str, run: str | None, as_json: bool) -> None:
    """Ask for approval of the effect KEY (then `shiftgit stop --reason waiting_for_approval` while waiting).

    \b
    Example:
      shiftgit approval request notify-customers --reason "tell users about the outage"
    """
    from shiftgit import approvals

    store = _store()
    record = approvals.request(store, store.resolve_run(run), key, reason)
    _approval_out(record, as_json)


@approval.command("grant")
@click.argument("key")
@click.option("--by", required=True, help="Who grants it.")
@click.option("--expires-in", "expires_in", type=click.FloatRange(min=0, min_open=True), metavar="MINUTES",
              help="The grant lapses after this many minutes.")
@run_option
@json_option
def approval_grant(key: str, by: str, expires_in: float | None, run: str | None, as_json: bool) -> None:
    """Grant a requested approval (a human, from their own shell; refused inside an agent session).

    \b
    Example:
      shiftgit approval grant notify-customers --by lead@example.com --expires-in 30
    """
    import os

    from shiftgit import approvals

    store = _store()
    record = approvals.grant(store, store.resolve_run(run), key, by, expires_in, environ=os.environ)
    _approval_out(record, as_json)


@approval.command("deny")
@click.argument("key")
@click.option("--by", required=True, help="Who denies it.")
@click.option("--reason", required=True, help="Why.")
@run_option
@json_option
def approval_deny(key: str, by: str, reason: str, run: str | None, as_json: bool) -> None:
    """Deny a requested approval, or revoke a granted one.

    \b
    Example:
      shiftgit approval deny migrate-0042 --by dba@example.com --reason "run it after the freeze"
    """
    import os

    from shiftgit import approvals

    store = _store()
    record = approvals.deny(store, store.resolve_run(run), key, by, reason, environ=os.environ)
    _approval_out(record, as_json)


@approval.command("list")
@run_option
@json_option
def approval_list(run: str | None, as_json: bool) -> None:
    """Every approval of the run with its state now (a lapsed grant shows as expired).

    \b
    Example:
      shiftgit approval list
    """
    from shiftgit import approvals

    store = _store()
    rows = [approvals.view(a) for a in store.read(store.resolve_run(run)).approvals]
    if as_json:
        emit(rows)
        return
    for row in rows:
        click.echo(f"{row['key']:<24} {row['state']:<9} {row.get('by') or ''}  {row.get('reason') or ''}".rstrip())
    if not rows:
        click.echo("no approvals")


def _approval_out(record: Any, as_json: bool) -> None:
    from shiftgit import approvals

    row = approvals.view(record)
    if as_json:
        emit(row)
        return
    by = f" by {row['by']}" if row.get("by") and row["state"] != "requested" else ""
    until = f" until {row['expires_at']}" if row.get("expires_at") and row["state"] == "granted" else ""
    click.echo(f"approval {row['key']!r}: {row['state']}{by}{until}")


@cli.group()
def service() -> None:
    """Long-running processes started detached and recorded as effects (kind `service`).

    \b
    Example:
      shiftgit service start --name web --port 8000 -- python -m http.server 8000
      shiftgit service stop --name web
    """


@service.command("start", context_settings=_COMMAND)
@click.option("--name", required=True, help="The service's name (its effect key is service:NAME).")
@click.option("--port", type=int, help="The port it listens on (a later process checks it accepts connections).")
@click.option("--cwd", default=".", show_default=True, help="Directory to run in, relative to the repo root.")
@run_option
@json_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def service_start(name: str, port: int | None, cwd: str, run: str | None, as_json: bool,
                  command: tuple[str, ...]) -> None:
    """Start CMD detached (own session, stdio to a log in the git dir), record it; prints the pid.

    \b
    Example:
      shiftgit service start --name web --port 8000 -- python -m http.server 8000
    """
    from shiftgit import services

    store = _store()
    record, warnings = services.start(store, store.resolve_run(run), name, command, port=port, cwd=cwd)
    for warning in warnings:
        click.echo(f"shiftgit: warning: {warning}", err=True)
    if as_json:
        emit(services.service_view(record))
        return
    click.echo(record.pid)
    click.echo(f"shiftgit: service {name!r} started, pid {record.pid}; log {record.log}", err=True)


@service.command("stop")
@click.option("--name", required=True)
@run_option
@json_option
def service_stop(name: str, run: str | None, as_json: bool) -> None:
    """Stop a recorded service (SIGTERM its process group, then SIGKILL) and record it as compensated.

    \b
    Example:
      shiftgit service stop --name web
    """
    from shiftgit import services

    store = _store()
    record = services.stop(store, store.resolve_run(run), name)
    emit(services.service_view(record)) if as_json else click.echo(f"service {name!r}: {record.result}")


@service.command("list")
@run_option
@json_option
def service_list(run: str | None, as_json: bool) -> None:
    """Recorded services and whether each is alive (its process runs and its port accepts connections).

    \b
    Example:
      shiftgit service list --json
    """
    from shiftgit import services

    store = _store()
    rows = services.services(store.read(store.resolve_run(run)))
    if as_json:
        emit(rows)
        return
    for row in rows:
        port = f" port {row['port']}" if row.get("port") else ""
        click.echo(f"{row['name']:<20} pid {row['pid']}{port} {'alive' if row['alive'] else 'not alive'}")
    if not rows:
        click.echo("no services")


# -- sync and ledger merges (issue 6) ------------------------------------------------------------

@cli.command("merge-driver")
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

    from shiftgit import merge
    from shiftgit.ledger import canonical_bytes
    from shiftgit.schema import parse_ledger, schema_errors
    from shiftgit.store import write_atomic

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


@cli.command("sync")
@click.argument("remote", required=False)
@json_option
def sync_command(remote: str | None, as_json: bool) -> None:
    """Share handoff notes and snapshots through a remote: fetch, merge by id, push (never forced).

    REMOTE defaults to the current branch's upstream remote, else origin. Retries from the fetch
    when the remote moved meanwhile.

    \b
    Example:
      shiftgit sync origin
    """
    from shiftgit import sync

    report = sync.sync(_store(require=False).repo, remote)
    if as_json:
        emit(report.to_dict())
        return
    click.echo(f"synced with {report.remote}: notes {report.notes} ({report.added} from the remote, "
               f"{report.merged} merged, {report.total} in all)")
    for ref, how in sorted(report.snapshots.items()):
        click.echo(f"  {ref}: {how}")
    if report.pushed:
        click.echo(f"  pushed {', '.join(report.pushed)}")


# == verify, resume, rollback, trust (issue 4: the replacement-process test) ==================

def _pins(values: tuple[str, ...]) -> list[str]:
    from shiftgit.errors import UsageError

    for value in values:
        if len(value) != 64 or any(ch not in "0123456789abcdefABCDEF" for ch in value):
            raise UsageError(f"--expect-sha256 {value!r}: give the 64-hex-digit digest `shiftgit verify` prints")
    return [v.lower() for v in values]


def _pick(store: Any, run_id: str | None, command: str) -> str:
    from shiftgit.resume import pick_run

    return pick_run(store, run_id, command)


@cli.command("verify")
@click.argument("run_id", metavar="[RUN]", required=False)
@click.option("--repeat", type=click.IntRange(min=1, max=100), default=1, show_default=True,
              help="Run each check N times; results that differ between runs make it flaky.")
@click.option("--expect-sha256", "pins", multiple=True, metavar="HEX",
              help="Run a command with this digest without trust (CI pinning; repeatable).")
@json_option
def verify_cmd(run_id: str | None, repeat: int, pins: tuple[str, ...], as_json: bool) -> None:
    """Rerun the latest checkpoint's checks as recorded, compare with the record, report drift.

    Exit 0 reproduced (or nothing to run), 1 mismatch, 3 refused: a command not trusted in this clone.

    \b
    Example:
      shiftgit verify --repeat 3
      shiftgit verify fix-login --json --expect-sha256 3f5a...e1
    """
    from shiftgit import verify as core

    store = _store()
    report = core.verify(store, _pick(store, run_id, "verify"), repeat=repeat, pinned=_pins(pins))
    emit(report) if as_json else click.echo(core.text(report))
    sys.exit(core.exit_code(report))


@cli.command("resume")
@click.argument("run_id", metavar="[RUN]", required=False)
@click.option("--no-run", "no_run", is_flag=True, help="Decide from the record alone; rerun no checks.")
@json_option
def resume_cmd(run_id: str | None, no_run: bool, as_json: bool) -> None:
    """Inspect, re-verify, decide resume / rollback / escalate, brief; make the run active here.

    Exit 0 resume, 3 rollback, 4 escalate.

    \b
    Example:
      shiftgit resume --json
      shiftgit resume fix-login --no-run
    """
    from shiftgit import resume as core

    report = core.resume(_store(), run_id, run_checks=not no_run)
    emit(report) if as_json else click.echo(core.text(report))
    sys.exit(core.exit_code(report))


@cli.command("rollback")
@click.argument("run_id", metavar="[RUN]", required=False)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def rollback_cmd(run_id: str | None, yes: bool, as_json: bool) -> None:
    """Restore the files outside .shift/ to the last checkpoint's snapshot; keep what it replaces.

    HEAD, the index and .shift/ are never touched. What the working tree held is first saved as a
    commit under refs/shift/rescue/RUN/TIME, which is printed.

    \b
    Example:
      shiftgit rollback --yes
    """
    from shiftgit import rollback as core
    from shiftgit.errors import UsageError

    store = _store()
    plan = core.plan(store, _pick(store, run_id, "rollback"))
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
    if as_json:
        emit(report)
    elif report["rescue"] is None:
        click.echo(f"nothing to roll back: the working tree already matches checkpoint #{plan.seq}")
    else:
        click.echo(f"rolled back {plan.run} to checkpoint #{plan.seq}: restored {len(report['restore'])}, "
                   f"removed {len(report['remove'])} file(s)")
        click.echo(f"  what was replaced is kept at {report['rescue']} (git show --stat {report['rescue']})")


@cli.command("trust")
@click.argument("run_id", metavar="[RUN]", required=False)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (a person still runs this, not an agent).")
@json_option
def trust_cmd(run_id: str | None, yes: bool, as_json: bool) -> None:
    """Approve the run's recorded commands for this clone, so verify may run them.

    Shows each command and who recorded it. Trust is kept outside the repository
    ($XDG_DATA_HOME/shiftgit/), bound to the exact argv + cwd and to this clone. Refused inside a
    coding agent's own process.

    \b
    Example:
      shiftgit trust fix-login
    """
    import os

    from shiftgit import record, runs, trust

    store = _store()
    run = _pick(store, run_id, "trust")
    commands = trust.recorded_commands(store.read(run))
    pending = trust.untrusted(store.repo, commands)
    prov = record.ledger_provenance(store.repo, store.rel(store.ledger_path(run)))
    report = {"run": run, "clone": trust.clone_id(store.repo), "provenance": prov.to_dict(),
              "trusted": [c.to_dict() for c in pending], "already": len(commands) - len(pending)}
    if not pending:
        emit(report) if as_json else click.echo(f"all {len(commands)} command(s) of {run} are trusted in this clone")
        return
    if not as_json:
        click.echo(f"{len(pending)} command(s) of run {run}, recorded by {prov.describe()}:")
        for command in pending:
            click.echo(f"  {command.name}: {' '.join(command.argv)}   (cwd {command.cwd}, sha256 {command.digest})")
    trust.require_human(os.environ, sys.stdin.isatty(), yes, "shiftgit trust")
    if not yes and not click.confirm("Trust these commands in this clone?"):
        click.echo("nothing trusted", err=True)
        sys.exit(1)
    trust.remember(store.repo, pending, "trust", runs.now_iso())
    emit(report) if as_json else click.echo(f"trusted {len(pending)} command(s) in this clone")


# -- agents (issue 7): MCP server; `hook <agent> <event>` is dispatched in __main__.py -----------

@cli.command("mcp")
def mcp_server() -> None:
    """Serve briefing, status, freshness and checkpoint as MCP tools over stdio (needs shiftgit[mcp]).

    No tool runs a recorded command. Register it with your agent, e.g. for Claude Code:

    \b
    Example:
      claude mcp add shiftgit -- shiftgit mcp
    """
    from shiftgit import mcpserver

    mcpserver.serve()


# -- log (issue 3: git-native handoffs) ------------------------------------------------------

@cli.command("log")
@click.option("-n", "--max-count", "limit", type=click.IntRange(min=1), help="Show at most N checkpoints.")
@json_option
def log_command(limit: int | None, as_json: bool) -> None:
    """The checkpoint timeline along HEAD's history, newest first, from the handoff notes.

    A checkpoint not committed yet comes first, without a commit.

    \b
    Example:
      shiftgit log -n 5
      shiftgit log --json
    """
    from shiftgit import timeline

    entries = timeline.timeline(_store(), limit)
    emit(entries) if as_json else click.echo(timeline.render(entries))


# -- hook entry points (the real work is dispatched in __main__.py, before click is imported) -----

@cli.command("hook", context_settings={"ignore_unknown_options": True})
@click.argument("names", nargs=-1, type=click.UNPROCESSED)
def hook(names: tuple[str, ...]) -> None:
    """Entry points for git hooks and agent hooks (installed by `shiftgit init`).

    \b
    Git hooks:   shiftgit hook pre-commit|commit-msg|post-commit|post-rewrite|pre-push
    Agent hooks: shiftgit hook claude session-start|stop|pre-compact|session-end
                 shiftgit hook codex session-start|stop|pre-compact
                 shiftgit hook gemini session-start|after-agent|pre-compress|session-end
    Agent hooks read the agent's JSON on stdin and fail open.

    \b
    Example:
      echo '{"hook_event_name": "SessionStart", "source": "startup"}' | shiftgit hook claude session-start
    """
    from shiftgit.__main__ import AGENT_HOOKS, GIT_HOOKS
    from shiftgit.errors import UsageError

    given = " ".join(names) or "(nothing)"
    raise UsageError(f"unknown hook {given!r}; use one of: {', '.join(GIT_HOOKS)}, "
                     f"or an agent ({', '.join(AGENT_HOOKS)}) and an event — see `shiftgit hook --help`")
