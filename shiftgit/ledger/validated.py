"""The ledgers shiftgit already schema-checked, by git blob id: the commit gate skips them.

Every ledger shiftgit writes is validated first (or, `Store.patch`, derived from validated bytes by a
change that keeps the schema), and every ledger file it reads is validated once, so those bytes are
known good. Their blob ids (the id `git add` will give them, sha1 and sha256) are appended to
`<git-dir>/shift/validated`; the gate, `Store.read` and `Store.document` run jsonschema (a 60 ms
import) only on bytes whose blob is not listed. The file is private to the worktree, never committed,
and bounded: past MAX_BYTES it keeps the newest KEEP lines. A lost line (a concurrent trim) only costs
one more validation later. A line for bytes shiftgit wrote itself (so redacted: a write skips redacting
again what it kept, `incremental.py`; and no recorded command gives a secret, `commandsecrets.py`) carries a third
token; a line for bytes whose whole text was scanned for
secrets and found clean (`secrets.find_secrets_in_json`: a write of a small ledger, a commit gate that passed)
carries one more, so the gate need not scan (nor load the regular expressions) again.
"""

from __future__ import annotations

import os

from shiftgit import digests
from shiftgit.digests import hasher

TYPE_CHECKING = False  # typing and pathlib cost ~4 and ~5 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from pathlib import Path
    from typing import Any

NAME = "validated"
MAX_BYTES = 512 * 1024  # room for every ledger of a few thousand runs: `status` must not evict what it checks
KEEP = 2048
WRITTEN = "written-r2:"  # a third token on a line shiftgit wrote (never equal to a blob id). r2: and whose recorded
# commands it judged free of secrets (ledger/commandsecrets.py); bytes an older shiftgit wrote are written again whole
SECRET_RULES = "2"  # the secret rules' version (ledger/secrets.py, secretrules.py): bump it when they find more.
# 2: the secrets a ledger's recorded commands give as words of their own (ledger/commandsecrets.py).
# A mark of bytes scanned clean (here, and git/secretscan's cache of blobs) names the version that scanned them,
# so an upgrade that adds a rule never lets bytes an older version passed skip the new scan.
CLEAN = f"clean-r{SECRET_RULES}:"  # a token on a line of bytes scanned whole and found free of secrets
CLEAN_SCAN_MAX = 64 * 1024  # a write scans a ledger up to this size for the mark (~50 µs per KiB): above, the gate does


def blob_ids(data: bytes) -> tuple[str, str]:
    """The git blob ids of `data` in a sha1 and in a sha256 repository."""
    sha1, sha256 = hasher(40, len(data)), hasher(64, len(data))
    header = b"blob %d\0" % len(data)
    return sha1(header + data).hexdigest(), sha256(header + data).hexdigest()


def sha256(data: bytes) -> Any:
    """hashlib.sha256, from CPython's own module when it has it (see `_hashes`)."""
    return _hashes()[1](data)


def _hashes() -> tuple[Any, Any]:
    """sha1 and sha256, CPython's own (`shiftgit.digests`): every agent hook reads a ledger."""
    return hasher(40), hasher(64)


def blob_id(data: bytes, *, sha256: bool = False) -> str:
    """The git blob id of `data` in a sha1 (default) or a sha256 repository. The same bytes object asked
    again gives the id hashed the first time (`status` asks three times per ledger: sources twice, then
    `is_known`; a write records the id its ledger commit uses again): see `digests.blob_id`."""
    return digests.blob_id(data, 64 if sha256 else 40)


def path(git_dir: str | Path) -> Path:
    from pathlib import Path

    return Path(_file(git_dir))


def _file(git_dir: str | Path) -> str:
    found = _FILES.get(git_dir)
    if found is None:  # `status` asks once per run
        found = _FILES[git_dir] = os.path.join(git_dir, "shift", NAME)
    return found


_FILES: dict[str | Path, str] = {}


def record(git_dir: str | Path, data: Iterable[bytes], *, written: bool = False, sha1_only: bool = False,
           clean: bool = False) -> None:
    """Remember these ledger bytes as validated; `written`: shiftgit wrote them (so every string is redacted);
    `clean`: their whole text was scanned for secrets and none found (`clean_token`).
    `sha1_only`: the caller knows the repository names objects with sha1, so no id but that one is ever looked up
    (hashing a 1 MiB ledger with CPython's sha256 is a few ms per write)."""
    target = _file(git_dir)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    ids = ((blob_id(blob),) if sha1_only else blob_ids(blob) for blob in data)
    lines = "".join(_line(both, written, clean) for both in ids).encode()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        before = _key(os.fstat(fd))
        os.write(fd, lines)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    hit = _READ.get(_file(git_dir))
    if hit is not None and hit[0] == before:  # what this process read, plus what it added: no read again
        hit[1].update(lines.decode().split())
        _READ[_file(git_dir)] = (_key(after), hit[1])
    if after.st_size > MAX_BYTES:
        _trim(target)


def _line(ids: tuple[str, ...], written: bool, clean: bool = False) -> str:
    return " ".join(ids) + (f" {WRITTEN}{ids[0]}" if written else "") + (f" {CLEAN}{ids[0]}" if clean else "") + "\n"


def scanned_clean(data: bytes) -> bool:
    """Whether the whole text of a ledger of at most CLEAN_SCAN_MAX bytes holds no secret (what the commit gate scans
    it for): a write records the answer, and the gate, finding bytes so marked, neither scans them again nor loads
    the regular expressions that takes."""
    if len(data) > CLEAN_SCAN_MAX:
        return False
    from shiftgit.ledger.secrets import find_secrets_in_json

    try:
        return not find_secrets_in_json(data.decode("utf-8"))
    except UnicodeDecodeError:
        return False


def clean_token(data: bytes) -> str:
    """The token `record(..., clean=True)` lists for these bytes (by their sha1 blob id, in a sha256 repository too)."""
    return CLEAN + blob_id(data)


def _trim(target: str) -> None:
    with open(target, "rb") as handle:
        kept = handle.read().splitlines(keepends=True)[-KEEP:]
    tmp = os.path.join(os.path.dirname(target), f".{NAME}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(b"".join(kept))
    os.replace(tmp, target)


def is_known(git_dir: str | Path, data: bytes) -> bool:
    """Whether these exact bytes were validated (or written) by shiftgit in this worktree. An id this process read
    in the file stays true (bytes checked once are valid for good; a trim only forgets): the file is looked at
    again only for an id not seen in it yet (`status` asks once per run)."""
    oid = blob_id(data)
    hit = _READ.get(_file(git_dir))
    return (hit is not None and oid in hit[1]) or oid in known(git_dir)


def is_written(git_dir: str | Path, data: bytes) -> bool:
    """Whether shiftgit itself wrote these exact bytes (redacted) in this worktree."""
    return WRITTEN + blob_id(data) in known(git_dir)


def config_id(data: bytes) -> str:
    """An id for valid `.shift/config.json` bytes that can never equal a ledger's blob id (the gate's key)."""
    return "config-" + str(_hashes()[0](b"config\0" + data).hexdigest())


def record_config(git_dir: str | Path, data: bytes) -> None:
    """Remember config bytes as schema-checked (their own kind of id, see `config_id`)."""
    target = path(git_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "a", encoding="ascii") as handle:
        handle.write(config_id(data) + "\n")


_READ: dict[str, tuple[tuple[int, int, int], set[str]]] = {}  # per file: its (inode, size, mtime) and ids


def _key(stat: os.stat_result) -> tuple[int, int, int]:
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)


def known(git_dir: str | Path) -> set[str]:
    """Every blob id recorded (both hash kinds); read once per process while the file stays as it was.

    The set is shared: do not change it.
    """
    target = _file(git_dir)
    try:
        key = _key(os.stat(target))
        hit = _READ.get(target)
        if hit is not None and hit[0] == key:
            return hit[1]
        with open(target, "rb") as handle:  # bytes: a text file's ascii codec is one more import for the hooks
            ids = set(handle.read().decode("ascii", "replace").split())
    except FileNotFoundError:
        return set()
    _READ[target] = (key, ids)  # read after the stat: never older than the key says
    return ids


def known_of(git_dir: str | Path, ids: Iterable[str]) -> frozenset[str]:
    """Which of `ids` are recorded: searched for in the file's bytes, each as a whole token. The commit gate asks
    about one ledger or two, and a set of every line (`known`) costs a few ms once the file nears MAX_BYTES."""
    try:
        with open(_file(git_dir), "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return frozenset()
    return frozenset(oid for oid in ids if _has_token(data, oid.encode("ascii", "replace")))


def marks_of(git_dir: str | Path,
             blobs: Mapping[str, bytes | None]) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """Which of these blob ids (with their bytes) are recorded as schema-checked, which as scanned clean
    (`clean_token`), and which as written by shiftgit (`WRITTEN`: its commands judged): the commit gate's question,
    one read of the file."""
    tokens = {clean_token(data): oid for oid, data in blobs.items() if data is not None}
    wrote = {WRITTEN + blob_id(data): oid for oid, data in blobs.items() if data is not None}
    known = known_of(git_dir, [*blobs, *tokens, *wrote])
    clean = frozenset(oid for token, oid in tokens.items() if token in known)
    written = frozenset(oid for token, oid in wrote.items() if token in known)
    return frozenset(oid for oid in blobs if oid in known), clean, written


def _has_token(data: bytes, token: bytes) -> bool:
    """`token` in `data.split()`, without splitting (a token is never empty)."""
    start = 0
    while token and (at := data.find(token, start)) >= 0:
        end = at + len(token)
        if (at == 0 or data[at - 1:at].isspace()) and (end == len(data) or data[end:end + 1].isspace()):
            return True
        start = at + 1
    return False
