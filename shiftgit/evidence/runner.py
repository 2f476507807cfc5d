"""Run a command as evidence: argv (no shell), process-group timeout, capped output, digest."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import BinaryIO

from shiftgit.digests import hasher
from shiftgit.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from shiftgit.tuples import NamedTuple  # typing's class without importing typing or dataclasses

TAIL_CHARS = 4000          # what a check keeps of its output, after redaction
PARSE_BYTES = 4 * 1024 * 1024  # what is kept in memory for parsing outcomes (head + tail)
KILL_GRACE = 2.0           # seconds between SIGTERM and SIGKILL of the process group
PR_SET_PDEATHSIG = 1


class Result(NamedTuple):
    exit_code: int | None   # None: it never finished (timed out or killed)
    duration_s: float
    output: str             # up to PARSE_BYTES of the output (head and tail), for parsers
    tail: str               # the last TAIL_CHARS characters, not yet redacted
    sha256: str
    total_bytes: int
    timed_out: bool


def _die_with_parent() -> None:
    """In the child: SIGKILL me when the process that started me dies (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class _Collector:
    def __init__(self, echo: BinaryIO | None, keep: BinaryIO | None = None) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.digest = hasher(64)(b"")  # CPython's own sha256: hashlib loads OpenSSL first
        self.total = 0
        self.echo = echo
        self.keep = keep

    def feed(self, chunk: bytes) -> None:
        self.digest.update(chunk)
        self.total += len(chunk)
        if self.keep is not None:
            self.keep.write(chunk)
        if self.echo is not None:
            try:
                self.echo.write(chunk)
                self.echo.flush()
            except (OSError, ValueError):
                self.echo = None
        half = PARSE_BYTES // 2
        if len(self.head) < half:
            take = half - len(self.head)
            self.head += chunk[:take]
            chunk = chunk[take:]
        self.tail += chunk
        if len(self.tail) > half:
            del self.tail[: len(self.tail) - half]

    def text(self) -> str:
        return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")


def run(argv: Sequence[str], *, cwd: str, timeout: float | None, env: Mapping[str, str] | None = None,
        echo: BinaryIO | None = None, on_start: Callable[[int], None] | None = None,
        keep: BinaryIO | None = None) -> Result:
    """Run argv; stdout and stderr merged, echoed live to `echo`, collected with a cap (and written
    whole to `keep`, when given).

    On timeout the whole process group gets SIGTERM, then SIGKILL. The command dies with us.
    """
    if not argv:
        raise UsageError("no command given; put it after `--`, e.g. `shiftgit check -- pytest -q`")
    started = time.monotonic()
    try:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env) if env is not None else None,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_die_with_parent)
    except FileNotFoundError:
        raise UsageError(f"command not found: {argv[0]!r}; check the spelling or PATH") from None
    except PermissionError:
        raise UsageError(f"command not executable: {argv[0]!r}; check its permissions") from None
    if on_start is not None:
        on_start(proc.pid)
    collector = _Collector(echo, keep)
    reader = threading.Thread(target=_pump, args=(proc.stdout, collector), daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
    finally:
        if proc.poll() is None:  # interrupted (e.g. KeyboardInterrupt): take the group down with us
            _kill_group(proc)
    reader.join(timeout=2 if not timed_out else 5)
    text = collector.text()
    return Result(
        exit_code=None if timed_out else proc.returncode,
        duration_s=round(time.monotonic() - started, 3),
        output=text,
        tail=text[-TAIL_CHARS:],
        sha256=collector.digest.hexdigest(),
        total_bytes=collector.total,
        timed_out=timed_out,
    )


def _pump(stream: BinaryIO | None, collector: _Collector) -> None:
    if stream is None:
        return
    while True:
        chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
        if not chunk:
            break
        collector.feed(chunk)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the group, give it a grace period, then SIGKILL whatever of it is left."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stdout_binary() -> BinaryIO | None:
    return getattr(sys.stdout, "buffer", None)
