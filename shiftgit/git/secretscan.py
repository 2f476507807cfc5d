"""Nothing secret leaves the machine: the blobs shiftgit puts in refs it may push pass the secret scanner.

A checkpoint's snapshot and rollback's rescue take the working tree as it is, untracked files
included (a `.env`, a token file), under `refs/shift/`, which `sync` and publishing push. So every
blob entering such a tree that HEAD does not already hold is scanned first (`ledger.secrets`:
token formats and `password=`-style context, through JSON `\\u` escapes; not the random-text rule,
which lock files and checksums would trip; and a ledger's recorded commands, `ledger.commandsecrets`); a
file with a finding is left out of the tree and reported as withheld. Before a push, every blob the remote
would receive under `refs/shift/` is scanned again (defence in depth): a ref holding a finding is not pushed.

Verdicts are cached by blob id in `<git-common-dir>/shift/scanned-v<SECRET_RULES>` (the worktrees share the
objects): a blob is read and scanned once, however many checkpoints keep it. Only blobs of CACHE_MIN_BYTES
or more, and those with a finding, are kept there: a small file is scanned again faster than every later
checkpoint reads its line (a checkpoint of 1,000 new small files would add 1,000 lines each time).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from shiftgit.git.notestree import CatFile
from shiftgit.git.rawgit import object_id
from shiftgit.ledger.validated import SECRET_RULES
from shiftgit.repo import Change, Repo, clean_env
from shiftgit.textsafe import path_text

CACHE = f"scanned-v{SECRET_RULES}"  # a new version of the rules (ledger/validated.py): every blob is judged again
CACHE_MAX_BYTES = 4 * 1024 * 1024
CACHE_KEEP = 20_000
CACHE_MIN_BYTES = 1024
CLEAN = "-"
SUBMODULE = "160000"


class Withheld(NamedTuple):
    """A file left out of a tree shiftgit may push: its path (as git has it) and the rule that matched."""

    path: str
    rule: str

    @property
    def shown(self) -> str:
        """The path as text (a byte that is not UTF-8 escaped), as ledgers and reports hold it."""
        return path_text(self.path)

    def to_dict(self) -> dict[str, str]:
        return {"path": self.shown, "rule": self.rule}


# -- verdicts -----------------------------------------------------------------------------------

_PRINTABLE = re.compile(rb"[\t\x20-\x7e]{8,}")  # what `strings` shows: where a token in a binary file would be
BINARY_SNIFF = 8000  # bytes git looks at to call a file binary (a NUL among them)
SCAN_CHUNK = 8 * 1024 * 1024  # characters scanned as one text (a larger blob is one text alone)


def first_rule(data: bytes) -> str | None:
    """The first rule that finds a secret in a blob's bytes, or None. Text is read as latin-1 (every ASCII byte
    stays in place); a binary file is judged by its printable runs, as `strings` shows them (tokens are ASCII)."""
    from shiftgit.ledger.secrets import find_secrets_in_json

    found = find_secrets_in_json(_scanned_text(data), entropy=False)
    return found[0].rule if found else None


def first_rules(blobs: Sequence[bytes]) -> list[str | None]:
    """`first_rule` of each of BLOBS, scanned as one text per chunk (no rule matches across the separator, as
    `redact_obj` relies on): one scan of 1,000 small files, not 1,000 scans. A finding is the blob's own
    where it starts; a blob with JSON escapes and no finding in its raw text is judged alone, as
    `find_secrets_in_json` would judge it."""
    from bisect import bisect_right

    from shiftgit.ledger.secrets import SEPARATOR_TEXT, find_secrets

    rules: list[str | None] = [None] * len(blobs)
    texts = [_scanned_text(data) for data in blobs]
    start = 0
    while start < len(texts):
        end, size = start, 0
        while end < len(texts) and (end == start or size + len(texts[end]) <= SCAN_CHUNK):
            size += len(texts[end]) + len(SEPARATOR_TEXT)
            end += 1
        offsets, at = [], 0
        for text in texts[start:end]:
            offsets.append(at)
            at += len(text) + len(SEPARATOR_TEXT)
        for finding in find_secrets(SEPARATOR_TEXT.join(texts[start:end]), entropy=False):  # sorted by start
            index = start + bisect_right(offsets, finding.start) - 1
            if rules[index] is None:
                rules[index] = finding.rule
        start = end
    for index, text in enumerate(texts):
        if rules[index] is None and ("\\u" in text or "\\/" in text):
            rules[index] = first_rule(blobs[index])
        if rules[index] is None:
            rules[index] = command_rule(blobs[index])
    return rules


def command_rule(data: bytes) -> str | None:
    """A secret one of a ledger's recorded commands gives as a word of its own (`--password S`: no format or
    `key=value` tells it, its place does), as the commit gate judges it (ledger/commandsecrets.py); None for
    every blob that is not such a ledger (a cheap look first: no parse)."""
    from shiftgit.ledger.commandsecrets import command_secret, may_hold_commands

    if not may_hold_commands(data):
        return None
    from shiftgit import rawjson

    try:
        where = command_secret(rawjson.loads(data))
    except ValueError:
        return None
    return None if where is None else f"a secret in a recorded command ({where})"


def _scanned_text(data: bytes) -> str:
    if b"\0" in data[:BINARY_SNIFF]:
        data = b"\n".join(_PRINTABLE.findall(data))
    return data.decode("latin-1")


def verdicts(repo: Repo, blobs: Iterable[str], paths: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """blob id -> the rule of its first finding (None: clean, or not in this clone: nothing to leak).

    PATHS (blob id -> a path in the work tree that held it) lets a blob be read from its file, when the
    file still hashes to that id: no `cat-file` for what `git add` just hashed. Then the verdict cache is
    read only when a blob is large enough to be kept there (a checkpoint of small files never reads it)."""
    wanted = sorted(set(blobs))
    data = _contents(repo, wanted, paths) if paths else {}
    if len(data) < len(wanted) or any(len(d) >= CACHE_MIN_BYTES for d in data.values()):
        cache = _read_cache(repo)
        rest = [b for b in wanted if b not in cache and b not in data]
        data = {**{b: d for b, d in data.items() if b not in cache}, **(_contents(repo, rest, {}) if rest else {})}
    else:
        cache = {}
    if data:
        new = {blob: rule or CLEAN for blob, rule in zip(data, first_rules(list(data.values())), strict=True)}
        _append_cache(repo, {blob: rule for blob, rule in new.items()
                             if rule != CLEAN or len(data[blob]) >= CACHE_MIN_BYTES})
        cache.update(new)
    return {b: (None if cache.get(b, CLEAN) == CLEAN else cache[b]) for b in wanted}


def _contents(repo: Repo, blobs: list[str], paths: Mapping[str, str]) -> dict[str, bytes]:
    """The bytes of each of BLOBS this clone has: from the work tree's file when it hashes to the id (no
    filter, no edit since), else from `cat-file`."""
    found: dict[str, bytes] = {}
    if paths:
        root = os.open(repo.root, os.O_RDONLY)
        try:
            for blob in blobs:
                path = paths.get(blob)
                data = None if path is None else _file_blob(root, path, blob)
                if data is not None:
                    found[blob] = data
        finally:
            os.close(root)
    rest = [blob for blob in blobs if blob not in found]
    if rest:
        with CatFile(repo.root, clean_env()) as cat:
            for blob, answer in zip(rest, cat.get(rest), strict=True):
                if answer is not None and answer[1] == "blob":
                    found[blob] = answer[2]
    return found


_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK  # never a symlink's target, never blocking on a FIFO
_READ = 1 << 16


def _file_blob(root: int, path: str, blob: str) -> bytes | None:
    """The bytes of the file at PATH (under the directory ROOT) if they are blob BLOB, else None."""
    try:
        fd = os.open(path, _OPEN, dir_fd=root)
    except OSError:
        return None
    try:
        chunks = [os.read(fd, _READ)]
        while len(chunks[-1]) == _READ:  # a short read is the end: one read for a small file, not two (a file cut
            chunks.append(os.read(fd, _READ))  # short otherwise fails the id check below: cat-file then reads it)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return data if object_id("blob", data, len(blob)) == blob else None


def _cache_path(repo: Repo) -> Path:
    return repo.common_dir / "shift" / CACHE


def _read_cache(repo: Repo) -> dict[str, str]:
    try:
        text = _cache_path(repo).read_text("ascii", "replace")
    except OSError:
        return {}
    pairs = (line.split(" ", 1) for line in text.splitlines())
    return {pair[0]: pair[1] for pair in pairs if len(pair) == 2}


def _append_cache(repo: Repo, new: Mapping[str, str]) -> None:
    """Append the new verdicts; past CACHE_MAX_BYTES keep the newest CACHE_KEEP. Losing one costs a rescan."""
    if not new:
        return
    path = _cache_path(repo)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, "".join(f"{blob} {rule}\n" for blob, rule in new.items()).encode())
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > CACHE_MAX_BYTES:
            kept = path.read_bytes().splitlines(keepends=True)[-CACHE_KEEP:]
            tmp = path.with_name(f".{CACHE}.{os.getpid()}.tmp")
            tmp.write_bytes(b"".join(kept))
            os.replace(tmp, path)
    except OSError:
        pass  # only a speed-up


# -- trees: snapshots and rescues ---------------------------------------------------------------

def withheld(repo: Repo, base: str | None, tree: str, changes: Sequence[Change] | None = None) -> list[Withheld]:
    """Files of `tree` holding a secret, among those whose content `base` (HEAD, or None) lacks at that path.
    CHANGES: `repo.changes(base, tree)` when the caller has it already."""
    entries = _new_entries(repo.changes(base, tree) if changes is None else changes)
    found = verdicts(repo, [blob for _, blob in entries], {blob: path for path, blob in entries})
    return [Withheld(path, rule) for path, blob in entries if (rule := found.get(blob))]


def _new_entries(changes: Sequence[Change]) -> list[tuple[str, str]]:
    """(path, blob) for every file added or changed (submodules are commits: skipped)."""
    return [(c.path, c.blob) for c in changes if c.status != "D" and c.mode != SUBMODULE]


def without(repo: Repo, tree: str, paths: Sequence[str]) -> str:
    """`tree` with `paths` left out, built in a private index (the real index and the files are untouched)."""
    if not paths:
        return tree
    tmp = repo.private(f"index.scan.{os.getpid()}.tmp")
    env = clean_env(GIT_INDEX_FILE=str(tmp))
    try:
        repo.git("read-tree", tree, env=env)
        listed = b"".join(os.fsencode(path) + b"\0" for path in paths)
        repo.git("update-index", "--force-remove", "-z", "--stdin", input=listed, env=env)
        return repo.git("write-tree", env=env).strip()
    finally:
        tmp.unlink(missing_ok=True)


def clean_tree(repo: Repo, base: str | None, tree: str,
               changes: Sequence[Change] | None = None) -> tuple[str, list[Withheld]]:
    """`tree` without the files that hold a secret HEAD does not already hold, and those files."""
    held = withheld(repo, base, tree, changes)
    return without(repo, tree, [w.path for w in held]), held


# -- refs about to be pushed --------------------------------------------------------------------

def ref_findings(repo: Repo, refs: Sequence[str], remote: str, tracking: str) -> list[Withheld]:
    """What pushing `refs` would send that holds a secret: the blobs they reach that no local branch or tag,
    and nothing fetched from `remote` (under refs/remotes/ and `tracking`), already reaches."""
    if not refs:
        return []
    argv = ["git", "rev-list", "--objects", "--filter=object:type=blob", *refs, "--not", "--branches", "--tags",
            f"--remotes={remote}/*", f"--glob={tracking}/{remote}/*"]
    proc = subprocess.run(argv, cwd=repo.root, capture_output=True, env=clean_env())
    if proc.returncode != 0:  # an old git without object filters: judge every object the refs reach
        argv.remove("--filter=object:type=blob")
        proc = subprocess.run(argv, cwd=repo.root, capture_output=True, env=clean_env(), check=True)
    paths: dict[str, str] = {}
    for line in proc.stdout.decode("utf-8", "surrogateescape").splitlines():
        oid, sep, path = line.partition(" ")
        if sep and path:
            paths.setdefault(oid, path)
    found = verdicts(repo, paths)
    return [Withheld(paths[oid], rule) for oid, rule in found.items() if rule]


def refused_refs(repo: Repo, refs: Sequence[str], remote: str, tracking: str) -> dict[str, list[Withheld]]:
    """The refs that must not be pushed, with what they would leak. One walk when all is clean (the usual case)."""
    if not ref_findings(repo, refs, remote, tracking):
        return {}
    refused = {ref: ref_findings(repo, [ref], remote, tracking) for ref in refs}
    return {ref: found for ref, found in refused.items() if found}
