"""What humans tell the effect ledger: an effect done outside shiftgit, and the settled outcome of one.

`record` logs an effect that already happened elsewhere (the truth is recorded even when the
contract would have refused it; the caller gets warnings). `reconcile` settles a key's state —
by a human's word (`--state`, with evidence) or by running the probe recorded with it. Probes
are recorded commands: they run only here, on an explicit human command, never from a hook, and
only when trusted in this clone (`effects.probes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from shiftgit.effects import approvals, probes
from shiftgit.effects.approvals import now_iso
from shiftgit.effects.runner import (
    RECONCILED,
    RECORDED,
    TAIL_CHARS,
    EffectInput,
    check_kind,
    history_with,
    probe_argv,
    put,
    state_of,
    validate_input,
    view,
    workdir_of,
)
from shiftgit.errors import CheckFailed, UsageError
from shiftgit.evidence import runner as evidence
from shiftgit.ledger.model import Effect, Ledger
from shiftgit.ledger.record import replace
from shiftgit.ledger.secrets import redact
from shiftgit.ledger.store import Store

PROBE_TIMEOUT = 120.0


def record(store: Store, run: str, spec: EffectInput, state: str,
           evidence_text: str | None, external_id: str | None = None) -> tuple[Effect, list[str]]:
    """Log an effect done outside shiftgit. Returns the record and warnings (what the contract says)."""
    validate_input(spec)
    if external_id is not None and not external_id.strip():
        raise UsageError("--external-id is empty; give the object's id (a PR URL, a deployment id)")
    if state not in RECORDED:
        raise UsageError(f"--state {state!r}: an effect done elsewhere is recorded as completed or failed")
    made: list[Effect] = []
    warnings: list[str] = []

    def change(ledger: Ledger) -> Ledger:
        if ledger.effect(spec.key) is not None:
            raise UsageError(f"effect {spec.key!r} is already recorded on run {run!r}; settle its outcome with "
                             f"`shiftgit effect reconcile {spec.key} --state completed|failed|compensated`")
        warnings[:] = _warnings(ledger, spec)
        at = now_iso()
        new = Effect(key=spec.key, kind=spec.kind, reversibility=spec.reversibility or "irreversible",
                     state=state, argv=spec.argv, probe=spec.probe, compensate=spec.compensate, created_at=at,
                     updated_at=at, evidence=evidence_text, result="recorded: done outside shiftgit",
                     history=({"at": at, "state": state, "result": "recorded: done outside shiftgit"},),
                     extra={"external_id": external_id} if external_id else {})
        made.append(new)
        return put(ledger, new, at)

    store.update(run, change)
    probes.remember_recorded(store.repo, probes.of(made[0]), made[0].created_at)
    return made[0], warnings


def _warnings(ledger: Ledger, spec: EffectInput) -> list[str]:
    found = []
    refusal = check_kind(ledger, spec.kind)
    if refusal:
        found.append(f"recorded anyway (it already happened): kind {spec.kind!r} breaks the contract")
    if (spec.reversibility or "irreversible") == "irreversible" and not approvals.is_granted(ledger, spec.key):
        found.append(f"recorded anyway (it already happened): irreversible effect {spec.key!r} had no granted "
                     "approval")
    return found


@dataclass(frozen=True)
class Settlement:
    state: str | None = None         # a human's word, or None to run the recorded probe
    evidence: str | None = None
    by: str | None = None


def reconcile(store: Store, run: str, key: str, how: Settlement, *, echo: BinaryIO | None = None,
              environ: Mapping[str, str] | None = None) -> Effect:
    """Settle a key's outcome: completed, failed (it may run again) or compensated (undone).

    The recorded probe runs only when trusted in this clone (a person's trust inside an agent)."""
    approvals.validate_key(key)
    if how.state is not None and how.state not in RECONCILED:
        raise UsageError(f"--state {how.state!r}: use one of {', '.join(RECONCILED)}")
    old = _settleable(store.read(run), key)
    state, note = how.state, how.evidence
    if state is not None:
        _check_final(old, state)
    elif old.state == "compensated":
        _check_final(old, "completed")
    probe: dict[str, Any] = {}
    if state is None:
        probe_argv(old)  # no probe recorded: say so first
        probes.require_trusted(store.repo, run, probes.command(old.key, probe_argv(old), old.cwd), environ)
        state, probe = _run_probe(store, old, echo)
        _check_final(old, state, probe["result"])
        note = note or probe["result"]
    made: list[Effect] = []

    def change(ledger: Ledger) -> Ledger:
        current = _settleable(ledger, key)
        _check_final(current, str(state))
        at = now_iso()
        entry = {"at": at, "state": state, "from": state_of(current), "by": how.by, "evidence": note,
                 "result": "reconciled by probe" if probe else "reconciled by hand", **probe}
        new = replace(current, state=state, evidence=note, updated_at=at, history=history_with(current, entry))
        made.append(new)
        return put(ledger, new, at)

    store.update(run, change)
    return made[0]


FINAL = {"completed": ("completed", "compensated"), "compensated": ("compensated",)}


def _check_final(effect: Effect, state: str, why: str | None = None) -> None:
    """A completed effect stays completed or becomes compensated; a compensated one stays so."""
    allowed = FINAL.get(effect.state)
    if allowed is not None and state not in allowed:
        said = f"{why}, but " if why else ""
        raise CheckFailed(f"{said}effect {effect.key!r} is recorded {effect.state}, which is final"
                          + (" (it can only become compensated, once undone)" if effect.state == "completed" else "")
                          + "; to apply it again use a new key")


def _settleable(ledger: Ledger, key: str) -> Effect:
    effect = ledger.effect(key)
    if effect is None:
        known = ", ".join(e.key for e in ledger.effects) or "none yet"
        raise UsageError(f"no effect {key!r} on run {ledger.run!r} (effects: {known})")
    if state_of(effect) == "attempted":
        pid = (effect.runner or {}).get("pid")
        raise CheckFailed(f"effect {key!r} is running now (shiftgit pid {pid}); reconcile it once that process ends")
    return effect


def _run_probe(store: Store, effect: Effect, echo: BinaryIO | None) -> tuple[str, dict[str, Any]]:
    argv = probe_argv(effect)
    workdir = workdir_of(store, effect.cwd or ".")
    result = evidence.run(argv, cwd=str(workdir), timeout=PROBE_TIMEOUT, echo=echo)
    if result.exit_code is None:
        raise CheckFailed(f"the probe for {effect.key!r} timed out after {PROBE_TIMEOUT:.0f}s; nothing changed")
    state = "completed" if result.exit_code == 0 else "failed"
    tail = redact(result.tail[-TAIL_CHARS:]).strip()
    return state, {"probe_exit_code": result.exit_code,
                   "result": f"probe `{effect.probe}` exited {result.exit_code}" + (f": {tail[-300:]}" if tail else "")}


def probe_of(ledger: Ledger, key: str) -> str:
    """The recorded probe command of a key (shown to the human before it runs)."""
    effect = _settleable(ledger, key)
    probe_argv(effect)
    return str(effect.probe)


def views(ledger: Ledger) -> list[Mapping[str, Any]]:
    return [view(e) for e in ledger.effects]
