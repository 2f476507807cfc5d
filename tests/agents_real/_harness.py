"""Shared set-up for the real-CLI tests: install a CLI from npm, isolate it, make a shiftgit repo, run it.

Nothing here talks to a real model: every CLI is pointed at `_fakemodel.FakeModel` on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._capture_hook import settle

CACHE_ENV = "SHIFTGIT_AGENTS_CACHE"
INSTALL_TIMEOUT = 900.0
GIT_TIMEOUT = 60.0
WHO = {"NAME": "Ada Example", "EMAIL": "ada@example.com"}

# Everything an outer agent session or the developer's machine could leak into a CLI under test.
LEAKY_PREFIXES = ("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "VERTEX", "SHIFT_", "GIT_",
                  "NODE_OPTIONS", "NPM_CONFIG_", "npm_config_", "PYTEST_ADDOPTS", "VIRTUAL_ENV")


@dataclass(frozen=True)
class CliSpec:
    """One agent CLI as published on npm, pinned."""

    agent: str  # shiftgit's name for it: claude, codex, gemini
    package: str
    version: str
    binary: str

    @property
    def slug(self) -> str:
        return f"{self.package.rsplit('/', 1)[-1]}-{self.version}"


CLAUDE = CliSpec("claude", "@anthropic-ai/claude-code", "2.1.332", "claude")
CODEX = CliSpec("codex", "@openai/codex", "0.171.0", "codex")
GEMINI = CliSpec("gemini", "@google/gemini-cli", "0.61.0", "gemini")
QWEN = CliSpec("qwen", "@qwen-code/qwen-code", "0.24.4", "qwen")
COPILOT = CliSpec("copilot", "@github/copilot", "1.0.102", "copilot")
OPENCODE = CliSpec("opencode", "opencode-ai", "1.18.33", "opencode")


class Unavailable(Exception):
    """The CLI cannot be installed or run here; the message is the skip reason."""


# -- installing ------------------------------------------------------------------------------

def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "shiftgit-agents-real"


def installed_version(prefix: Path, spec: CliSpec) -> str | None:
    manifest = prefix / "node_modules" / spec.package / "package.json"
    try:
        version = json.loads(manifest.read_text()).get("version")
    except (OSError, ValueError):
        return None
    return version if isinstance(version, str) else None


def install(spec: CliSpec, root: Path) -> Path:
    """The CLI's executable, installed with `npm install --prefix` into `root` once per version."""
    prefix = root / spec.slug
    binary = prefix / "node_modules" / ".bin" / spec.binary
    if installed_version(prefix, spec) == spec.version and binary.exists():
        return binary
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} is not on PATH: cannot install {spec.package}@{spec.version}")
    prefix.mkdir(parents=True, exist_ok=True)
    argv = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save",
            "--loglevel=error", f"{spec.package}@{spec.version}"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"`{' '.join(argv)}` took more than {INSTALL_TIMEOUT:.0f} s") from None
    if proc.returncode != 0 or installed_version(prefix, spec) != spec.version or not binary.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise Unavailable(f"`npm install {spec.package}@{spec.version}` failed (exit {proc.returncode}): "
                          + " | ".join(tail))
    return binary


# -- isolation -------------------------------------------------------------------------------

def shiftgit_bin_dir() -> Path:
    """The directory holding the `shiftgit` under test (the venv's scripts), put first on PATH."""
    found = shutil.which("shiftgit", path=str(Path(sys.executable).parent)) or shutil.which("shiftgit")
    if found is None:
        raise Unavailable("`shiftgit` is not installed next to this Python or on PATH")
    return Path(found).parent


def isolated_env(home: Path, extra_path: list[Path]) -> dict[str, str]:
    """A clean environment: a temporary HOME, XDG dirs and TMPDIR, empty git config, a fixed identity,
    `extra_path` (the shiftgit under test) before the PATH, nothing inherited from an outer agent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(LEAKY_PREFIXES)}
    gitconfig = home / ".gitconfig-test"
    gitconfig.write_text("")
    env.update({
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "TMPDIR": str(home / "tmp"),  # the CLIs keep scratch files (Claude: claude-<uid>/) under it
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PATH": os.pathsep.join([*(str(p) for p in extra_path), os.environ.get("PATH", "/usr/bin:/bin")]),
        "NO_COLOR": "1",
        "TERM": "dumb",
        "CI": "1",
    })
    for role in ("AUTHOR", "COMMITTER"):
        for key, value in WHO.items():
            env[f"GIT_{role}_{key}"] = value
    for sub in (".config", ".local/share", ".local/state", ".cache", "tmp"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    return env


# -- the repository --------------------------------------------------------------------------

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
GOAL = "make calc correct"
STOP_WHEN = "all calc tests pass"
CONSTRAINTS = ("never touch prod", "keep calc.add's signature unchanged")


@dataclass
class Workspace:
    """A git repository with shiftgit initialised for one agent and run `r1` started, both committed."""

    path: Path
    env: dict[str, str]

    def run(self, argv: list[str], *, input: str | None = None, timeout: float = GIT_TIMEOUT,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(argv, cwd=self.path, env=self.env, input=input, text=True, capture_output=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def git(self, *args: str, check: bool = True) -> str:
        return self.run(["git", *args], check=check).stdout

    def sg(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(["shiftgit", *args], check=check)

    def write(self, rel: str, text: str) -> None:
        (self.path / rel).write_text(text)

    def read(self, rel: str) -> str:
        return (self.path / rel).read_text()

    def ledger(self, run: str = "r1") -> dict[str, Any]:
        """The ledger once the saves a hook handed to the background are done (as the agent's next hook reads it)."""
        settle(str(self.path))
        data = json.loads((self.path / ".shift" / "runs" / run / "ledger.json").read_text())
        assert isinstance(data, dict)
        return data

    def checkpoints(self, run: str = "r1") -> list[dict[str, Any]]:
        """Every checkpoint of the run, oldest first: the ledger's `history` keeps a summary of each
        earlier one (id, seq, step, at, base); the latest is complete (note, files, ...)."""
        ledger = self.ledger(run)
        points = [p for p in ledger.get("history") or [] if isinstance(p, dict)]
        latest = ledger.get("checkpoint")
        if isinstance(latest, dict) and all(p.get("id") != latest.get("id") for p in points):
            points.append(latest)
        return points

    def hooks_log(self) -> str:
        git_dir = Path(self.git("rev-parse", "--absolute-git-dir").strip())
        path = git_dir / "shift" / "hooks.log"
        return path.read_text() if path.exists() else ""


@dataclass
class Sandbox:
    """Everything one test owns: a temporary HOME, the environment, the repository, the capture log."""

    home: Path
    env: dict[str, str]
    ws: Workspace
    capture_log: Path
    shiftgit_dir: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    def events(self) -> list[dict[str, Any]]:
        """What the capture hooks recorded, in order (see `_capture_hook.py` for the fields)."""
        if not self.capture_log.exists():
            return []
        return [json.loads(line) for line in self.capture_log.read_text().splitlines() if line.strip()]

    def names(self) -> list[str]:
        return [e["event"] for e in self.events()]

    def payloads(self, event: str) -> list[dict[str, Any]]:
        return [e["payload"] for e in self.events() if e["event"] == event and isinstance(e["payload"], dict)]

    def checkpoint_at(self, event: str, run: str = "r1") -> dict[str, Any] | None:
        """The run's latest checkpoint when `event` first fired (as the capture hook saw it)."""
        for e in self.events():
            if e["event"] == event:
                point = (e.get("checkpoints") or {}).get(run)
                return point if isinstance(point, dict) else None
        return None


def long_constraints(count: int = 42) -> tuple[str, ...]:
    """Constraints whose briefing is just under 10,000 characters but over 10,000 bytes (accents)."""
    return tuple(f"constraint-{i:02d}: la modification du module numéro {i:02d} doit préserver l'interface "
                 f"publique — aucune exception, même pour les tests de régression ou les scripts de "
                 f"déploiement écrits à la main" for i in range(1, count + 1))


def make_workspace(path: Path, env: dict[str, str], agent: str,
                   constraints: tuple[str, ...] = CONSTRAINTS) -> Workspace:
    """`git init`, a small project, `shiftgit init --agent <agent>`, `shiftgit start r1` with the
    constraints (two short ones by default); each step committed."""
    path.mkdir(parents=True)
    ws = Workspace(path, env)
    ws.git("init", "-q", "-b", "main")
    (path / "calc.py").write_text(CALC)
    (path / "README.md").write_text("# calc\n")
    (path / ".gitignore").write_text("__pycache__/\n")
    ws.git("add", "-A")
    ws.git("commit", "-q", "-m", "initial")
    ws.sg("init", "--hooks", "git", "--agent", agent)
    ws.git("add", "-A")
    ws.git("commit", "-q", "-m", f"shiftgit init --agent {agent}")
    args = [arg for text in constraints for arg in ("--constraint", text)]
    ws.sg("start", "r1", "--goal", GOAL, "--stop-when", STOP_WHEN, *args)
    ws.git("add", "-A")
    ws.git("commit", "-q", "-m", "start r1")
    return ws


# -- running a CLI ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Finished:
    """A finished CLI process."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool

    def describe(self) -> str:
        state = "timed out" if self.timed_out else f"exit {self.returncode}"
        return (f"{' '.join(self.argv)[:300]} -> {state} after {self.seconds:.1f} s\n"
                f"--- stdout (tail) ---\n{self.stdout[-4000:]}\n--- stderr (tail) ---\n{self.stderr[-4000:]}")


def run_cli(argv: list[str], cwd: Path, env: dict[str, str], *, timeout: float) -> Finished:
    """Run a CLI headless (stdin empty) in its own process group; on timeout kill the whole group."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, text=True, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        out, err = proc.communicate()
    _kill_group(proc.pid)  # anything the CLI left running in its group
    return Finished(argv, proc.returncode, out, err, time.monotonic() - started, timed_out)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
