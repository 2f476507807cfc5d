"""Files that remember, not record: caches in the git dir (a kept tree, a last diff, prepacked files, seen ledger
commits) whose loss or failed write only makes the next call work out again what they held.

Stdlib os only: the git hooks, the agent hooks and the checkpoint's packer (`python -S`) load it.
"""

from __future__ import annotations

import os


def replace(path: str, data: bytes) -> None:
    """PATH's content replaced whole by DATA (a temp file beside it, renamed: a reader sees the old or the new), its
    folder made if missing. A failure is silent and leaves no temp file behind."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
