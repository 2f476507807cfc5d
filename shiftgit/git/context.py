"""What a git hook runs with: the work tree, the environment git set, arguments and streams.

Stdlib only: every git hook imports it before anything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple, TextIO

from shiftgit.git import view as gitview

# The git hooks `shiftgit hook NAME` answers (dispatched in __main__ before click loads).
GIT_HOOKS = ("pre-commit", "commit-msg", "post-commit", "post-rewrite", "post-merge", "pre-push")


class Context(NamedTuple):
    root: Path
    environ: Mapping[str, str]
    args: list[str]
    stdin: TextIO
    stderr: TextIO

    @property
    def env(self) -> dict[str, str]:
        return gitview.hook_env(self.environ)

    def say(self, text: str) -> None:
        print(text, file=self.stderr)

    def initialized(self) -> bool:
        return (self.root / gitview.CONFIG).is_file()


