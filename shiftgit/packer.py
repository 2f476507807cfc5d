"""The packer, the `python -S` process the checkpoint's tree build starts beside `ls-files` (packs.build_command):
the changed files' blobs into one pack (packs.prepack), and the index entries of those git would store as they are
(staging.py). Stdlib only.
"""

from __future__ import annotations

import os

from shiftgit import packs, staging


def main(args: list[str]) -> None:
    """The packer (`packs.build_command`): ARGS are the work tree, the object directory, the id width and the record;
    the listing on stdin. Silent: a failure only leaves the files to `git add`. With the private index's path in
    GIT_INDEX_FILE, it leaves there the index entries of the files it hashed."""
    import sys

    listed = [(name[:1], name[2:]) for name in sys.stdin.buffer.read().split(b"\0") if name[:2] in (b"C ", b"? ")]
    paths = [path for _, path in listed]
    if len(paths) < packs.PACK_MIN:
        return
    index = os.environ.get("GIT_INDEX_FILE")
    survey = None
    # a nested repository, submodules: `git add`'s alone
    if index and not any(path.endswith(b"/") for path in paths) and not os.path.lexists(
            os.path.join(args[0], ".gitmodules")):
        try:
            survey = staging.Survey(args[0], paths)
        except OSError:
            pass
    staged: dict[bytes, tuple[int, str] | None] | None = {}
    try:
        packs.prepack(args[0], args[1], paths, int(args[2]), args[3], staged)
    except OSError:
        staged = None  # a full disk, a read-only store: `git add` writes them (or says why it cannot)
    allowed = survey.allowed() if survey is not None else None
    if index and allowed is not None and staged is not None:
        entries: dict[bytes, tuple[int, str]] = {}
        removed, rest = [], []
        for tag, path in listed:
            known = staged.get(path, ())
            if known and path in allowed:
                entries[path] = known
            elif known is None:  # gone: a tracked file's removal; an untracked one, nothing to add
                if tag == b"C":
                    removed.append(path)
            elif path not in entries:
                rest.append(path)
        try:
            staging.write(index, entries, removed, rest)
        except OSError:
            pass
