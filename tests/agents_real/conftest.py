"""Real-CLI tests: Claude Code, Codex, Gemini CLI, Qwen Code, Copilot CLI and OpenCode installed from npm
(Aider from PyPI, `_clis_more.install_aider`), against a fake model.

Run with `python -m pytest -m agents_real tests/agents_real` (anything else skips them, saying so). Each
CLI is installed once with `npm install --prefix` into $SHIFTGIT_AGENTS_CACHE (default
~/.cache/shiftgit-agents-real), at the version pinned in `_harness`; a test is skipped with the reason
when node/npm is missing or the install fails. The `shiftgit` under test is the one installed next to
the running Python. The marker is registered in pyproject.toml.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ._harness import CONSTRAINTS, CliSpec, Sandbox, Unavailable, cache_root, install, isolated_env, make_workspace
from ._harness import shiftgit_bin_dir as _shiftgit_bin_dir

MARK = "agents_real"
CACHE = cache_root()  # resolved at import, before any fixture points HOME at a temporary directory


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the real-CLI tests unless the marker expression names them."""
    if MARK in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="real-CLI test (installs the agent CLIs from npm and PyPI): "
                                   f"run with `python -m pytest -m {MARK} tests/agents_real`")
    for item in items:
        if item.get_closest_marker(MARK) is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def cli_binary() -> Callable[[CliSpec], Path]:
    """Install (or reuse) a CLI; skip the test with the reason when that is impossible here."""
    found: dict[str, Path | str] = {}

    def get(spec: CliSpec) -> Path:
        if spec.slug not in found:
            try:
                found[spec.slug] = install(spec, CACHE)
            except Unavailable as exc:
                found[spec.slug] = str(exc)
        result = found[spec.slug]
        if isinstance(result, str):
            pytest.skip(result)
        return result

    return get


@pytest.fixture
def make_sandbox(tmp_path: Path) -> Callable[..., Sandbox]:
    """A temporary HOME with an isolated environment and a repository set up for `agent`
    (run r1 started with `constraints`)."""
    def build(agent: str, constraints: tuple[str, ...] = CONSTRAINTS) -> Sandbox:
        try:
            shiftgit_dir = _shiftgit_bin_dir()
        except Unavailable as exc:
            pytest.skip(str(exc))
        home = tmp_path / "home"
        home.mkdir()
        env = isolated_env(home, [shiftgit_dir])
        ws = make_workspace(tmp_path / "work", env, agent, constraints)
        return Sandbox(home=home, env=env, ws=ws, capture_log=tmp_path / "hook-events.jsonl",
                       shiftgit_dir=shiftgit_dir)

    return build
