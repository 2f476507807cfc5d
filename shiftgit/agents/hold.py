"""The end-of-turn hold (Claude Code and Codex `Stop`, Gemini CLI `AfterAgent`).

The agent is held once when its work is not recorded: files outside `.shift/` differ from the latest
checkpoint, HEAD moved without a handoff, or the only record of the latest changes is a checkpoint
shiftgit made by itself (before a compaction, at a session end): an automatic checkpoint keeps the work
safe but describes no step, so it does not count as the agent's own record.

Never when the agent says `stop_hook_active` (it already continues because of a stop hook), and at most
once per staleness: the signature of what was held is kept per agent session in
`<git-dir>/shift/agents/stop-blocks.json` (Gemini CLI sends `stop_hook_active: false` again after a
tool call, so this memory is what prevents a loop there). Later stops get a note for the human instead.
The ledger is read as JSON (no model, no jsonschema for bytes shiftgit wrote).
"""

from __future__ import annotations

from collections.abc import Mapping

from shiftgit.agents import private
from shiftgit.ledger.store import Store
from shiftgit.repo import Repo

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from shiftgit.tuples import NamedTuple

BLOCKS_KEPT = 100


class Verdict(NamedTuple):
    """What the gate decided: hold with a reason, or a note for the human, or nothing."""

    block: str | None = None
    note: str | None = None

    @property
    def ends_turn(self) -> bool:
        return self.block is None


def gate(store: Store, run: str, *, key: str, stop_hook_active: bool | None) -> Verdict:
    """Hold once per staleness, only when the agent said `stop_hook_active: false`; else a note at most."""
    from shiftgit.recovery.freshness import assess_document

    document = store.document(run)
    if document.get("status") != "active":
        return Verdict()
    state = assess_document(store, run, document)
    blocks = read_blocks(store.repo)
    if not state.needs_record:
        if blocks.pop(key, None) is not None:
            write_blocks(store.repo, blocks)
        return Verdict()
    reason = state.describe(shiftgit_command(store.repo))
    if stop_hook_active is not False or blocks.get(key) == state.signature:
        return Verdict(note=reason)
    blocks.pop(key, None)
    blocks[key] = state.signature
    write_blocks(store.repo, blocks)
    return Verdict(block=reason)


def shiftgit_command(repo: Repo) -> str:
    """How the agent's shell runs this shiftgit (see agents/shell.py), cached in the git dir."""
    from shiftgit.agents.shell import invocation

    return invocation(private.path(repo, "shell.json"))


def read_blocks(repo: Repo) -> dict[str, str]:
    data = private.read(private.path(repo, "stop-blocks.json"))
    return {k: v for k, v in data.items() if isinstance(v, str)}


def write_blocks(repo: Repo, blocks: Mapping[str, str]) -> None:
    private.write(private.path(repo, "stop-blocks.json"), dict(list(blocks.items())[-BLOCKS_KEPT:]))
