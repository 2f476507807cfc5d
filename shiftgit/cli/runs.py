"""A run's life on the command line: start, check, checkpoint, constraints, amend, stop, finish."""

from __future__ import annotations

import sys
from typing import Any

import click

from shiftgit.cli import writes
from shiftgit.cli.common import Count, Finite, emit, json_option, options, resolve, run_option
from shiftgit.cli.common import store as _store

# -- start ----------------------------------------------------------------------------------

@click.command()
@click.argument("run_id", metavar="RUN")
@click.option("--goal", help="What the run must achieve (required, here or from --template).")
@click.option("--stop-when", "stop_when", help="The condition that ends the run (required, here or from --template).")
@click.option("--template", "template_name", metavar="NAME",
              help="Fill the contract from .shift/templates/NAME.json; refused if a field it requires stays empty.")
@click.option("--owner", help="Who runs it (agent or person).")
@click.option("--time-budget", "minutes", type=Finite(min=0), help="Wall-clock minutes.")
@click.option("--token-budget", "tokens", type=Count(min=0), help="Model tokens.")
@click.option("--cost-budget", "cost", type=Finite(min=0), help="Money.")
@click.option("--allow", multiple=True, help="An effect kind the run may cause (repeatable).")
@click.option("--forbid", multiple=True, help="An effect kind the run must never cause (repeatable).")
@click.option("--artifact", "artifacts", multiple=True, help="An expected artifact (repeatable).")
@click.option("--accept", multiple=True, metavar="NAME=CMD",
              help="An acceptance check: a name and a command (argv, no shell); `shiftgit accept` runs them; "
                   "`finish --status completed` needs them passed (repeatable).")
@click.option("--scope", multiple=True, help="A path glob the run owns (repeatable; default everything).")
@click.option("--constraint", "constraints", multiple=True, help="A hard rule (repeatable).")
@click.option("--inspect", multiple=True, metavar="CMD",
              help="A command `resume` runs first (when trusted) and shows (repeatable).")
@click.option("--escalate-when", "escalate_when", multiple=True, metavar="CMD",
              help="A command whose exit 0 makes `resume` escalate, e.g. a query that finds the database differs.")
@click.option("--rollback-plan", "rollback_plan", metavar="TEXT", help="How to undo the run's work.")
@json_option
def start(run_id: str, as_json: bool, template_name: str | None, **contract: Any) -> None:
    """Write a run's contract and make it the active run in this worktree.

    \b
    Example:
      shiftgit start fix-login --goal "fix the login callback" \\
        --stop-when "tests/test_login.py passes" --constraint "do not touch prod" --scope "src/auth/**"
      shiftgit start billing-4 --template billing --goal "wire invoice export" --owner ada@example.com
    """
    from shiftgit.ledger.store import validate_run_id
    from shiftgit.runs import contract as runs

    validate_run_id(run_id)
    store = _store()
    contract["goal"], contract["stop_when"] = contract["goal"] or "", contract["stop_when"] or ""
    spec = runs.ContractInput(**contract)
    from shiftgit.runs import templates

    spec, used = templates.fill(store, template_name, spec) if template_name else (spec, None)
    ledger, warnings = runs.start(store, run_id, spec, used)
    for warning in warnings:
        click.echo(f"shiftgit: warning: {warning}", err=True)
    if as_json:
        emit(ledger.to_dict())
        return
    click.echo(f"started {run_id}: {spec.goal}")
    click.echo(f"  ledger {store.rel(store.ledger_path(run_id))} (commit it with your work)")


# -- check ----------------------------------------------------------------------------------

@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@options(writes.CHECK)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def check(**params: Any) -> None:
    """Run a command and keep its real result as evidence; exits with the command's exit code.

    A check's latest result is carried from checkpoint to checkpoint until it is rerun or retired.
    Exit 4, nothing run, when another place holds the run's lease or took the run over; --json prints the record.

    \b
    Example:
      shiftgit check --name unit --covers "src/**" -- pytest -q tests/
      shiftgit check --keep-output -- pytest -q
      shiftgit check --retire e2e-old --reason "replaced by e2e"
    """
    code = writes.check(click.echo, **params)
    if code is not None:
        sys.exit(code)


@click.command()
@click.argument("run_id", metavar="RUN", required=False)
@click.option("--quiet", "-q", is_flag=True, help="Do not echo the commands' output.")
@json_option
def accept(run_id: str | None, quiet: bool, as_json: bool) -> None:
    """Run every acceptance check of the run (`--accept NAME=CMD`) as a check; exit 1 when one fails.

    \b
    Example:
      shiftgit accept && shiftgit checkpoint --step "acceptance checks pass"
    """
    from shiftgit.evidence import runner as evidence
    from shiftgit.ledger.checkstates import passed
    from shiftgit.runs import acceptance

    store = _store()
    run = resolve(store, run_id)
    records = acceptance.run_all(store, run, echo=None if quiet or as_json else evidence.stdout_binary())
    if as_json:
        emit([{"name": r.name, "argv": list(r.argv), "exit_code": r.exit_code, "failing": list(r.failing),
               "passed": passed(r)} for r in records])
    for record in records if not as_json else ():
        status = "timed out" if record.timed_out else f"exit {record.exit_code}"
        click.echo(f"shiftgit: acceptance check {record.name!r}: {status}", err=True)
        for test in record.failing[:10]:
            click.echo(f"  failing: {test}", err=True)
    sys.exit(0 if all(passed(r) for r in records) else 1)


# -- checkpoint -----------------------------------------------------------------------------

@click.command()
@options(writes.CHECKPOINT)
def checkpoint(**params: Any) -> None:
    """Record the state at a step boundary: files (from git), evidence, next action, open items.

    Exit 4, nothing written, when another place holds the run's lease or took the run over
    (`shiftgit resume RUN --take-over` makes this place the owner).

    \b
    Example:
      shiftgit checkpoint --step "callback parses state" --next "handle expired tokens" \\
        --done-when "test_expired passes"
    """
    writes.checkpoint(click.echo, **params)

# -- constraints and amendments --------------------------------------------------------------

@click.group()
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
    from shiftgit.runs import contract as runs

    store = _store()
    record = runs.add_constraint(store, resolve(store, run), text)
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
    from shiftgit.runs import contract as runs

    store = _store()
    record = runs.lift_constraint(store, resolve(store, run), which, reason)
    emit(record.to_dict()) if as_json else click.echo(f"lifted {record.id}: {record.text} ({reason})")


@click.command()
@run_option
@click.option("--reason", required=True, help="Why the contract changes.")
@click.option("--goal")
@click.option("--stop-when", "stop_when")
@click.option("--owner")
@click.option("--time-budget", "time_budget", type=Finite(min=0))
@click.option("--token-budget", "token_budget", type=Count(min=0))
@click.option("--cost-budget", "cost_budget", type=Finite(min=0))
@click.option("--allow", multiple=True, help="Replaces the allowed effect kinds.")
@click.option("--forbid", multiple=True, help="Replaces the forbidden effect kinds.")
@click.option("--artifact", "artifacts", multiple=True, help="Replaces the expected artifacts.")
@click.option("--accept", multiple=True, metavar="NAME=CMD", help="Replaces the acceptance checks.")
@click.option("--scope", multiple=True, help="Replaces the scope globs.")
@click.option("--inspect", multiple=True, metavar="CMD", help="Replaces the inspect-first commands.")
@click.option("--escalate-when", "escalate_when", multiple=True, metavar="CMD",
              help="Replaces the escalate-when commands.")
@click.option("--rollback-plan", "rollback_plan", metavar="TEXT", help="Replaces the rollback plan.")
@json_option
def amend(run: str | None, reason: str, as_json: bool, **fields: Any) -> None:
    """Change the contract; every change is recorded with old value, new value and reason.

    \b
    Example:
      shiftgit amend --token-budget 400000 --reason "the refactor is larger than planned"
    """
    from shiftgit.runs import contract as runs

    changes = {k: v for k, v in fields.items() if v is not None and v != ()}
    store = _store()
    made = runs.amend(store, resolve(store, run), changes, reason)
    if as_json:
        emit([a.to_dict() for a in made])
    for record in made if not as_json else ():
        click.echo(f"amended {record.field}: {record.old!r} -> {record.new!r}")


# -- stop / finish -------------------------------------------------------------------------------

@click.command()
@run_option
@click.option("--reason", required=True, metavar="REASON",
              help="completed, waiting_for_approval, blocked_external, budget_exhausted, failed_after_retries, "
                   "user_paused, context_limit or crashed.")
@click.option("--detail", help="What exactly stopped the run.")
@json_option
def stop(run: str | None, reason: str, detail: str | None, as_json: bool) -> None:
    """Record why execution stopped.

    \b
    Example:
      shiftgit stop --reason waiting_for_approval --detail "migration 0042 needs a DBA"
    """
    from shiftgit.runs import contract as runs

    store = _store()
    record = runs.stop(store, resolve(store, run), reason, detail)
    emit(record.to_dict()) if as_json else click.echo(f"stopped: {record.reason}")


@click.command()
@run_option
@click.option("--status", "final", required=True, type=click.Choice(["completed", "blocked", "abandoned"]))
@click.option("--reviewer-action", "reviewer_action", help="What the reviewer should do next.")
@click.option("--assumption", "assumptions", multiple=True, help="An assumption made (repeatable).")
@click.option("--known-failure", "known_failures", multiple=True, help="A known failure (repeatable).")
@click.option("--override", metavar="REASON",
              help="Finish as completed although an acceptance check has not passed; the receipt keeps REASON.")
@json_option
def finish(run: str | None, final: str, reviewer_action: str | None, assumptions: tuple[str, ...],
           known_failures: tuple[str, ...], override: str | None, as_json: bool) -> None:
    """Write the receipt from the record and end the run.

    `--status completed` is refused (exit 1) while an acceptance check has not passed on the final tree.

    \b
    Example:
      shiftgit finish --status completed --reviewer-action "review the diff of src/auth/"
    """
    from shiftgit.runs import receipt as receipts

    store = _store()
    receipt = receipts.finish(store, resolve(store, run), final, reviewer_action, assumptions, known_failures,
                              override)
    if as_json:
        emit(receipt.to_dict())
        return
    click.echo(f"finished: {receipt.status}; {len(receipt.checks)} check(s), "
               f"{len(receipt.known_failures)} known failure(s)")

