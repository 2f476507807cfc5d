"""How the agent's own shell can run this shiftgit: `shiftgit`, or `<interpreter> -m shiftgit`.

An agent runs its hooks with its own environment, but the model's commands may run elsewhere: Codex
runs them in `bash -lc`, whose profile rebuilds PATH, so a `shiftgit` the hook found (a virtualenv
on the agent's PATH) can be "command not found" for the agent. Text that asks the agent to run a
shiftgit command names it the way a login shell started from here would find it: plain `shiftgit`
when that finds this very installation, else the interpreter running this hook with `-m shiftgit`.

The probe starts one login shell (bounded); its answer is kept in the git dir per environment (PATH,
HOME, interpreter, and the login profiles' modification times), so a hook pays for it once. A hook with the
answer cached imports no shutil, shlex or hashlib (an agent hook's budget, agents/hooks.py).
"""

from __future__ import annotations

import os
import sys
import zlib
from collections.abc import Mapping
from pathlib import Path

from shiftgit.agents import private
from shiftgit.procs import module_argv

PROBE = "command -v shiftgit"
PROBE_TIMEOUT = 3.0
CACHE_KEPT = 20


def invocation(cache: Path | None = None, environ: Mapping[str, str] | None = None) -> str:
    """`shiftgit` when a login shell started with this environment runs this installation, else
    `<this interpreter> -m shiftgit` (shell-quoted). `cache`: a private JSON file for the answer."""
    env = dict(os.environ if environ is None else environ)
    key = _key(env)
    known = {k: v for k, v in private.read(cache).items() if isinstance(v, str)} if cache else {}
    if key in known:
        return known[key]
    import shlex

    answer = "shiftgit" if _login_shell_finds_us(env) else shlex.join(module_argv("shiftgit"))
    if cache is not None:
        private.write(cache, dict(list({**known, key: answer}.items())[-CACHE_KEPT:]))
    return answer


PROFILES = ("/etc/profile", "~/.bash_profile", "~/.bash_login", "~/.profile")


def _key(env: Mapping[str, str]) -> str:
    """What the answer depends on: PATH, HOME, this interpreter, and when the login profiles last changed."""
    home = env.get("HOME", "")
    stamps = [str(_mtime(p.replace("~", home, 1) if p.startswith("~") else p)) for p in PROFILES]
    facts = "\0".join((env.get("PATH", ""), home, sys.executable, *stamps)).encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(facts):08x}{zlib.adler32(facts):08x}{len(facts):x}"  # a cache key, not a secret


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _login_shell_finds_us(env: Mapping[str, str]) -> bool:
    """Whether `bash -lc` (else `sh -lc`) resolves `shiftgit` to the installation running now."""
    import shutil
    import subprocess

    shell = shutil.which("bash", path=env.get("PATH")) or shutil.which("sh", path=env.get("PATH"))
    if shell is None:
        return False
    try:
        proc = subprocess.run([shell, "-lc", PROBE], env=dict(env), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=PROBE_TIMEOUT, start_new_session=True)
    except (OSError, subprocess.TimeoutExpired):
        return False
    lines = proc.stdout.strip().splitlines()
    return proc.returncode == 0 and bool(lines) and _is_ours(lines[-1].strip(), env)


def _is_ours(found: str, env: Mapping[str, str]) -> bool:
    """The login shell's `shiftgit` is the one on the hook's PATH, or sits beside this interpreter."""
    if not os.path.isabs(found):
        return False
    import shutil

    mine = shutil.which("shiftgit", path=env.get("PATH"))
    same_file = mine is not None and os.path.realpath(found) == os.path.realpath(mine)
    return same_file or os.path.dirname(found) == os.path.dirname(sys.executable)

