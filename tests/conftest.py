"""Real git repositories in temporary directories, isolated from this machine's git config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SG = [sys.executable, "-m", "shiftgit"]
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = (
    "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_sub():\n    assert sub(5, 3) == 2\n"
)


@pytest.fixture(autouse=True)
def isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("home")
    (home / "gitconfig").write_text("")
    env = {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_AUTHOR_NAME": "Ada Example",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada Example",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for var in ("SHIFT_RUN", "SHIFT_SKIP", "CLAUDECODE", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE",
                "GIT_NOTES_REF", "GIT_COMMITTER_DATE", "GIT_AUTHOR_DATE", "PYTEST_ADDOPTS"):
        monkeypatch.delenv(var, raising=False)
    try:
        import pygit2

        empty = str(home / "empty")
        os.makedirs(empty, exist_ok=True)
        for level in (pygit2.enums.ConfigLevel.GLOBAL, pygit2.enums.ConfigLevel.XDG,
                      pygit2.enums.ConfigLevel.SYSTEM):
            pygit2.settings.search_path[level] = empty
    except ImportError:  # pragma: no cover - pygit2 is a dependency
        pass
    yield home


class Repo:
    """A real repository; `git` and `sg` run real processes in it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def run(self, argv: list[str], *, env: dict[str, str] | None = None, input: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        full = dict(os.environ)
        full.update(env or {})
        return subprocess.run(argv, cwd=self.path, env=full, input=input, text=True,
                              capture_output=True, timeout=timeout)

    def git(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
        proc = self.run(["git", *args], env=env)
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc.stdout

    def sg(self, *args: str, env: dict[str, str] | None = None,
           input: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.run([*SG, *args], env=env, input=input)

    def ok(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        proc = self.sg(*args, env=env)
        assert proc.returncode == 0, f"shiftgit {' '.join(args)} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def json(self, *args: str, codes: tuple[int, ...] = (0,)) -> Any:
        proc = self.sg(*args, "--json")
        assert proc.returncode in codes, f"{args} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        return json.loads(proc.stdout)

    def write(self, rel: str, text: str) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def read(self, rel: str) -> str:
        return (self.path / rel).read_text()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def commit(self, message: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        self.git("add", "-A")
        return self.run(["git", "commit", "-q", "-m", message], env=env)

    def ledger_path(self, run: str) -> Path:
        return self.path / ".shift" / "runs" / run / "ledger.json"

    def ledger(self, run: str) -> Any:
        return json.loads(self.ledger_path(run).read_text())


def make_repo(path: Path) -> Repo:
    path.mkdir(parents=True, exist_ok=True)
    repo = Repo(path)
    repo.git("init", "-q", "-b", "main")
    repo.write("calc.py", CALC)
    repo.write("tests/test_calc.py", TESTS)
    repo.write("conftest.py", "")
    repo.write(".gitignore", "__pycache__/\n.pytest_cache/\n")
    repo.commit("initial")
    return repo


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return make_repo(tmp_path / "work")


@pytest.fixture
def run_repo(repo: Repo) -> Repo:
    """shiftgit initialised with git hooks, run `demo` started and committed."""
    repo.ok("init", "--hooks", "git")
    assert repo.commit("set up shiftgit").returncode == 0
    repo.ok("start", "demo", "--goal", "make calc correct", "--stop-when", "tests pass",
            "--constraint", "never edit tests/")
    assert repo.commit("start demo").returncode == 0
    return repo
