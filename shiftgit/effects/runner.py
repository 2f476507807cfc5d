"""The side-effect ledger (SPEC §2, §7): each key runs at most once; an unknown outcome waits for a human.

`effect run` writes `planned`, then `attempted` (with the runner's identity), each durably, before the command
starts; then `completed` or `failed` with the result. A record left `attempted` by a process that is gone is shown
as `unknown` and refused until `effect reconcile`. The command runs in its own process group, dies with the
shiftgit process (parent-death signal) and so do its children (a watchdog kills the group).
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from shiftgit import procs
from shiftgit.effects import approvals, external
from shiftgit.effects.approvals import now_iso, valid_kind, validate_key
from shiftgit.errors import CheckFailed, UsageError
from shiftgit.evidence import runner as evidence
from shiftgit.ledger.argvsecrets import argv_secret
from shiftgit.ledger.budgets import require_budget
from shiftgit.ledger.model import FINISH_STATUSES, Effect, Ledger
from shiftgit.ledger.record import replace
from shiftgit.ledger.secrets import redact
from shiftgit.ledger.store import Store

REVERSIBILITY = ("repeatable", "reversible", "irreversible")
RECONCILED = ("completed", "failed", "compensated")
RECORDED = ("completed", "failed")
HISTORY_CAP, TAIL_CHARS, PROBE_TIMEOUT, TIMED_OUT = 20, 2000, 120.0, 124
# Test-only: "after-planned", "after-attempted", "after-command" (comma-separated) make `effect run`
# print `shiftgit: test pause: STAGE` on stderr and sleep there, so crash tests can kill it at that stage.
PAUSE_ENV = "SHIFTGIT_TEST_PAUSE"


class EffectInput(NamedTuple):
    key: str
    kind: str
    reversibility: str | None = None  # None: the recorded one, else irreversible (the safe default)
    argv: tuple[str, ...] = ()
    probe: str | None = None
    compensate: str | None = None
    cwd: str = "."
    timeout: float | None = None
    capture_id: str | None = None  # a regex: its first match in the output is the effect's external_id


class Outcome(NamedTuple):
    effect: Effect
    ran: bool        # False: the recorded result of a completed key was returned
    exit_code: int   # what the CLI exits with


# -- how a record reads now ------------------------------------------------------------------

def state_of(effect: Effect) -> str:
    """The state as it stands now: `attempted` by a process that is gone (or elsewhere) is `unknown`."""
    if effect.state == "attempted" and procs.is_alive(effect.runner) is not True:
        return "unknown"
    return effect.state


def safe_to_repeat(effect: Effect) -> bool:
    """Running it again cannot do harm the record does not already allow for."""
    state = state_of(effect)
    if state in ("attempted", "unknown"):  # refused until a human reconciles it
        return False
    return state in ("planned", "failed") or effect.reversibility == "repeatable"


def view(effect: Effect) -> dict[str, Any]:
    return {**effect.to_dict(), "state": state_of(effect), "recorded_state": effect.state,
            "safe_to_repeat": safe_to_repeat(effect)}


def unknown(ledger: Ledger) -> list[str]:
    """Keys whose outcome nobody knows (a human must reconcile them)."""
    return [e.key for e in ledger.effects if state_of(e) == "unknown"]


# -- policy ------------------------------------------------------------------------------------

def check_kind(ledger: Ledger, kind: str) -> str | None:
    """Why the contract refuses this kind, or None."""
    contract = ledger.contract
    if kind in contract.forbid:
        return (f"effect kind {kind!r} is forbidden by the contract of run {ledger.run!r}; nothing was run or recorded "
                f"(only `shiftgit amend --forbid ... --reason R` changes that)")
    if contract.allow and kind not in contract.allow:
        return (f"effect kind {kind!r} is not among the allowed kinds of run {ledger.run!r} "
                f"({', '.join(contract.allow)}); nothing was run or recorded")
    return None


def check_open(ledger: Ledger) -> None:
    if ledger.status in FINISH_STATUSES:
        raise UsageError(f"run {ledger.run!r} is finished ({ledger.status}); it causes no more effects: start a "
                         "new run for new work")


def validate_input(spec: EffectInput) -> None:
    if spec.capture_id is not None:
        try:
            re.compile(spec.capture_id)
        except re.error as exc:
            raise UsageError(f"--capture-id {spec.capture_id!r} is not a regular expression ({exc}); nothing was "
                             "run") from None
    validate_key(spec.key)
    if not valid_kind(spec.kind):
        raise UsageError(f"bad effect kind {spec.kind!r}: use 1-64 of A-Z a-z 0-9 . _ : - (e.g. db_migration)")
    if spec.reversibility is not None and spec.reversibility not in REVERSIBILITY:
        raise UsageError(f"unknown reversibility {spec.reversibility!r}; use one of {', '.join(REVERSIBILITY)}")
    commands = [("the command", list(spec.argv))]
    for name, command in (("--probe", spec.probe), ("--compensate", spec.compensate)):
        if command is not None:
            commands.append((name, _split(command, name)))
    for what, argv in commands:
        where = argv_secret(argv)
        if where is not None:
            raise UsageError(f"{what} holds what looks like a secret ({where}); pass it through an environment "
                             "variable so it never lands in git; nothing was run or recorded")


def _split(text: str, what: str) -> list[str]:
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"{what} {text!r}: {exc}") from None
    if not argv:
        raise UsageError(f"{what} is empty; give a command, e.g. {what} \"./check-migration 0042\"")
    return argv


def _same(old: Effect, spec: EffectInput) -> None:
    if old.kind != spec.kind or (spec.reversibility and spec.reversibility != old.reversibility):
        raise UsageError(f"effect {old.key!r} is recorded as kind {old.kind!r}, {old.reversibility}; a key names "
                         f"one effect: use the recorded kind and reversibility, or a new key")


def _admit(ledger: Ledger, spec: EffectInput) -> Effect | None:
    """Refuse what may not run now; return the completed record to replay, or None when it may run."""
    check_open(ledger)
    refusal = check_kind(ledger, spec.kind)
    if refusal:
        raise UsageError(refusal)
    old = ledger.effect(spec.key)
    if old is not None:
        state = state_of(old)
        if state in ("attempted", "unknown", "compensated"):  # whatever kind the record says: the key ran
            raise CheckFailed(_blocked(ledger.run, old, state))
        _same(old, spec)
        if state == "completed":
            return old
    require_budget(ledger, f"effect {spec.key!r}")
    if _reversibility(old, spec) == "irreversible":
        approvals.require_confirmed(ledger, spec.key)
    if _reversibility(old, spec) == "irreversible" and not approvals.is_granted(ledger, spec.key):
        raise CheckFailed(f"effect {spec.key!r} is irreversible and has no granted approval for its key on run "
                          f"{ledger.run!r}; ask with `shiftgit approval request {spec.key} --reason TEXT` "
                          f"(then `shiftgit stop --reason waiting_for_approval` while you wait)")
    return None


def _blocked(run: str, old: Effect, state: str) -> str:
    if state == "attempted":
        pid = (old.runner or {}).get("pid")
        return f"effect {old.key!r} is running now (shiftgit pid {pid}); wait for it to finish"
    if state == "compensated":
        return f"effect {old.key!r} was compensated (undone); to apply it again use a new key"
    why = old.result if old.state == "unknown" and old.result else "the process that ran it is gone"
    return (f"effect {old.key!r} was attempted and its outcome is unknown ({why}); it will not run "
            f"again until a human reconciles it: `shiftgit effect reconcile {old.key} --state "
            f"completed|failed|compensated --evidence TEXT`" + (" (or `--probe`)" if old.probe else ""))


def _reversibility(old: Effect | None, spec: EffectInput) -> str:
    return spec.reversibility or (old.reversibility if old else "irreversible")


# -- effect run --------------------------------------------------------------------------------

def run_effect(store: Store, run: str, spec: EffectInput, *, echo: BinaryIO | None = None,
               environ: Mapping[str, str] | None = None, shared: Callable[[], object] | None = None) -> Outcome:
    """Run a keyed effect at most once: planned, attempted (durable), then the command, then the result. SHARED
    (runs/foreign.share): called with the result, and before the command unless repeatable (may run again anywhere)."""
    env, shared = os.environ if environ is None else environ, shared or (lambda: None)
    validate_input(spec)
    if not spec.argv:
        raise UsageError("no command given; put it after `--`, e.g. `shiftgit effect run --key K --kind deploy "
                         "-- ./deploy.sh`")
    workdir = workdir_of(store, spec.cwd)
    ledger = store.read(run)
    old = ledger.effect(spec.key)
    if old is not None and old.state == "attempted" and state_of(old) == "unknown":
        _mark_unknown(store, run, spec.key)
    replay = _admit(ledger, spec)  # refusals and replays need no lock and write nothing
    if replay is None:
        replay = _transition(store, run, spec, "planned")  # admitted again under the lock
        if replay is None and spec.probe:
            from shiftgit.effects import probes

            probes.remember_recorded(store.repo, probes.command(spec.key, _split(spec.probe, "--probe"), spec.cwd),
                                     now_iso(), env)
    if replay is None:
        _pause(env, "after-planned")
        replay = _transition(store, run, spec, "attempted")
    if replay is not None:
        return Outcome(effect=replay, ran=False, exit_code=0)
    shared() if _reversibility(old, spec) != "repeatable" else None
    _pause(env, "after-attempted")
    try:
        return _execute(store, run, spec, workdir, echo, env)
    finally:
        shared()


def workdir_of(store: Store, cwd: str) -> Path:
    workdir = (store.repo.root / cwd).resolve()
    if not workdir.is_dir() or not workdir.is_relative_to(store.repo.root):
        raise UsageError(f"--cwd {cwd!r} is not a directory inside the repository")
    return workdir


def _transition(store: Store, run: str, spec: EffectInput, state: str) -> Effect | None:
    """Under the run's lock: admit again, then write `planned` or `attempted`. Returns a replay, if any."""
    replay: list[Effect] = []

    def change(ledger: Ledger) -> Ledger:
        done = _admit(ledger, spec)
        if done is not None:
            replay.append(done)
            return ledger
        at = now_iso()
        old = ledger.effect(spec.key)
        base = old or Effect(key=spec.key, kind=spec.kind, reversibility=_reversibility(None, spec), created_at=at)
        new = replace(base, state=state, argv=spec.argv, probe=spec.probe or base.probe,
                      compensate=spec.compensate or base.compensate, cwd=spec.cwd, timeout=spec.timeout,
                      runner=procs.identity(), updated_at=at)
        if state == "attempted":
            new = replace(new, attempts=base.attempts + 1, started_at=at, finished_at=None, exit_code=None,
                          duration_s=None, output_tail=None, output_sha256=None, result=None, evidence=None)
        return put(ledger, new, at)

    store.update(run, change, interim=state == "planned")  # `attempted` follows at once (durable, and validated)
    return replay[0] if replay else None


def _execute(store: Store, run: str, spec: EffectInput, workdir: Path, echo: BinaryIO | None,
             env: Mapping[str, str]) -> Outcome:
    guard: list[Any] = []

    def started(pid: int) -> None:
        try:
            watchdog = procs.guard_group(pid)
        except OSError:  # the parent-death signal still takes the command itself down with us
            watchdog = None
        guard.extend([pid, watchdog])

    try:
        result = evidence.run(spec.argv, cwd=str(workdir), timeout=spec.timeout, echo=echo, on_start=started)
    except UsageError as exc:  # it never started: nothing was applied
        _finish(store, run, spec.key, state="failed", fields={"result": f"did not start: {exc}"})
        raise
    except BaseException:  # interrupted mid-way: nobody knows what it did
        _finish(store, run, spec.key, state="unknown", fields={"result": "interrupted while running"})
        raise
    finally:
        if guard:
            procs.release(guard[1])
            procs.kill_group(guard[0])  # what it left behind in its group (long-lived: `service start`)
    _pause(env, "after-command")
    state = "unknown" if result.timed_out else ("completed" if result.exit_code == 0 else "failed")
    summary = "timed out: killed mid-way, outcome unknown" if result.timed_out else f"exit {result.exit_code}"
    effect = _finish(store, run, spec.key, state=state, fields={
        "exit_code": result.exit_code, "result": summary, "duration_s": result.duration_s,
        "output_tail": redact(result.tail[-TAIL_CHARS:]), "output_sha256": result.sha256},
        external_id=external.capture(spec.capture_id, result.output))
    code = TIMED_OUT if result.exit_code is None else result.exit_code
    return Outcome(effect=effect, ran=True, exit_code=code)


def _finish(store: Store, run: str, key: str, *, state: str, fields: Mapping[str, Any],
            external_id: str | None = None) -> Effect:
    made: list[Effect] = []

    def change(ledger: Ledger) -> Ledger:
        at = now_iso()
        old = ledger.effect(key)
        assert old is not None, f"effect {key} vanished from the ledger while it ran"
        entry = {"at": at, "state": state, "attempt": old.attempts,
                 **{k: fields[k] for k in ("exit_code", "result") if k in fields}}
        extra = dict(old.extra, external_id=external_id) if external_id else old.extra
        new = replace(old, state=state, finished_at=at, updated_at=at, history=history_with(old, entry), extra=extra,
                      **fields)
        made.append(new)
        return put(ledger, new, at)

    store.update(run, change)
    return made[0]


def _mark_unknown(store: Store, run: str, key: str) -> None:
    """Make an `attempted` record whose runner is gone durably `unknown` (re-checked under the lock)."""
    def change(ledger: Ledger) -> Ledger:
        old = ledger.effect(key)
        if old is None or old.state != "attempted" or state_of(old) != "unknown":
            return ledger
        at = now_iso()
        why = "the process that ran it is gone"
        entry = {"at": at, "state": "unknown", "result": why}
        new = replace(old, state="unknown", result=why, updated_at=at, history=history_with(old, entry))
        return put(ledger, new, at)

    store.update(run, change)


def _pause(environ: Mapping[str, str], stage: str) -> None:  # test-only (PAUSE_ENV): where crash tests kill it
    if stage in environ.get(PAUSE_ENV, "").split(","):
        sys.stderr.write(f"shiftgit: test pause: {stage}\n")
        sys.stderr.flush()
        time.sleep(float(environ.get(PAUSE_ENV + "_SECONDS", "60")))


# -- shared helpers ------------------------------------------------------------------------------

def put(ledger: Ledger, effect: Effect, at: str) -> Ledger:
    """The ledger with `effect` added, or replacing the record with its key (order kept)."""
    keys = [e.key for e in ledger.effects]  # one pass (1,000 effects, three writes per `effect run`)
    at_key = keys.index(effect.key) if effect.key in keys else len(keys)
    effects = (*ledger.effects[:at_key], effect, *ledger.effects[at_key + 1:]) if keys.count(effect.key) < 2 else \
        tuple(effect if e.key == effect.key else e for e in ledger.effects)  # a hand-made ledger's duplicates
    return replace(ledger, effects=effects, updated_at=at)


def history_with(effect: Effect, entry: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    return (*effect.history, {k: v for k, v in entry.items() if v is not None})[-HISTORY_CAP:]


def probe_argv(effect: Effect) -> list[str]:
    if not effect.probe:
        raise UsageError(f"effect {effect.key!r} has no recorded probe; reconcile it by hand with "
                         f"`shiftgit effect reconcile {effect.key} --state completed|failed|compensated`")
    return _split(effect.probe, "the recorded probe")

