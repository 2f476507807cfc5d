"""The read-only reports `status`, `show` and `log`, `resume`'s answer, and a way to run them without click.

click's import costs about one Python start-up (and the command line's modules as much again); these
commands are what people and agents run most and they only read. `reports.py` and `recovery.py` (the
click commands) print what these functions return, and `__main__` calls `main` first: for the plainest
forms (`status [--json]`, `show [RUN] [--json|--markdown]`, `log [-n N] [--json]`, `resume [RUN]
--no-run [--json]`) it runs them without click. Any other form, `--help`, and any error go to the click
command line: these commands write nothing before they answer (`resume` sets the active run last), so
running one again there says exactly what it always said (the one error line, the exit code).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    from shiftgit.ledger.store import Store
else:
    from shiftgit.tuples import NamedTuple


class Output(NamedTuple):
    """What a report prints: stderr's lines before, stdout's text (a line break is added), stderr's lines
    after, the exit code."""

    out: str
    err: list[str]
    code: int = 0
    before: list[str] = []


def status(as_json: bool) -> Output:
    from shiftgit.ledger.reading import GcPaused
    from shiftgit.runs import render

    with GcPaused(freeze=True):  # every run's JSON is kept until the text is built: see GcPaused
        report = render.status_report(open_store())
        text = json_text(report) if as_json else render.status_text(report)
        return Output(text, [f"shiftgit: {line}" for line in render.errors(report)], render.exit_code(report))


def show(run: str | None, as_json: bool, markdown: bool) -> Output:
    from shiftgit import textsafe
    from shiftgit.agents.published import newer_line
    from shiftgit.ledger.discovery import discover
    from shiftgit.runs import render

    store = open_store()
    pick = discover(store, run)
    document = None if as_json or markdown else store.document(pick.run, migrate=True)
    note = [f"shiftgit: {line}" for line in (pick.note, newer_line(store, pick.run, document)) if line]
    if document is not None:  # the checked JSON: no model built (its classes cost a start-up and more)
        return Output(textsafe.for_terminal(render.summary(document)), [], before=note)
    ledger = store.read(pick.run)
    if as_json:
        return Output(json_text(ledger.to_dict()), [], before=note)
    return Output(textsafe.for_terminal(render.markdown(ledger)), [], before=note)


def log(limit: int | None, milestones: bool, as_json: bool) -> Output:
    from shiftgit.git import fetchstate, timeline
    from shiftgit.git.notes import NOTES_REF

    store = open_store()
    listing = timeline.listing(store)  # the notes refs and the ledger refs in one git process
    refs = timeline.notes_refs(store, listing)  # asked once: the timeline reads them, and the hint needs one of them
    if as_json or milestones:
        entries = timeline.timeline(store, None if milestones else limit, refs, listing)
        if milestones:
            entries = [e for e in entries if e.get("milestone")][:limit]
        out = json_text(entries) if as_json else timeline.render(entries)
    else:
        out = timeline.text(store, limit, refs, listing)
    hint = fetchstate.sync_hint(store.repo, noted=NOTES_REF in refs)
    return Output(out, [f"shiftgit: {line}" for line in store.skipped_runs()] + ([f"shiftgit: {hint}"] if hint else []))


def open_store() -> Store:
    """`Store.open()`, its `git rev-parse` started with posix_spawn (rawgit): the subprocess module's import (with
    signal, threading, selectors and locale, ~5 ms) is then left to the reports that run other git commands."""
    import os
    from pathlib import Path

    from shiftgit.git import rawgit, worktreecache
    from shiftgit.ledger.store import Store
    from shiftgit.repo import Repo

    here, env = os.getcwd(), dict(os.environ)
    try:
        proc = rawgit.started(worktreecache.OPEN, env, here) or rawgit.Process(worktreecache.OPEN, env, stderr="null")
        code, out, _ = rawgit.communicate(proc, None)
    except OSError:  # no git on PATH, no standard streams: Store.open says why, as always
        return Store.open()
    return Store.open(repo=Repo.opened(Path(here), code, out.decode("utf-8", "surrogateescape")))


def resume(run: str | None, as_json: bool) -> Output:
    """`resume [RUN] --no-run [--json]`: decide from the record alone, brief, make the run active here."""
    from shiftgit.ledger.store import Store

    store = Store.open()
    with store.repo.start_worktree_tree() as tree:  # git hashes the work tree while the decision's code loads
        from shiftgit.recovery import resume as core

        return resumed(core.resume(store, run, run_checks=False, tree=tree), as_json)


def resumed(report: dict[str, Any], as_json: bool, context: str | None = None) -> Output:
    """What `resume` prints of its REPORT (with `context`: the saved conversation's text after the briefing)."""
    from shiftgit import textsafe
    from shiftgit.recovery import resume as core

    before = [f"shiftgit: {line}" for line in report.get("skipped") or ()]
    before += [f"shiftgit: {report['picked']}"] if report.get("picked") else []
    if report.get("take_over"):
        before.append(f"shiftgit: {_taken_text(report['take_over'])}")
    if report.get("adopt"):
        from shiftgit.recovery import takeover

        before.append(f"shiftgit: {takeover.adopt_text(report['adopt'])}")
    before += [f"shiftgit: recorded in another clone: {line}" for line in report.get("effects_brought", ())]
    before += [f"shiftgit: warning: {line}" for line in report.get("hook_problems", ())]
    if as_json:
        out = json_text(report)
    else:
        out = textsafe.for_terminal(core.text(report) if context is None else f"{core.text(report)}\n\n{context}")
    return Output(out, [], core.exit_code(report), before)


def _taken_text(taken: dict[str, Any]) -> str:
    from shiftgit.git.fence import shown

    line = f"took over as owner epoch {taken['epoch']} (from {shown(taken['from'])})"
    return line + (f"; {taken['published']}" if taken.get("published") else "; no publish remote: not pushed")


def json_text(data: Any) -> str:
    """Stable JSON; no character in it can act on a terminal (cli/common.emit prints this)."""
    import json  # here: json loads re (~7 ms with enum and functools), which `status` and `show` do without

    from shiftgit import textsafe

    return textsafe.json_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False))


# -- without click ---------------------------------------------------------------------------

def main(args: list[str]) -> int | None:
    """Run a plain `status`, `show`, `log` or `resume --no-run` without click; None: the click command line runs it."""
    call = _plain(args)
    if call is None:
        return None
    from shiftgit.errors import ShiftError

    try:
        result: Output = call()
    except (ShiftError, OSError):
        return None  # nothing was printed or written: the command line runs it again and says why
    if result.before:
        write_to(sys.stderr, "".join(line + "\n" for line in result.before))
    write_to(sys.stdout, result.out + "\n")
    if result.err:
        write_to(sys.stderr, "".join(line + "\n" for line in result.err))
    return result.code


def _plain(args: list[str]) -> Any:
    """The report ARGS asks for in one of its plainest forms, as a call; None for anything else."""
    name, rest = (args[0], args[1:]) if args else ("", [])
    flags = {a for a in rest if a.startswith("-")}
    words = [a for a in rest if not a.startswith("-")]
    if name == "status" and flags <= {"--json"} and not words and len(rest) == len(flags):
        return lambda: status("--json" in flags)
    if name == "show" and flags <= {"--json", "--markdown"} and len(words) <= 1 and len(rest) == len(set(rest)):
        return lambda: show(words[0] if words else None, "--json" in flags, "--markdown" in flags)
    if name == "log":
        if rest in ([], ["--json"]):
            return lambda: log(None, False, bool(rest))
        if rest[:1] == ["-n"] and len(rest) in (2, 3) and rest[1].isascii() and rest[1].isdigit() \
                and 1 <= int(rest[1]) <= sys.maxsize and rest[2:] in ([], ["--json"]):
            return lambda: log(int(rest[1]), False, len(rest) == 3)
    if name == "resume" and "--no-run" in flags and flags <= {"--no-run", "--json"} and len(words) <= 1 \
            and len(rest) == len(set(rest)):
        return lambda: resume(words[0] if words else None, "--json" in flags)
    return None


def write_to(stream: Any, text: str) -> None:
    """As click.echo writes: UTF-8 (click's choice for a stream set up as ASCII), flushed."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(text)
    else:
        stream.flush()
        buffer.write(text.encode(stream.encoding if _utf8(stream.encoding) else "utf-8", "replace"))
    stream.flush()


def _utf8(encoding: str | None) -> bool:
    return (encoding or "").replace("_", "-").lower() in ("utf-8", "utf8")
