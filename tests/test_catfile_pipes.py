"""`git cat-file --batch` asked for more than a pipe holds: answers come back, nothing blocks.

git answers while it reads its requests; written all at once, requests that outgrow the pipe left git blocked on
its full answer pipe and the asker blocked on the request pipe (a commit staging a thousand runs hung in the
post-commit hook's note writer). Run in a child process with a timeout, so a deadlock fails instead of hanging.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import make_repo

PROBE = """
import os, sys
sys.path.insert(0, sys.argv[1])
from shiftgit.git.rawgit import CatFile
names = ["HEAD:big.txt"] * 12000 + ["HEAD:nothing-here"]
with CatFile(dict(os.environ)) as cat:
    got = cat.get(names)
print(len(got), sum(1 for g in got if g and len(g[2]) == 2048), got[-1])
"""


def test_many_requests_with_big_answers_never_block(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    repo.write("big.txt", "x" * 2047 + "\n")
    assert repo.commit("a 2 KiB file").returncode == 0
    package = str(Path(__file__).resolve().parents[1])
    proc = subprocess.run([sys.executable, "-c", PROBE, package], cwd=repo.path, capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.split() == ["12001", "12000", "None"], proc.stderr
