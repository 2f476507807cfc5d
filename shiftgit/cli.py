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
