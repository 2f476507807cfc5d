"""HEAD's history with the machine records `git log` reads itself, streamed in rounds, and other notes refs'
note blobs read as those rounds need them: what `shiftgit log` walks (git/timeline.py).

`git log HEAD` is streamed in rounds of ROUND commits, each round twice the last (up to MAX_ROUND: a
whole history takes few round trips), each commit with its machine record (refs/notes/shift-data: git
reads that notes tree itself, once). The output is decoded as it comes, once, and split at a random
marker no note can forge.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterable, Iterator
from io import BufferedReader
from pathlib import Path

from shiftgit.errors import GitError
from shiftgit.git.notestree import CatFile, Entry, id_width, notes_under, read_root, start_git
from shiftgit.repo import Repo, clean_env

TYPE_CHECKING = False  # typing costs ~4 ms to import (`log`): annotations only
if TYPE_CHECKING:
    from typing import Any

ROUND = 64
MAX_ROUND = 4096
KEY = "shift-checkpoint"  # the trailer's key, lower case: git matches it in any case


def history(repo: Repo, notes: list[str]) -> Iterator[list[tuple[str, bool, str]]]:
    """HEAD's commits, newest first, ROUND at first, then twice as many each round up to MAX_ROUND, as `git log`
    finds them (stopped when not read on), each with whether its message might carry a Shift-Checkpoint trailer
    (its body holds that key in any case: `named` says for sure) and the texts of its notes on the `notes` refs,
    one after the other (git reads those notes trees itself; "" when none). A random marker opens each commit
    and another its body: neither a note nor a message can forge one. (The trailers themselves cost git a fifth
    of this walk to parse; only the commits without a note need them, and only when their body names the key.)"""
    marker, body = os.urandom(8).hex(), os.urandom(8).hex()
    argv = ["git", "log", "--no-notes", *(f"--notes={ref}" for ref in notes),
            f"--format={marker}%H" + ("%n%N" if notes else "") + f"{body}%b", "HEAD"]
    proc = start_git(repo.root, clean_env(), argv[1:])  # posix_spawn where it can: `log` need not load subprocess
    proc.stdin.close()  # git log reads nothing
    stdout: BufferedReader = proc.stdout  # a buffered pipe (rawgit.Process's, or Popen's default)
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode  # a character cut by a block waits for it
    finished = False
    try:
        chunk: list[tuple[str, bool, str]] = []
        size = ROUND
        rest = ""
        while True:
            block = stdout.read1(1 << 16)  # what the pipe holds, up to 64 KiB
            parts = (rest + decode(block, not block)).split(marker)
            rest = parts.pop() if block else ""  # the last may be cut short: it waits for the next block
            for part in parts:
                if part:
                    head, _, message = part.partition(body)
                    commit, _, note = head.partition("\n")
                    chunk.append((commit.strip(), bool(message) and KEY in message.lower(), note))
            if len(chunk) >= size or not block:
                if chunk:
                    yield chunk
                chunk, size = [], min(2 * size, MAX_ROUND)
            if not block:
                break
        finished = True
    finally:
        if not finished:
            proc.kill()
        proc.stdout.close()
        error = proc.stderr.read().decode("utf-8", "replace")
        proc.stderr.close()
        if proc.wait() != 0 and finished:
            raise GitError(argv[1:], error)


def named(repo: Repo, commits: list[str]) -> list[str]:
    """Those of `commits` whose Shift-Checkpoint trailer names a checkpoint, as git parses trailers (one `git log`
    of just them), in their order."""
    if not commits:
        return []
    marker = os.urandom(8).hex()
    out = repo.git("log", "--no-walk=unsorted", "--stdin", "--no-notes",
                   f"--format={marker}%H %(trailers:key=Shift-Checkpoint,valueonly,separator=%x2c)",
                   input="".join(f"{c}\n" for c in commits))
    found = set()
    for part in out.split(marker):
        commit, _, value = part.partition("\n")[0].strip().partition(" ")
        if value.strip():
            found.add(commit)
    return [c for c in commits if c in found]


class LazyCatFile(CatFile):
    """A `git cat-file --batch` started when first asked: a history whose records `git log` gave whole needs none."""

    def __init__(self, cwd: str | Path, env: dict[str, str]) -> None:  # no super().__init__: nothing starts yet
        self._start: tuple[str | Path, dict[str, str]] | None = (cwd, env)
        self._proc: Any = None

    @property
    def proc(self) -> Any:
        if self._start is not None:
            cwd, env = self._start
            self._start = None
            self._proc = CatFile(cwd, env).proc
        return self._proc

    @proc.setter
    def proc(self, value: Any) -> None:
        self._start, self._proc = None, value

    def __exit__(self, *exc: object) -> None:
        if self._start is None:
            super().__exit__(*exc)


class NoteIndex:
    """One notes ref's note blobs, read a fanout subtree at a time as the commits asked about need them (its
    root tree too: on the first question)."""

    def __init__(self, cat: CatFile, ref: str) -> None:
        self.cat, self.ref = cat, ref
        self.root: dict[str, Entry] | None = None
        self.width = 0
        self.found: dict[str, Entry] = {}
        self.read: set[str] = set()

    def blobs(self, commits: Iterable[str]) -> dict[str, str]:
        """commit -> note blob id, for those of `commits` with a note on this ref."""
        commits = list(commits)
        if self.root is None:
            tip, _, self.root = read_root(self.cat, self.ref)
            self.width = id_width(tip)
        wanted = {c[:2] for c in commits} - self.read
        if wanted or not self.read:
            self.found.update(notes_under(self.cat, self.root, self.width, wanted))
            self.read |= wanted | {""}
        return {c: self.found[c].oid for c in commits if c in self.found}
