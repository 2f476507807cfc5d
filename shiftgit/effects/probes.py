"""Probes are recorded commands: they run only when trusted in this clone, like checks.

A probe arrives in the ledger like any recorded command — possibly from another clone, written
by someone else — so `effect reconcile --probe` runs it only when it is trusted here: recorded in
this clone by a person (`effect run|record --probe` outside an agent), or approved with
`shiftgit trust`. Inside a coding agent's own process it runs only with a person's trust: a probe
an agent recorded (or one that arrived with a clone) waits for `shiftgit trust`, which a person
runs in a terminal.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from shiftgit.errors import Refused
from shiftgit.ledger import trustdb
from shiftgit.ledger.model import Effect
from shiftgit.procs import agent_markers
from shiftgit.repo import Repo


def command(key: str, argv: list[str], cwd: str | None) -> trustdb.Command:
    """The probe of effect `key` as trust sees it (bound to its argv and cwd)."""
    where = cwd or "."
    return trustdb.Command(f"probe of {key}", tuple(argv), where, False, trustdb.command_digest(argv, where),
                           kind="probe")


def of(effect: Effect) -> trustdb.Command | None:
    """The effect's probe, or None when it has none (or one that does not parse)."""
    import shlex

    if not effect.probe:
        return None
    try:
        argv = shlex.split(effect.probe)
    except ValueError:
        return None
    return command(effect.key, argv, effect.cwd) if argv else None


def remember_recorded(repo: Repo, probe: trustdb.Command | None, at: str,
                      environ: Mapping[str, str] | None = None) -> None:
    """A probe a person types in this clone is trusted here; one an agent records waits for `trust`."""
    env = os.environ if environ is None else environ
    if probe is None or agent_markers(env):
        return
    trustdb.remember_quietly(repo, probe, at)


def require_trusted(repo: Repo, run: str, probe: trustdb.Command, environ: Mapping[str, str] | None = None) -> None:
    """Refuse (exit 3) a probe nobody trusted here; inside an agent, one no person trusted."""
    env = os.environ if environ is None else environ
    markers = agent_markers(env)
    if trustdb.is_trusted(repo, probe.digest, env, human=True):
        return
    if not markers and trustdb.is_trusted(repo, probe.digest, env):
        return
    who = (f"; inside a coding agent ({', '.join(markers)} set) a probe runs only after a person trusted it"
           if markers else "")
    raise Refused(f"the {probe.name} is not trusted in this clone (sha256 {probe.digest}){who}; nothing was run: "
                  f"a person reviews and approves it with `shiftgit trust {run}`, or settles the effect by hand "
                  f"with `shiftgit effect reconcile KEY --state completed|failed --evidence TEXT`")
