"""The user's trust store: which recorded commands this clone may run. Never in the repo.

A command is bound by the SHA-256 of its canonical JSON `{"argv": [...], "cwd": "..."}` (plus
`"shell": true` when recorded as a shell command). The store is
`$XDG_DATA_HOME/shiftgit/trust/<clone-id>/<digest>.json`, one file per command, so concurrent
writers never lose each other's entries; the clone id is a random value kept in the common git
dir (`<git-common-dir>/shift/clone-id`), which `git clone` does not copy. Each entry says how the
command came to be trusted (`check` ran it, `record` wrote it, a person ran `trust`) and by whom
(`human`, or `agent` when a coding agent's process wrote it): inside an agent, only a person's
trust counts for the commands that need one (probes).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from shiftgit.digests import hasher
from shiftgit.ledger.model import Check, canonical_bytes
from shiftgit.ledger.store import write_atomic
from shiftgit.procs import agent_markers
from shiftgit.procs import clone_id as clone_id  # defined there: a write's fence needs no trust
from shiftgit.repo import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from shiftgit.tuples import NamedTuple  # typing's class without importing typing or dataclasses


class Command(NamedTuple):
    """One recorded command as trust sees it."""

    name: str
    argv: tuple[str, ...]
    cwd: str
    shell: bool
    digest: str
    kind: str = "check"  # or "probe": what the command is for

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "argv": list(self.argv), "cwd": self.cwd, "shell": self.shell,
                "sha256": self.digest, "kind": self.kind}


def command_digest(argv: Sequence[str], cwd: str, shell: bool = False) -> str:
    payload: dict[str, object] = {"argv": list(argv), "cwd": cwd or "."}
    if shell:
        payload["shell"] = True
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hasher(64)(text.encode("utf-8")).hexdigest()  # type: ignore[no-any-return]


def command_of(check: Check) -> Command:
    return Command(check.name, tuple(check.argv), check.cwd or ".", check.shell,
                   command_digest(check.argv, check.cwd, check.shell))


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME", "")
    if not base or not os.path.isabs(base):
        base = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "share")
    return Path(base) / "shiftgit"


def _entry(repo: Repo, digest: str, environ: Mapping[str, str] | None) -> Path:
    return data_dir(environ) / "trust" / clone_id(repo) / f"{digest}.json"


def is_trusted(repo: Repo, digest: str, environ: Mapping[str, str] | None = None, *, human: bool = False) -> bool:
    """Trusted in this clone; with `human`, only by a person (`trust`, or a command a person recorded)."""
    path = _entry(repo, digest, environ)
    if not human:
        return path.is_file()
    try:
        entry = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(entry, dict) and (entry.get("how") == "trust" or entry.get("by") == "human")


def remember(repo: Repo, commands: Iterable[Command], how: str, at: str,
             environ: Mapping[str, str] | None = None) -> None:
    """Trust these commands in this clone from now on (a person's `trust` also upgrades an agent's entry)."""
    for command in commands:
        path = _entry(repo, command.digest, environ)
        if path.is_file() and (how != "trust" or is_trusted(repo, command.digest, environ, human=True)):
            continue
        record = {**command.to_dict(), "clone": clone_id(repo), "repo": str(repo.root), "how": how, "at": at,
                  "by": "agent" if agent_markers(os.environ if environ is None else environ) else "human"}
        write_atomic(path, canonical_bytes(record))


def remember_quietly(repo: Repo, command: Command, at: str) -> None:
    """`check` trusts what it just ran; an unwritable data dir must not fail the check."""
    from shiftgit.errors import ShiftError

    try:
        remember(repo, [command], "check", at)
    except (OSError, ShiftError):
        pass


def untrusted(repo: Repo, commands: Iterable[Command], pinned: Iterable[str] = (),
              environ: Mapping[str, str] | None = None) -> list[Command]:
    """The commands that may not run here yet; a probe counts as trusted only by a person."""
    pins = {p.lower() for p in pinned}
    return [c for c in commands if c.digest not in pins
            and not is_trusted(repo, c.digest, environ, human=c.kind == "probe")]
