"""The agent hooks' log, `<git-dir>/shift/hooks.log`: what a fail-open hook or its background save could not do."""

from __future__ import annotations

from shiftgit.repo import Repo

LOG_LIMIT = 512 * 1024


def log(repo: Repo, agent: str, event: str, message: str) -> None:
    """Append to <git-dir>/shift/hooks.log (rotated at 512 KiB); logging itself never fails a hook."""
    import datetime as dt

    try:
        path = repo.private("hooks.log")
        if path.exists() and path.stat().st_size > LOG_LIMIT:
            path.replace(path.with_name("hooks.log.1"))
        at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{at} hook {agent} {event}: {message.rstrip()}\n")
    except OSError:
        pass
