"""`shiftgit init`: the .shift/ store, repo-local git config, hooks."""

from __future__ import annotations

from collections.abc import Sequence

from shiftgit.store import Store

# Repo-local notes settings (SPEC §3). Never global.
NOTES_CONFIG = (
    ("notes.displayRef", "refs/notes/shift"),
    ("notes.rewriteRef", "refs/notes/shift"),
    ("notes.rewriteMode", "ignore"),
)


def init(store: Store, *, hooks: str, agents: Sequence[str] = ()) -> list[str]:
    """Create `.shift/`, configure git for this repo only, install hooks. Idempotent."""
    if agents:
        from shiftgit import agents as agent_hooks

        agent_hooks.preflight(store.repo, agents)  # a broken agent config stops init before any write
    lines = []
    created = store.init()
    lines.append(f"{'created' if created else 'kept'} {store.rel(store.root)}/ (commit it)")
    configure_git(store)
    lines.append("set repo-local git config for refs/notes/shift")
    from shiftgit import sync

    lines += sync.configure(store)
    if hooks == "git":
        from shiftgit import githooks

        lines += githooks.install(store.repo)
    elif hooks == "pre-commit":
        from shiftgit import githooks

        lines += githooks.install_pre_commit(store.repo)
    if agents:
        for agent in dict.fromkeys(agents):
            lines += agent_hooks.install(store.repo, agent)
        lines += agent_hooks.path_note()
    return lines


def configure_git(store: Store) -> None:
    repo = store.repo
    for key, value in NOTES_CONFIG:
        current = repo.git("config", "--local", "--get-all", key, check=False).split()
        if value not in current:
            repo.git("config", "--local", "--replace-all", key, value)
