"""`context save|show` and `output`: what a later session reads instead of a raw transcript or a rerun."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from shiftgit.cli.common import emit, json_option, terminal
from shiftgit.cli.common import store as _store


@click.group("context")
def context() -> None:
    """The conversation checkpoint: an agent's transcript, compacted, kept in git (refs/shift/context/RUN).

    The agent hooks save it before a compaction and at session end; `resume --context` adds it to
    the briefing.
    """


@context.command("save")
@click.argument("run_id", metavar="[RUN]", required=False)
@click.option("--from", "source", metavar="TRANSCRIPT", type=click.Path(dir_okay=False, path_type=Path),
              help="The transcript (Claude Code or Codex JSONL, Gemini CLI chat); default: the latest agent "
                   "session's, as its hooks reported it here.")
@json_option
def context_save(run_id: str | None, source: Path | None, as_json: bool) -> None:
    """Compact a transcript and store it: system prompt, first request, the run's summary, the last
    turns in full and a stub per older tool result; bounded and secret-redacted.

    \b
    Example:
      shiftgit context save --from ~/.claude/projects/-home-me-calc/3f2a....jsonl
    """
    from shiftgit.agents import context as core
    from shiftgit.agents import saves, sessions
    from shiftgit.errors import UsageError

    store = _store()
    run = store.resolve_run(run_id)
    if source is None:
        found = sessions.latest_transcript(store.repo, run)
        if found is None:
            raise UsageError(f"no agent session of run {run!r} reported a transcript here; name one with "
                             "`shiftgit context save --from TRANSCRIPT`")
        source = Path(found)
    saved = saves.context_save(store, run, source)  # a save an agent hook left unfinished first
    if as_json:
        emit({"run": run, "saved": saved is not None, "ref": core.ref(run),
              **(saved._asdict() if saved else {"commit": store.repo.ref(core.ref(run))})})
    elif saved is None:
        click.echo(f"context of {run} unchanged since the last save ({core.ref(run)})")
    else:
        click.echo(f"saved the conversation of {run} on {core.ref(run)}: {saved.describe()}")


@context.command("show")
@click.argument("run_id", metavar="[RUN]", required=False)
@json_option
def context_show(run_id: str | None, as_json: bool) -> None:
    """Print the latest saved context of a run (the text a fresh session can start from).

    \b
    Example:
      shiftgit context show fix-login
    """
    from shiftgit.agents import context as core

    store = _store()
    shown = core.show(store, store.resolve_run(run_id))
    if as_json:
        emit(shown)
    else:
        click.echo(terminal(core.presented(shown)))


@click.command("output")
@click.argument("check_id", metavar="CHECK-ID")
def output(check_id: str) -> None:
    """Print the whole (redacted) output a check kept with `check --keep-output` (on a terminal, control
    characters are shown escaped; piped, the bytes as kept).

    \b
    Example:
      shiftgit output k-3f9c2a1b7d4e
    """
    from shiftgit.runs import outputs

    data = outputs.read(_store(), check_id)
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None or sys.stdout.isatty():
        click.echo(terminal(data.decode("utf-8", "replace")), nl=False)
    else:
        stream.write(data)
        stream.flush()
