"""`shiftgit init`: the .shift/ store, repo-local git config, hooks."""

from __future__ import annotations

from shiftgit.ledger.store import Store

# Repo-local notes settings (SPEC §3). Never global. `git log` shows the human note only; a rewrite
# carries both the note and the machine record (refs/notes/shift-data).
NOTES_CONFIG = (
    ("notes.displayRef", ("refs/notes/shift",)),
    ("notes.rewriteRef", ("refs/notes/shift", "refs/notes/shift-data")),
    ("notes.rewriteMode", ("ignore",)),
)


def init(store: Store, *, hooks: str) -> list[str]:
    """Create `.shift/`, configure git for this repo only, install git hooks. Idempotent."""
    lines = []
    if hooks == "pre-commit":  # a config pre-commit cannot read is refused before anything is written
        from shiftgit.git import install

        install.check_config(store.repo)
    elif hooks == "git":  # and a hook of someone else's that cannot be kept
        from shiftgit.git import install

        install.check_hooks(install.hooks_dir(store.repo))
    created = store.init()
    configure_git(store)
    lines.append("set repo-local git config for refs/notes/shift (notes) and refs/notes/shift-data (records)")
    from shiftgit.git import sync

    lines += sync.configure(store)
    if hooks == "git":
        from shiftgit.git import install

        lines += install.install_git_hooks(store.repo, idle=_idle(store))
    elif hooks == "pre-commit":
        from shiftgit.git import install

        lines += install.install_pre_commit(store.repo)
    return [store_line(store, created), *lines]


def _idle(store: Store) -> bool:
    """No run is active here: the hooks only a run needs can wait for one (git/runhooks.py). Not while SHIFT_RUN
    names one, this worktree points at one, or a ledger says a run is "active" (a clone of a run's work: its
    `checkpoint` finds the run by discovery, and a `commit --no-verify` or a cherry-pick runs no pre-commit shim);
    a ledger that cannot be read counts as active."""
    from shiftgit.errors import ShiftError
    from shiftgit.git import runhooks

    try:
        return store.active_run() is None and not runhooks.ledger_says_active(store.inside("runs"))
    except ShiftError:
        return False


def store_line(store: Store, created: bool) -> str:
    """Whether `.shift/` still needs committing (in a clone it usually came committed)."""
    where = f"{store.rel(store.root)}/"
    if created:
        return f"created {where} (commit it)"
    repo = store.repo
    tracked = repo.git("ls-files", "--", f"{where}config.json", check=False).strip()
    pending = repo.git("status", "--porcelain", "--untracked-files=all", "--", where, check=False).strip()
    return f"kept {where} (already committed)" if tracked and not pending else f"kept {where} (commit it)"


def configure_git(store: Store) -> None:
    repo = store.repo
    for key, values in NOTES_CONFIG:
        current = repo.git("config", "--local", "--get-all", key, check=False).split()
        if len(values) == 1 and values[0] not in current:
            repo.git("config", "--local", "--replace-all", key, values[0])
            continue
        for value in values:  # several values: other notes refs the person configured stay
            if value not in current:
                repo.git("config", "--local", "--add", key, value)
