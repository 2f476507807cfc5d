"""Read-only reports: status, show, validate, log."""

from __future__ import annotations

import sys
from typing import Any

import click

from shiftgit.cli.common import Count, emit, json_option, resolve, terminal
from shiftgit.cli.common import store as _store

# -- status / show / validate ---------------------------------------------------------------

@click.command()
@json_option
def status(as_json: bool) -> None:
    """All runs at a glance. A run whose ledger cannot be read is listed with its error (also on stderr)
    beside the others: exit 1; exit 2 when not one run could be read.

    \b
    Example:
      shiftgit status --json
    """
    from shiftgit.cli import quick

    sys.exit(echo(quick.status(as_json)))


def echo(result: Any) -> int:
    """Print what a report of cli/quick.py returns (the same bytes its click-free path prints); its exit code."""
    for line in result.before:
        click.echo(line, err=True)
    click.echo(result.out)
    for line in result.err:
        click.echo(line, err=True)
    return int(result.code)


@click.command()
@click.argument("run_id", metavar="RUN", required=False)
@json_option
@click.option("--markdown", is_flag=True, help="Print the ledger as Markdown for a human reviewer.")
def show(run_id: str | None, as_json: bool, markdown: bool) -> None:
    """One run's ledger (default: the active run).

    \b
    Example:
      shiftgit show fix-login --markdown
    """
    from shiftgit.cli import quick

    echo(quick.show(run_id, as_json, markdown))


@click.command()
@click.argument("run_ids", metavar="[RUN]...", nargs=-1)
@json_option
def validate(run_ids: tuple[str, ...], as_json: bool) -> None:
    """Schema-check ledger files; exit 1 when any is invalid, listing each error with its JSON path.

    \b
    Example:
      shiftgit validate
    """
    from shiftgit.runs import render

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

# -- log (issue 3: git-native handoffs) ------------------------------------------------------

@click.command("log")
@click.option("-n", "--max-count", "limit", type=Count(min=1), help="Show at most N checkpoints.")
@click.option("--milestones", is_flag=True, help="Only checkpoints recorded with --milestone.")
@json_option
def log_command(limit: int | None, milestones: bool, as_json: bool) -> None:
    """The checkpoint timeline along HEAD's history, newest first, from the handoff records.

    A checkpoint not committed yet comes first, without a commit: this work tree's, or a newer one
    another machine published (fetched by `shiftgit sync`). Milestones are marked; a checkpointed
    commit whose note is missing (a killed post-commit) is shown from the commit and marked:
    `shiftgit notes repair` writes its note.

    \b
    Example:
      shiftgit log -n 5
      shiftgit log --milestones
      shiftgit log --json
    """
    from shiftgit.cli import quick

    echo(quick.log(limit, milestones, as_json))


# -- notes repair (issue 13: missing notes heal) -------------------------------------------------

@click.group("notes")
def notes_group() -> None:
    """Handoff notes: `git log` shows refs/notes/shift; the records are on refs/notes/shift-data."""


@notes_group.command("repair")
@click.argument("revisions", metavar="[RANGE]", nargs=-1)
@json_option
def notes_repair(revisions: tuple[str, ...], as_json: bool) -> None:
    """Recompute the notes and records that checkpointed commits lack (a post-commit killed, hooks off).

    RANGE is a git range (default: the newest 1,000 commits of HEAD). Notes already there stay as
    they are; both refs are written in one compare-and-swap. `sync` and post-rewrite run this too.

    \b
    Example:
      shiftgit notes repair
      shiftgit notes repair main..HEAD --json
    """
    from shiftgit.git import repair
    from shiftgit.repo import clean_env

    repo = _store(require=False).repo
    done = repair.repair(repo.root, clean_env(), list(revisions) or list(repair.DEFAULT_RANGE))
    if as_json:
        emit({"repaired": done})
        return
    for item in done:
        click.echo(f"{item['commit'][:12]}: wrote the {' and the '.join(item['wrote'])}")
    click.echo(f"repaired {len(done)} commit(s)" if done else "no checkpointed commit lacks its note")


# -- report (issue 15: the postmortem) ------------------------------------------------------------

@click.command("report")
@click.argument("run_id", metavar="[RUN]", required=False)
@click.option("--markdown", is_flag=True, help="Markdown (the default on stdout).")
@click.option("--html", "html_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Write one self-contained HTML file (timeline and spend charts, nothing loaded from anywhere).")
@json_option
def report_command(run_id: str | None, markdown: bool, html_file: str | None, as_json: bool) -> None:
    """A run's postmortem: contract, timeline of checkpoints (milestones marked), every check's latest
    state, effects and approvals with their history, amendments, constraints added and lifted, stop
    reason, spend against budgets, receipt.

    \b
    Example:
      shiftgit report fix-login --markdown > postmortem.md
      shiftgit report --html run.html
    """
    from pathlib import Path

    from shiftgit.ledger.store import write_atomic
    from shiftgit.recovery import report

    store = _store()
    document = report.document(store, resolve(store, run_id))
    if html_file:
        write_atomic(Path(html_file), report.html_page(document).encode("utf-8"))
        click.echo(f"wrote {html_file} (the postmortem of run {document['run']}, one self-contained file)", err=True)
    if as_json:
        emit(document)
    elif markdown or not html_file:
        click.echo(terminal(report.markdown(document)), nl=False)
