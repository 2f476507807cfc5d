"""The README's two set-up commands stay true, and .ci/run runs the second one."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^    (python3 -m pip install .+)$", section, flags=re.M)


def test_readme_has_the_two_setup_commands() -> None:
    install_demo, install_test = setup_commands()
    assert install_demo.endswith("&& shiftgit demo")
    assert "pip install" in install_test and install_test.endswith("python3 -m pytest")


def test_ci_runs_the_readme_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    extracted = subprocess.run(["sed", "-n", r"s/^    \(python3 -m pip install -e .*pytest.*\)$/\1/p",
                                str(ROOT / "README.md")], capture_output=True, text=True, check=True)
    assert extracted.stdout.splitlines()[0] == setup_commands()[1]
    assert 'bash -c "$cmd"' in script


# The user's environment as it was before the autouse fixture isolated HOME: pip reads its index settings there.
_USER_ENV = {k: v for k, v in __import__("os").environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
_OFFLINE = ("Failed to establish a new connection", "Network is unreachable", "Temporary failure in name resolution",
            "NewConnectionError", "Could not fetch URL", "No matching distribution found")


def test_the_first_command_works_in_a_fresh_venv(tmp_path: Path) -> None:
    """`python3 -m pip install . && shiftgit demo`, as the README says, with nothing else installed."""
    import os
    import shutil
    import sys

    import pytest

    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], env=_USER_ENV, capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot create a virtual environment here: {made.stderr.strip()[-200:]}")
    git = shutil.which("git")
    assert git
    env = {**_USER_ENV, "PATH": os.pathsep.join([str(venv / "bin"), os.path.dirname(git), "/usr/bin", "/bin"]),
           "HOME": os.environ["HOME"]}
    env = {k: v for k, v in env.items() if not k.startswith(("GIT_", "SHIFT_"))} | {
        k: v for k, v in os.environ.items() if k.startswith("GIT_")}  # the tests' isolated git identity
    install_demo = setup_commands()[0].replace("python3 -m pip install .", f"python3 -m pip install -q {ROOT}")
    pip_env = {**env, "HOME": _USER_ENV.get("HOME", env["HOME"])}  # pip's own config lives in the real HOME
    install = subprocess.run(["sh", "-c", install_demo.split(" && ")[0]], env=pip_env, capture_output=True,
                             text=True, timeout=900)
    if install.returncode != 0 and any(sign in install.stderr for sign in _OFFLINE):
        pytest.skip(f"no package index reachable: {install.stderr.strip()[-200:]}")
    assert install.returncode == 0, install.stderr[-2000:]
    assert not (venv / "bin" / "pytest").exists()  # shiftgit does not bring pytest: the tour must not need it
    demo = subprocess.run(["sh", "-c", install_demo.split(" && ")[1]], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert demo.returncode == 0, (demo.stdout + demo.stderr)[-3000:]
    assert "tour done." in demo.stdout and "Traceback" not in demo.stdout + demo.stderr
