"""`ci check`: the commit gate judged again over a range of commits already made (CI, pre-push)."""

from __future__ import annotations

import os

import click

from shiftgit.cli.common import emit, json_option


@click.group()
def ci() -> None:
    """Server-side backstop for the commit gate: judge the handoffs of commits already made.

    \b
    Example:
      shiftgit ci check origin/main..HEAD
    """


@ci.command("check")
@click.argument("spec", metavar="[RANGE]", required=False)
@click.option("--no-fetch", is_flag=True, help="Judge with the notes here; do not fetch the remote's.")
@click.option("--github-annotations", "github", is_flag=True,
              help="Also print GitHub Actions error annotations for the failing commits.")
@json_option
def check(spec: str | None, no_fetch: bool, github: bool, as_json: bool) -> None:
    """Judge every commit of RANGE that changed code while a run was active: gate rules 1-7 from the
    committed ledgers, and rule 8, each commit that changed a ledger has its handoff note. A commit
    whose note carries a SHIFT_SKIP reason passes, its reason listed. Exit 0 all pass, 1 a commit
    breaks a rule (each listed with its fix), 2 bad input. Default RANGE: origin/HEAD..HEAD, else
    @{upstream}..HEAD. It fetches the remote's notes first (into refs/shift-remote/, never over local
    notes) and says so when it cannot.

    \b
    Example:
      shiftgit ci check                       # the commits not on origin's default branch
      shiftgit ci check "$BASE_SHA..$HEAD_SHA" --github-annotations
    """
    from shiftgit.git import ci as core
    from shiftgit.git import view as gitview
    from shiftgit.repo import Repo

    root = Repo.open().root
    env = gitview.hook_env({k: v for k, v in os.environ.items() if k != "GIT_INDEX_FILE"})
    spec = spec or core.default_range(root, env)
    commits = core.commits_in(root, env, spec)
    fetched = {"remote": None, "fetched": False, "error": "not asked (--no-fetch)"} if no_fetch else \
        core.fetch_notes(root, env, spec)
    if fetched["error"] and not no_fetch:
        click.echo(f"shiftgit ci check: could not fetch notes from {fetched['remote'] or 'a remote'} "
                   f"({fetched['error']})", err=True)
    verdicts = core.judge(root, env, commits)
    report = core.to_json(spec, verdicts, fetched)
    if github:
        for line in core.github_annotations(verdicts):
            click.echo(line)
    if as_json:
        emit(report)
    else:
        click.echo(core.render(spec, verdicts))
    raise SystemExit(0 if report["ok"] else 1)
