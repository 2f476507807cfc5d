"""Many machines: the ledger merge driver's registration, and notes/snapshot sync through a remote."""

from __future__ import annotations

import shlex
import sys

from shiftgit.store import Store

MERGE_DRIVER = "shiftgit-ledger"
ATTRIBUTE = f"runs/*/ledger.json merge={MERGE_DRIVER}"


def configure(store: Store) -> list[str]:
    """Register the ledger merge driver (repo-local config + `.shift/.gitattributes`). Idempotent."""
    repo = store.repo
    repo.git("config", "--local", f"merge.{MERGE_DRIVER}.name", "shiftgit: merge run ledgers by id")
    driver = f"{shlex.quote(sys.executable)} -m shiftgit merge-driver %O %A %B %P"
    repo.git("config", "--local", f"merge.{MERGE_DRIVER}.driver", driver)
    attributes = store.root / ".gitattributes"
    text = attributes.read_text(encoding="utf-8") if attributes.exists() else ""
    if ATTRIBUTE not in text.splitlines():
        from shiftgit.store import write_atomic

        write_atomic(attributes, (text + ("" if not text or text.endswith("\n") else "\n") + ATTRIBUTE + "\n").encode())
    return [f"registered the ledger merge driver ({store.rel(attributes)})"]
