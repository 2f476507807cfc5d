"""Services: long-running processes started detached from shiftgit and recorded as effects.

A service gets its own session, no parent-death signal, stdin from /dev/null and its output in
`<git-dir>/shift/services/<name>.log`, so it outlives the shiftgit process (and the agent) that
started it, and a caller capturing shiftgit's output never waits for it. It is recorded as an
effect of kind `service`, reversible, with name, pid, port, argv and the process identity (host,
boot, pid, start time) that tells a reused pid from the real one.

Each start is its own effect: `service:<name>` for the first, `service:<name>@2`, `@3`, ... for
later ones, so a stopped (compensated) or dead start stays on record as it was, and no record ever
moves out of a final state (what the commit gate checks). Commands naming a service act on its
latest start.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from typing import Any

from shiftgit import procs
from shiftgit.effects.approvals import now_iso
from shiftgit.effects.runner import check_kind, check_open, history_with, put, view, workdir_of
from shiftgit.errors import CheckFailed, UsageError
from shiftgit.ledger.argvsecrets import argv_secret
from shiftgit.ledger.budgets import require_budget
from shiftgit.ledger.model import Effect, Ledger
from shiftgit.ledger.record import replace
from shiftgit.ledger.store import Store

KIND = "service"
STOP_GRACE = 5.0
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def validate_name(name: str) -> str:
    if not _NAME.match(name):
        raise UsageError(f"bad service name {name!r}: use 1-64 of A-Z a-z 0-9 . _ -, starting with a letter or digit")
    return name


def starts(ledger: Ledger, name: str) -> list[Effect]:
    """Every recorded start of the service `name`, oldest first."""
    return [e for e in ledger.effects if e.kind == KIND and e.name == name]


def next_key(ledger: Ledger, name: str) -> str:
    count = len(starts(ledger, name))
    key = f"service:{name}" + (f"@{count + 1}" if count else "")
    while ledger.effect(key) is not None:  # a hand-made record in the way
        count += 1
        key = f"service:{name}@{count + 1}"
    return key


def is_running(effect: Effect) -> bool:
    """Its very process still runs here (pid, start time, not a zombie)."""
    return effect.process is not None and procs.is_alive(effect.process) is True


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def alive(effect: Effect) -> bool:
    """The process runs and, when a port was recorded, the port accepts connections."""
    return is_running(effect) and (effect.port is None or port_open(effect.port))


def service_view(effect: Effect) -> dict[str, Any]:
    """`alive` True or False, or None (`liveness` unknown) for a service recorded on another host."""
    host = (effect.process or {}).get("host")
    if effect.process is not None and procs.is_alive(effect.process) is None:
        return {**view(effect), "alive": None, "liveness": "unknown", "host": host}
    state = alive(effect)
    return {**view(effect), "alive": state, "liveness": "alive" if state else "dead", "host": host}


def start(store: Store, run: str, name: str, argv: tuple[str, ...], *, port: int | None = None,
          cwd: str = ".") -> tuple[Effect, list[str]]:
    """Start `argv` detached and record it; returns the record and warnings."""
    validate_name(name)
    if not argv:
        raise UsageError("no command given; put it after `--`, e.g. `shiftgit service start --name web -- "
                         "python -m http.server 8000`")
    if port is not None and not 0 < port < 65536:
        raise UsageError(f"--port {port}: use 1-65535")
    where = argv_secret(argv)
    if where is not None:
        raise UsageError(f"the command line holds what looks like a secret ({where}); pass it through an environment "
                         "variable so it never lands in git; nothing was started")
    workdir = workdir_of(store, cwd)
    warnings = [f"port {port} already accepts connections before the service started"] \
        if port is not None and port_open(port) else []
    log = store.repo.private("services", f"{name}.log")
    key = _claim(store, run, name, argv, port, cwd, str(log))
    try:
        with open(log, "ab") as out:
            proc = subprocess.Popen(list(argv), cwd=workdir, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
    except OSError as exc:
        _settle(store, run, key, "failed", {"result": f"did not start: {exc.strerror or exc}"})
        raise UsageError(f"service {name!r} did not start: {argv[0]!r}: {exc.strerror or exc}") from None
    effect = _settle(store, run, key, "completed", {
        "pid": proc.pid, "process": procs.identity(proc.pid), "started_at": now_iso(),
        "result": f"started pid {proc.pid}"})
    return effect, warnings


def _claim(store: Store, run: str, name: str, argv: tuple[str, ...], port: int | None, cwd: str,
           log: str) -> str:
    """Record a new start as attempted before the process exists (a crash here leaves it `unknown`)."""
    keys: list[str] = []

    def change(ledger: Ledger) -> Ledger:
        check_open(ledger)
        refusal = check_kind(ledger, KIND)
        if refusal:
            raise UsageError(refusal)
        require_budget(ledger, f"service {name!r}")
        for old in starts(ledger, name):
            if is_running(old) or (old.state == "attempted" and procs.is_alive(old.runner)):
                raise CheckFailed(f"service {name!r} is already running (pid {old.pid}); stop it first with "
                                  f"`shiftgit service stop --name {name}`")
        at = now_iso()
        key = next_key(ledger, name)
        keys.append(key)
        new = Effect(key=key, kind=KIND, reversibility="reversible", state="attempted", name=name, argv=argv,
                     port=port, cwd=cwd, log=log, runner=procs.identity(), attempts=1, created_at=at,
                     updated_at=at, compensate=f"shiftgit service stop --name {name}")
        return put(ledger, new, at)

    store.update(run, change)
    return keys[0]


def _settle(store: Store, run: str, key: str, state: str, fields: dict[str, Any]) -> Effect:
    made: list[Effect] = []

    def change(ledger: Ledger) -> Ledger:
        old = ledger.effect(key)
        assert old is not None
        at = now_iso()
        new = replace(old, state=state, updated_at=at, **fields,
                      history=history_with(old, {"at": at, "state": state, "result": fields.get("result")}))
        made.append(new)
        return put(ledger, new, at)

    store.update(run, change)
    return made[0]


def stop(store: Store, run: str, name: str) -> Effect:
    """Stop a recorded service (its whole process group) and record it as compensated.

    Only a process the record identifies (host, boot, pid and start time, all matching) is signalled: a live pid
    under a record without them (hand-edited, merged from elsewhere) is refused, never guessed at."""
    validate_name(name)
    effect = next(reversed(starts(store.read(run), name)), None)
    if effect is None:
        raise UsageError(f"no service {name!r} on run {run!r}; start one with `shiftgit service start --name {name} "
                         "-- CMD`")
    if effect.state == "compensated":
        return effect
    if effect.state != "completed" or effect.pid is None:
        raise CheckFailed(f"service {name!r} is {effect.state}, with no process recorded; settle it with "
                          f"`shiftgit effect reconcile {effect.key} --state failed|compensated`")
    was, pid = "was not running", effect.pid
    if procs.is_identified(effect.process):
        assert effect.process is not None
        pid = effect.process["pid"]
        _terminate(effect.process)
        was = "stopped"
    elif is_running(effect) or (effect.process is None and procs.pid_exists(pid)):
        raise CheckFailed(f"service {name!r}: pid {pid} runs, but the record does not identify the process (no start "
                          "time and boot of its own), so nothing was signalled; stop it by hand, then run "
                          f"`shiftgit effect reconcile {effect.key} --state compensated`")
    return _settle(store, run, effect.key, "compensated", {"result": f"{was} (pid {pid})"})


def _terminate(process: Mapping[str, Any]) -> None:
    """Stop the very process `stop` checked (its identity: pid and start time), and the group it leads.

    The record's `pid` field is not what was checked: only the identity's pid is signalled. Before the last
    SIGKILL the identity is checked again: a leader that exited in the grace time frees its pid for a new
    process (and group) of someone else's; a group whose number no process holds is the service's own leftover
    (the kernel reuses no pid a live group still uses)."""
    pid = process["pid"]
    group = pid if _pgid(pid) == pid else None  # started in a session of its own: it leads its group
    _signal(pid, group, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    while time.monotonic() < deadline and procs.is_alive(process):
        time.sleep(0.05)
    if procs.is_alive(process) or (group is not None and not procs.pid_exists(pid)):
        _signal(pid, group, signal.SIGKILL)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _signal(pid: int, group: int | None, sig: int) -> None:
    if group is not None:
        procs.kill_group(group, sig)
        return
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def services(ledger: Ledger) -> list[dict[str, Any]]:
    return [service_view(e) for e in ledger.effects if e.kind == KIND]
