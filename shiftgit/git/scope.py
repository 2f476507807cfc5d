"""Path globs a run owns (its contract's scope). Stdlib only: the commit gate uses it."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Sequence

# The files `shiftgit init` writes outside .shift/ (hooks config, agent hooks, the AGENTS.md pointer, the merge
# attribute): shiftgit's own, so the scope rule lets them through under any run.
SETUP_FILES = frozenset((".gitattributes", ".pre-commit-config.yaml", "AGENTS.md", ".claude/settings.json",
                         ".codex/hooks.json", ".gemini/settings.json"))


def in_scope(path: str, scope: Sequence[str]) -> bool:
    """A path belongs to a scope of globs; `dir/**` covers everything below dir; no scope covers everything."""
    if not scope:
        return True
    import fnmatch  # here: it loads re, ~15 ms of a commit gate whose run has no scope

    for glob in scope:
        if fnmatch.fnmatch(path, glob):
            return True
        if glob.endswith("/**") and (path + "/").startswith(glob[:-2]):
            return True
        if not any(ch in glob for ch in "*?[") and path.startswith(glob.rstrip("/") + "/"):
            return True
    return False
