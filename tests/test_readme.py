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
