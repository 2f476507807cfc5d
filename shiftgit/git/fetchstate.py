"""What this clone fetched from its remotes: so `log` and `status` can say "run `shiftgit sync`".

`git clone` fetches no handoff notes and no `refs/shift/*`; until `sync` (or a fetch with the refspec
`init` adds) brings them, a fresh clone sees neither the notes nor checkpoints other machines published.
"""

from __future__ import annotations

from pathlib import Path

from shiftgit.repo import Repo


def private(repo: Repo, name: str) -> Path:
    """A file shared by the worktrees of this clone: `<git-common-dir>/shift/NAME`."""
    path = repo.common_dir / "shift" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def mark_synced(repo: Repo, remote: str) -> None:
    """`sync` ran against `remote` (even when the remote had nothing to fetch)."""
    try:
        private(repo, f"synced-{remote.replace('/', '_')}").touch()
    except OSError:
        pass


def sync_hint(repo: Repo, noted: bool = False) -> str | None:
    """A hint when this clone has remotes but never fetched their notes or published refs (`noted`: the caller
    knows refs/notes/shift is there, so there is none to give, and no git to ask)."""
    if noted:
        return None
    remotes = repo.git("remote", check=False).split()
    if not remotes or repo.ref("refs/notes/shift") is not None:
        return None
    tracking = repo.git("for-each-ref", "--count=1", "--format=%(refname)", "refs/shift-remote/", check=False)
    if tracking.strip() or any(private(repo, f"synced-{r.replace('/', '_')}").exists() for r in remotes):
        return None
    return (f"this clone has not fetched the handoff notes and published checkpoints of {remotes[0]} "
            "(`git clone` does not): run `shiftgit sync`")
