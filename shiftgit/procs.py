"""Process identity: who ran an effect, whether that process still lives, and a group watchdog.

A pid alone is not an identity (pids are reused, a killed process lingers as a zombie), so a
process is recorded as host + boot id + pid + start time (clock ticks since boot, from
/proc/PID/stat). Where /proc is missing, the start time is None and only the pid is checked.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs ~4 ms to import: `log`, `status` and every write load this module
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from shiftgit.repo import Repo

PR_SET_PDEATHSIG = 1
# Environment markers of a coding agent's own process: what needs a human must not come from there.
AGENT_VARS = ("CLAUDECODE", "GEMINI_CLI")
AGENT_PREFIXES = ("CODEX_",)
NOT_AGENT_VARS = ("CODEX_HOME",)  # a user's own configuration, set in ordinary shells too

def module_argv(module: str) -> list[str]:
    """`python -m MODULE` with this interpreter, which never imports from the directory it starts in. Plain `-m` (and
    `-c`) put that directory first on sys.path, and shiftgit starts its processes at the top of the user's work tree:
    a cloned repository's own `shiftgit/` or `json.py` would run in their place. `-P` (3.11) leaves it off; 3.10 has no
    `-P`, so a `-c` that drops it (sys.path[0], '' for `-c`) and then runs the module as `-m` would."""
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", module]
    return [sys.executable, "-c", "import runpy, sys; del sys.path[0]; "
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"]


def boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name: [state, ppid, ..., starttime at 19]."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def start_ticks(pid: int) -> int | None:
    fields = stat_fields(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def hostname() -> str:
    """This machine's name, as `socket.gethostname()` gives it (uname's node name), without importing socket."""
    return os.uname().nodename


def identity(pid: int | None = None) -> dict[str, Any]:
    """This process (or `pid` on this machine) as a record: host, boot, pid, start."""
    pid = os.getpid() if pid is None else pid
    return {"host": hostname(), "boot": boot_id(), "pid": pid, "start": start_ticks(pid)}


def clone_id(repo: Repo) -> str:
    """This clone's random id, created on first use (atomically: two racing processes agree)."""
    path = repo.common_dir / "shift" / "clone-id"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"clone-id.{os.getpid()}.tmp")
    tmp.write_text(os.urandom(16).hex() + "\n")  # = secrets.token_hex(16), without random and OpenSSL
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_text().strip()


def agent_markers(environ: Mapping[str, str]) -> list[str]:
    """The variables that say this process runs inside a coding agent (empty: a person's shell, or CI)."""
    found = [name for name in AGENT_VARS if environ.get(name)]
    found += sorted(name for name in environ if name.startswith(AGENT_PREFIXES) and name not in NOT_AGENT_VARS)
    return found


def pid_exists(pid: int) -> bool:
    """The pid exists and is not a zombie."""
    if pid <= 0:
        return False
    fields = stat_fields(pid)
    if fields is not None:
        return not fields or fields[0] not in ("Z", "X")  # a stat without a state: it exists, state unknown
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not os.path.isdir("/proc")  # /proc exists but has no entry: gone


def is_alive(who: Mapping[str, Any] | None) -> bool | None:
    """True: that very process runs; False: it is gone; None: it ran on another machine, cannot tell."""
    if not who or not isinstance(who.get("pid"), int):
        return False
    if who.get("host") != hostname():
        return None
    if who.get("boot") and boot_id() and who["boot"] != boot_id():
        return False  # the machine rebooted since
    pid = who["pid"]
    if not pid_exists(pid):
        return False
    return who.get("start") is None or start_ticks(pid) == who["start"]


def is_identified(who: Mapping[str, Any] | None) -> bool:
    """That very process runs here by every field of its identity: host, boot, pid and start time, each recorded and
    matching. `is_alive` takes a record without a start time on its pid alone: too little to signal a process by."""
    if not who or not isinstance(who.get("pid"), int) or type(who.get("start")) is not int:
        return False
    if who.get("host") != hostname() or who.get("boot") != boot_id():
        return False
    return pid_exists(who["pid"]) and start_ticks(who["pid"]) == who["start"]


def guard_group(pgid: int) -> int | None:
    """Start a watchdog that kills process group `pgid` if this process dies: its pid; None where unsupported.

    The watchdog is this process forked (no new interpreter to start: that cost more than a Python start-up
    on 2 busy cores), in its own session, with SIGTERM blocked until its handler is in place; the kernel sends
    it SIGTERM when its parent (the shiftgit process running an effect) dies, and it then SIGKILLs the
    effect's whole process group, grandchildren included. Killed quietly (SIGKILL, `release`) on a normal
    finish. Called before any thread is started (evidence/runner.py's `on_start`), so the fork is safe."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # before the fork: the watchdog loads nothing
    import signal  # here: `status` and `log` load this module for clone_id (signal imports enum, ~2 ms)

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        prctl = None
    parent = os.getpid()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        pid = os.fork()
    finally:
        if os.getpid() == parent:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    if pid == 0:
        try:
            _watch(pgid, parent, prctl)
        finally:
            os._exit(0)
    return pid


def _watch(pgid: int, parent: int, prctl: Any) -> None:
    """The forked watchdog's life: wait for SIGTERM (its parent died), then kill the group and exit."""
    import signal  # loaded by guard_group before the fork

    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 65536)  # no pipe or file of the parent's held open here

    def fire(*_: object) -> None:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
        os._exit(0)

    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    signal.signal(signal.SIGTERM, fire)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    if os.getppid() != parent:
        fire()
    while True:
        signal.pause()


def release(watchdog: int | None) -> None:
    """Stop a watchdog without letting it fire."""
    if watchdog is None:
        return
    import signal

    try:
        os.kill(watchdog, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(watchdog, 0)


def kill_group(pgid: int, sig: int | None = None) -> None:
    """Send SIG (default SIGKILL) to the process group PGID, if it is still there."""
    import signal

    try:
        os.killpg(pgid, signal.SIGKILL if sig is None else sig)
    except (ProcessLookupError, PermissionError):
        pass
