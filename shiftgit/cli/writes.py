"""`checkpoint`, `check`, `effect run` and `verify`: their options (one table each) and what they do, without click.

`runs.py`, `effects.py` and `recovery.py` make the click commands from these tables and call these bodies with
click.echo; `__main__` runs their plainest forms through `cli/plain.py` with no click loaded (`ROUTES`).
A body takes the echo function, then the parameters; it returns the exit code (None: 0).
"""

from __future__ import annotations

import sys
from typing import Any

from shiftgit.cli.plain import JSON, RUN, Command, Echo, Opt, command_argv, emit, resolve

CHECKPOINT = (
    RUN,
    Opt(("--step",), "step", "The step just done."),
    Opt(("--next",), "next_action", "The next action."),
    Opt(("--done-when",), "done_when", "When the next action counts as done."),
    Opt(("--done",), "done", "An item finished (repeatable).", kind="multiple"),
    Opt(("--doing",), "doing", "An item in progress (repeatable).", kind="multiple"),
    Opt(("--blocked",), "blocked", "An item blocked (repeatable).", kind="multiple"),
    Opt(("--resolve",), "resolve", "Close an open item, decision or question by its text (with --reason; the only "
        "way one leaves).", kind="multiple", metavar="TEXT"),
    Opt(("--reason",), "reason", "Why the --resolve items are closed (recorded)."),
    Opt(("--decision",), "decisions", 'A decision; "what -- why" records a rationale.', kind="multiple"),
    Opt(("--question",), "questions", "An open question (repeatable).", kind="multiple"),
    Opt(("--note",), "note", "A one-line note."),
    Opt(("--phase",), "phase", "The phase of the work (e.g. explore, implement, verify)."),
    Opt(("--milestone",), "milestone", "Mark this checkpoint as a milestone.", kind="flag"),
    Opt(("--confirm",), "confirm", "With --milestone: the owner must confirm it (`shiftgit confirm`) before resume "
        "goes on.", kind="flag"),
    Opt(("--turn",), "turn", "The agent's turn number (agent hooks fill it).", type="int>=0"),
    Opt(("--tokens",), "tokens", "Tokens spent since the last checkpoint.", type="int>=0", default=0),
    Opt(("--cost",), "cost", "Cost spent since the last checkpoint.", type="finite>=0", default=0.0),
    JSON,
)

CHECK = (
    RUN,
    Opt(("--name",), "name", "A name for this check (default: from the command)."),
    Opt(("--covers",), "covers", "Paths this check exercises (repeatable).", kind="multiple", metavar="GLOB"),
    Opt(("--junit",), "junit", "Read the outcome from this JUnit XML file after the run.", metavar="PATH"),
    Opt(("--timeout",), "timeout", "Seconds before the whole process group is killed.", type="finite>=0.1"),
    Opt(("--cwd",), "cwd", "Directory to run in, relative to the repo root.", default=".", show_default=True),
    Opt(("--env",), "env_names", "An environment variable the check needs.", kind="multiple", metavar="NAME"),
    Opt(("--quiet", "-q"), "quiet", "Do not echo the command's output.", kind="flag"),
    Opt(("--keep-output",), "keep_output", "Keep the whole output (redacted) in git, under refs/shift/outputs/RUN; "
        "read it back with `shiftgit output CHECK-ID`.", kind="flag"),
    Opt(("--retire",), "retire", "Take a check out of the record (with --reason); runs nothing.", metavar="NAME"),
    Opt(("--reason",), "reason", "Why the check is retired."),
    JSON,
)

REVERSIBILITY = (
    Opt(("--repeatable",), "reversibility", "Harmless to repeat (idempotent).", kind="switch",
        flag_value="repeatable"),
    Opt(("--reversible",), "reversibility", "Can be undone by its compensation.", kind="switch",
        flag_value="reversible"),
    Opt(("--irreversible",), "reversibility", "Cannot be undone (the default for a new key): needs a granted "
        "approval.", kind="switch", flag_value="irreversible"),
)

EFFECT_RUN = (
    Opt(("--key",), "key", "The idempotency key: one effect, run at most once.", required=True),
    Opt(("--kind",), "kind", "What kind of effect (checked against the contract's allow/forbid).", required=True),
    *REVERSIBILITY,
    Opt(("--probe",), "probe", "A command that checks the effect safely (exit 0: it happened).", metavar="CMD"),
    Opt(("--compensate",), "compensate", "The command that undoes it (recorded for a human).", metavar="CMD"),
    Opt(("--cwd",), "cwd", "Directory to run in, relative to the repo root.", default=".", show_default=True),
    Opt(("--timeout",), "timeout", "Seconds; a timed-out effect's outcome is unknown.", type="finite>=0.1"),
    Opt(("--capture-id",), "capture_id", "Keep the first match in the output (its first group, if any) as the "
        "effect's external_id.", metavar="REGEX"),
    Opt(("--quiet", "-q"), "quiet", "Do not echo the command's output.", kind="flag"),
    RUN,
    JSON,
)


def _store() -> Any:
    from shiftgit.ledger.store import Store

    return Store.open()


def checkpoint(echo: Echo, run: str | None, as_json: bool, **fields: Any) -> None:
    from shiftgit import textsafe

    store = _store()
    run_id = resolve(echo, store, run)
    with store.repo.worktree_build() as worktree:  # git hashes the files while the checkpoint code loads
        from shiftgit.runs import checkpoints
        point = checkpoints.checkpoint(store, run_id, checkpoints.CheckpointInput(**fields), worktree=worktree)
    for held in point.extra.get("withheld") or []:
        echo(f"shiftgit: warning: {textsafe.one_line(str(held['path']))} holds what looks like a secret "
             f"({held['rule']}): left out of the snapshot, so rollback cannot restore it", err=True)
    if as_json:
        emit(echo, point.to_dict())
        return
    stale = sum(1 for c in point.checks if not c.fresh)
    echo(f"checkpoint {run_id} #{point.seq}: {len(point.files)} changed file(s), "
         f"{len(point.checks)} check(s)" + (f", {stale} stale" if stale else ""))
    echo(f"  stage it with your change: git add -A && git commit   ({store.rel(store.ledger_path(run_id))})")


def check(echo: Echo, run: str | None, name: str | None, covers: tuple[str, ...], junit: str | None,
          timeout: float | None, cwd: str, env_names: tuple[str, ...], quiet: bool, keep_output: bool,
          retire: str | None, reason: str | None, as_json: bool, command: tuple[str, ...]) -> int | None:
    from shiftgit.evidence import runner as evidence
    from shiftgit.runs import checks

    store = _store()
    run_id = resolve(echo, store, run)
    if retire is not None:
        _retire(echo, store, run_id, retire, reason, command)
        return None
    spec = checks.CheckInput(argv=command_argv(command, "check"), name=name, cwd=cwd, timeout=timeout,
                             covers=covers, junit=junit, env=env_names, keep_output=keep_output)
    shown = None if quiet else (getattr(sys.stderr, "buffer", None) if as_json else evidence.stdout_binary())
    record = checks.check(store, run_id, spec, echo=shown)
    outcome = record.outcome
    counts = ", ".join(f"{outcome[k]} {k}" for k in ("passed", "failed", "skipped") if outcome.get(k) is not None)
    status = "timed out" if record.timed_out else f"exit {record.exit_code}"
    lines = [f"shiftgit: check {record.name!r}: {status}" + (f" ({counts})" if counts else ""),
             *(f"  failing: {test}" for test in record.failing[:10])]
    lines += [f"  output kept: `shiftgit output {record.id}` ({record.output_bytes} bytes)"] * bool(record.output_blob)
    lines += [f"shiftgit: warning: {line}" for line in checks.overrun(store, run_id)]
    held = checks.uncleared(store, run_id, record)
    lines += [f"shiftgit: still failing: {held}"] * bool(held)
    result = {"run": run_id, "check": record.to_dict(), **({"still_failing": held} if held else {})}
    emit(echo, result) if as_json else echo("\n".join(lines), err=True)
    return 124 if record.exit_code is None else record.exit_code


def _retire(echo: Echo, store: Any, run_id: str, name: str, reason: str | None, command: tuple[str, ...]) -> None:
    from shiftgit.errors import UsageError
    from shiftgit.runs import acceptance

    if command:
        raise UsageError("--retire runs nothing: drop the command after `--`; nothing was written")
    if not reason:
        raise UsageError(f"retiring a check needs a reason: `shiftgit check --retire {name} --reason R`; "
                         "nothing was written")
    record = acceptance.retire(store, run_id, name, reason)
    echo(f"retired check {record.name!r} ({reason}); it leaves the record at the next checkpoint")


def effect_run(echo: Echo, run: str | None, as_json: bool, quiet: bool, command: tuple[str, ...],
               **fields: Any) -> int:
    from shiftgit.effects import runner as effects
    from shiftgit.evidence import runner as evidence

    store = _store()
    spec = effects.EffectInput(argv=command_argv(command, "effect run"), **fields)
    shown = None if quiet or as_json else evidence.stdout_binary()
    run_id = resolve(echo, store, run)
    from shiftgit.runs.lease import guard

    effects.validate_input(spec)  # bad input takes no lease and reads no other clone's record
    ticket = guard(store, run_id)  # a fenced process never starts an effect (exit 4)
    from shiftgit.runs import foreign

    brought(echo, foreign.absorb(store, run_id, ticket.commits or None))  # another clone's record of it decides first
    share = foreign.Sharer(store, run_id, ticket.tip)

    def shared() -> None:
        warning = share()
        if warning:
            echo(f"shiftgit: warning: {warning}", err=True)

    outcome = effects.run_effect(store, run_id, spec, echo=shown, shared=shared)
    record = outcome.effect
    if as_json:
        emit(echo, {**effects.view(record), "ran": outcome.ran})
    elif not outcome.ran:
        echo(f"shiftgit: effect {record.key!r} already completed at {record.updated_at} "
             f"({record.result or 'reconciled'}), not run again")
        if record.output_tail and not quiet:
            tail = record.output_tail.rstrip("\n").splitlines()
            echo("\n".join(f"  [recorded] {line}" for line in tail))
    else:
        said = f", external id {record.extra['external_id']}" if record.extra.get("external_id") else ""
        echo(f"shiftgit: effect {record.key!r}: {record.state} ({record.result}){said}", err=True)
    return outcome.exit_code


def brought(echo: Echo, lines: list[str]) -> None:
    """Say which effect records another clone published were brought into this ledger (runs/foreign.absorb)."""
    for line in lines:
        echo(f"shiftgit: recorded in another clone: {line}", err=True)


VERIFY = (
    Opt(("--repeat",), "repeat", "Run each check N times; results that differ between runs make it flaky.",
        type="int1-100", default=1, show_default=True),
    Opt(("--expect-sha256",), "pins", "Run a command with this digest without trust (CI pinning; repeatable).",
        kind="multiple", metavar="HEX"),
    Opt(("--chain",), "chain", "Check the run's checkpoint chain (digests, owner epochs, signatures) across the "
        "ledger, its git history, its ledger refs and notes; rerun nothing.", kind="flag"),
    Opt(("-v", "--verbose"), "verbose", "Stream each rerun check's own output to stderr, live.", kind="flag"),
    JSON,
)


def verify(echo: Echo, run_id: str | None, repeat: int, pins: tuple[str, ...], chain: bool, verbose: bool,
           as_json: bool) -> int:
    from shiftgit.textsafe import for_terminal

    store = _store()
    if chain:
        from shiftgit.recovery import chainverify

        found = chainverify.verify_chain(store, resolve(echo, store, run_id))
        emit(echo, found) if as_json else echo(for_terminal(chainverify.text(found)))
        return chainverify.exit_code(found)
    from shiftgit.cli.progress import CheckProgress
    from shiftgit.recovery import verify as core

    run = resolve(echo, store, run_id)
    from shiftgit.agents.published import newer_line

    newer = newer_line(store, run)
    if newer:
        echo(f"shiftgit: {newer}", err=True)
    report = core.verify(store, run, repeat=repeat, pinned=_pins(pins), progress=CheckProgress(verbose))
    verified(store, run, report)
    emit(echo, report) if as_json else echo(for_terminal(core.text(report)))
    return core.exit_code(report)


def _pins(values: tuple[str, ...]) -> list[str]:
    from shiftgit.errors import UsageError

    for value in values:
        if len(value) != 64 or any(ch not in "0123456789abcdefABCDEF" for ch in value):
            raise UsageError(f"--expect-sha256 {value!r}: give the 64-hex-digit digest `shiftgit verify` prints")
    return [v.lower() for v in values]


def verified(store: Any, run: str, report: Any) -> None:
    """Checks rerun here: the open agent sessions verified before their first checkpoint (ledger `sessions`)."""
    from shiftgit.agents import sessions
    from shiftgit.errors import ShiftError

    if isinstance(report, dict) and report.get("checks") and report.get("result") != "refused":
        try:
            sessions.verified(store, run)
        except ShiftError:  # a ledger that cannot be written now is reported by the next command that must
            pass


ROUTES = (Command(("checkpoint",), CHECKPOINT, False, checkpoint), Command(("check",), CHECK, True, check),
          Command(("effect", "run"), EFFECT_RUN, True, effect_run),
          Command(("verify",), VERIFY, False, verify, argument="run_id"))
