"""Is a recorded service still alive? A pid probe alone lies: a killed process stays a zombie a while."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shiftgit.procs import hostname, pid_exists, stat_fields

CONNECT_TIMEOUT = 0.3


def process_state(pid: int) -> str | None:
    """The one-letter state from /proc/PID/stat (R, S, D, Z, ...); None when there is no such process."""
    fields = stat_fields(pid)
    return (fields[0] if fields else "?") if fields is not None else None


def same_process(pid: int, identity: Mapping[str, Any]) -> bool:
    """A recorded identity (host, boot id, start ticks; see effects' procs.identity) still names this pid."""
    if identity.get("host") not in (None, hostname()):
        return False
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = None
    if identity.get("boot") and boot and identity["boot"] != boot:
        return False
    fields = stat_fields(pid)
    start = identity.get("start")
    return not (isinstance(start, int) and fields is not None and len(fields) > 19 and int(fields[19]) != start)


def pid_alive(pid: int) -> bool:
    """The pid exists and is not a zombie (procs.pid_exists)."""
    return pid_exists(pid)


def port_open(port: int, host: str = "127.0.0.1", timeout: float = CONNECT_TIMEOUT) -> bool:
    import socket  # here: the liveness of a process needs none

    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def is_alive(pid: int | None, port: int | None, identity: Mapping[str, Any] | None = None) -> bool:
    """The pid exists, is not a zombie (nor a reused pid, when its identity was recorded), and, when a port
    was recorded, the port accepts connections."""
    if pid is None or not pid_alive(pid):
        return False
    if identity and not same_process(pid, identity):
        return False
    return port is None or port_open(port)


def liveness(pid: int | None, port: int | None, identity: Mapping[str, Any] | None = None) -> str:
    """alive, dead, or unknown: no pid was recorded, or it was recorded on another host (nothing here can tell)."""
    if pid is None or (identity and identity.get("host") not in (None, hostname())):
        return "unknown"
    return "alive" if is_alive(pid, port, identity) else "dead"
