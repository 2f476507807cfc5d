"""What a git hook runs with: the work tree, the environment git set, arguments and streams.

Stdlib only: every git hook imports it before anything else.
"""

from __future__ import annotations

import os

from shiftgit.git import view as gitview

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import NamedTuple, TextIO
else:
    from shiftgit.tuples import NamedTuple


class Context(NamedTuple):
    root: str  # the top of the work tree (str: no pathlib on the commit path)
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
        return os.path.isfile(os.path.join(self.root, gitview.CONFIG))


