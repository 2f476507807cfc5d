"""Is a recorded service still alive? A pid probe alone lies: a killed process stays a zombie a while."""

from __future__ import annotations

import os
import socket
from pathlib import Path

CONNECT_TIMEOUT = 0.3


def process_state(pid: int, proc_root: Path = Path("/proc")) -> str | None:
    """The one-letter state from /proc/PID/stat (R, S, D, Z, ...); None when there is no such process."""
    try:
        text = (proc_root / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return None
    except OSError:
        return "?"
    # The command name is in parentheses and may itself contain spaces or parentheses.
    rest = text[text.rfind(")") + 1:].split()
    return rest[0] if rest else "?"


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    state = process_state(pid)
    if state is None:
        return not Path("/proc/self").exists()  # no /proc on this system: trust the signal probe
    return state not in ("Z", "X")


def port_open(port: int, host: str = "127.0.0.1", timeout: float = CONNECT_TIMEOUT) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def is_alive(pid: int | None, port: int | None) -> bool:
    """The pid exists and is not a zombie, and, when a port was recorded, it accepts connections."""
    if pid is None or not pid_alive(pid):
        return False
    return port is None or port_open(port)
