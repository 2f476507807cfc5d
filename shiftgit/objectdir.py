"""The object directory shiftgit may write objects into itself (loose ones, or a pack), and the settings that leave
that to git. Apart from packs.py: an agent hook's conversation save writes three loose objects (rawgit.write_loose)
and needs none of the packs' code (with the tree build's script and its staging files).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from collections.abc import Mapping

OBJECTS_ASIDE = (b"sharedrepository", b"compatobjectformat", b"fsync", b"include")  # in the config: git writes
OBJECT_VARS = ("GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH")


def object_dir(common_dir: str | None, env: Mapping[str, str]) -> str | None:
    """The object directory of the repository whose common git dir is COMMON_DIR, when shiftgit may write objects
    into it itself (loose ones: rawgit.write_loose; a pack: packs.prepack); None when git must: the directory is
    unknown or missing, ENV points git at other object directories, or the config may ask git for more than plain
    files (shared permissions, a second object format, fsync, or an included file that could say so)."""
    if common_dir is None or any(env.get(name) for name in OBJECT_VARS):
        return None
    objects = os.path.join(common_dir, "objects")
    try:
        with open(os.path.join(common_dir, "config"), "rb") as handle:
            config = handle.read().lower()
    except OSError:
        return None
    return objects if not any(word in config for word in OBJECTS_ASIDE) and os.path.isdir(objects) else None
