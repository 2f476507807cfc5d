"""Stable ids for external objects (a PR URL, a deployment id): an effect's `external_id` and its status.

`effect run --capture-id REGEX` keeps the first match of the command's output as the effect's
`external_id`; `effect record --external-id ID` records one by hand; `effect status KEY` refreshes
the object's status through the effect's recorded probe (a recorded command: it runs only when
trusted in this clone, `effects/probes.require_trusted`), with the id in `SHIFT_EXTERNAL_ID`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from shiftgit.effects import probes
from shiftgit.effects.approvals import now_iso
from shiftgit.errors import CheckFailed, UsageError
from shiftgit.evidence import runner as evidence
from shiftgit.ledger.model import Effect, Ledger
from shiftgit.ledger.record import replace
from shiftgit.ledger.secrets import redact
from shiftgit.ledger.store import Store

ID_CAP = 500
STATUS_TIMEOUT = 60.0


def capture(pattern: str | None, output: str) -> str | None:
    """`--capture-id REGEX`: the first match in the output (its first group, when it has one), redacted."""
    if not pattern:
        return None
    match = re.search(pattern, output)
    if match is None:
        return None
    return redact(match.group(1) if match.re.groups else match.group(0))[:ID_CAP] or None


def external_id(effect: Effect) -> str | None:
    value = effect.extra.get("external_id")
    return value if isinstance(value, str) else None


def external_status(effect: Effect) -> Mapping[str, Any] | None:
    value = effect.extra.get("external_status")
    return value if isinstance(value, Mapping) else None


def status(store: Store, run: str, key: str, environ: Mapping[str, str] | None = None) -> Effect:
    """Run the effect's recorded probe (trusted only) and keep its answer as the external object's status."""
    effect = _effect(store.read(run), key)
    probe = probes.of(effect)
    if probe is None:
        raise UsageError(f"effect {key!r} has no recorded probe to ask the object's status; record one with "
                         f"`shiftgit effect record --key NEW --probe CMD`, or settle it by hand with "
                         f"`shiftgit effect reconcile {key} --state STATE --evidence TEXT`")
    probes.require_trusted(store.repo, run, probe, environ)
    argv = list(probe.argv)
    workdir = (store.repo.root / probe.cwd).resolve()
    if not workdir.is_dir() or not workdir.is_relative_to(store.repo.root):
        raise UsageError(f"the probe's cwd {probe.cwd!r} is not a directory inside the repository")
    env = dict(os.environ if environ is None else environ)
    if external_id(effect):
        env["SHIFT_EXTERNAL_ID"] = str(external_id(effect))
    result = evidence.run(argv, cwd=str(workdir), timeout=STATUS_TIMEOUT, env=env)
    if result.exit_code is None:
        raise CheckFailed(f"the probe of {key!r} timed out after {STATUS_TIMEOUT:.0f}s; the status was not changed")
    lines = redact(result.tail).strip().splitlines()
    answer = {"at": now_iso(), "exit_code": result.exit_code, "said": (lines[-1] if lines else "")[:300]}
    made: list[Effect] = []

    def change(ledger: Ledger) -> Ledger:
        current = _effect(ledger, key)
        new = replace(current, extra=dict(current.extra, external_status=answer))
        made.append(new)
        effects = tuple(new if e.key == key else e for e in ledger.effects)
        return replace(ledger, effects=effects, updated_at=str(answer["at"]))

    store.update(run, change)
    return made[0]


def _effect(ledger: Ledger, key: str) -> Effect:
    effect = ledger.effect(key)
    if effect is None:
        known = ", ".join(e.key for e in ledger.effects) or "none yet"
        raise UsageError(f"no effect {key!r} on run {ledger.run!r} (effects: {known})")
    return effect
