"""What every bench shares: an isolated HOME and git config, the command under test, and the scale.

Each bench runs shiftgit from this checkout (PYTHONPATH), never the machine's git config or
identity, and reports Python's start-up time and the load average beside its figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SG = [sys.executable, "-m", "shiftgit"]
IDENTITY = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_NOTES_REF", "GIT_COMMITTER_DATE", "GIT_AUTHOR_DATE",
           "SHIFT_RUN", "SHIFT_SKIP", "SHIFTGIT_TEST_PAUSE", "PYTHONDONTWRITEBYTECODE")

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def isolate(home: Path) -> dict[str, str]:
    """Point this process and its children at an empty HOME and git config; returns the environment."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "gitconfig").write_text("")
    os.environ.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
                       "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
                       "XDG_CACHE_HOME": str(home / "cache"), "PYTHONPATH": str(ROOT), **IDENTITY})
    for var in DROPPED:
        os.environ.pop(var, None)
    if "pygit2" in sys.modules:  # libgit2 read HOME at import and ignores GIT_CONFIG_GLOBAL
        empty = home / "empty"
        empty.mkdir(exist_ok=True)
        settings = sys.modules["pygit2"].settings
        for level in (settings.search_path.GIT_CONFIG_LEVEL_GLOBAL, settings.search_path.GIT_CONFIG_LEVEL_XDG,
                      settings.search_path.GIT_CONFIG_LEVEL_SYSTEM):
            settings.search_path[level] = str(empty)
    return dict(os.environ)


def parse(parser: argparse.ArgumentParser, **quick: object) -> argparse.Namespace:
    """The arguments; `--quick` (what CI runs: no timing is judged) sets the tiny sizes and fewest rounds in QUICK."""
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes, fewest rounds: only checks that the bench still works (CI)")
    args = parser.parse_args()
    if args.quick:
        for name, value in quick.items():
            setattr(args, name, value)
    return args


def compile_bytecode(root: Path = ROOT) -> None:
    """Bytecode as an installed package has it (pip compiles on install); __pycache__/ is git-ignored."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "shiftgit")], check=True)


def startup_ms(rounds: int = 15) -> float:
    """The median wall time of `python -c pass`: the unit the figures are given in."""
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def run(cwd: Path, *argv: str, data: str | None = None, env: dict[str, str] | None = None) -> str:
    """`argv`'s stdout; a failure ends the bench with its output."""
    proc = subprocess.run(list(argv), cwd=cwd, input=data, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed in {cwd}:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def base_env(checkout: Path, pycache: Path) -> dict[str, str]:
    """The environment that runs CHECKOUT's shiftgit (bytecode compiled once, kept under PYCACHE): `--base`."""
    if not (checkout / "shiftgit" / "__init__.py").is_file():
        raise SystemExit(f"--base {checkout}: no shiftgit/ package there")
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONPYCACHEPREFIX": str(pycache)}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "shiftgit")], env=env, check=True)
    return env


def fast_history(path: Path, commits: int) -> None:
    """A new repository at `path` whose main branch holds COMMITS commits (one `git fast-import`), checked out."""
    path.mkdir(parents=True)
    run(path, "git", "init", "-q", "-b", "main")
    stream = "".join(f"commit refs/heads/main\ncommitter B <b@b> {1700000000 + i} +0000\ndata {len(str(i))}\n{i}\n"
                     for i in range(commits))
    run(path, "git", "fast-import", "--quiet", data=stream)
    run(path, "git", "reset", "-q", "--hard")


PEAK_RSS = ("import resource, subprocess, sys\n"
            "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if code == 0 else -1)\n")


def peak_rss_mib(cwd: Path, argv: list[str]) -> float:
    """The peak resident set of the largest process `argv` runs (itself or a child it waited for), in MiB."""
    kib = int(run(cwd, sys.executable, "-c", PEAK_RSS, *argv))
    if kib < 0:
        raise SystemExit(f"{' '.join(argv)} failed in {cwd}")
    return kib / 1024


def scale() -> str:
    """One line for the report: Python's start-up and the load average while the bench ran."""
    one, five, _ = os.getloadavg()
    line = f"python -c pass {startup_ms():.1f} ms, load {one:.1f} (5-min {five:.1f}), {os.cpu_count()} cores"
    return "\n".join([line, *unit_warnings()])


def unit_warnings() -> list[str]:
    """What inflates the unit: a .pth file that imports code at every start-up (an editable install's finder
    imports pathlib and re: ~30 ms on a 2-core VM where Python starts in ~20), while shiftgit's hooks start
    Python without site. Figures in such start-ups flatter shiftgit: bench from a venv without shiftgit installed."""
    import site

    heavy = []
    for folder in site.getsitepackages():
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if name.endswith(".pth") and name != "distutils-precedence.pth":
                with open(os.path.join(folder, name), errors="replace") as pth:
                    if any(line.startswith("import") for line in pth):
                        heavy.append(name)
    if not heavy:
        return []
    return [f"WARNING: {sys.executable}'s site runs {', '.join(heavy)} at every start-up: the unit is inflated and "
            "the start-up figures flattered; bench from a venv where shiftgit is not installed "
            "(python -m venv V && V/bin/pip install pygit2 click jsonschema pre-commit)"]
