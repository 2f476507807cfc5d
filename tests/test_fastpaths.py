"""The fast paths that answer before the heavy imports: `--version`, and what read-only commands load."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from shiftgit.cli.main import cli

SG = [sys.executable, "-m", "shiftgit"]


def loaded(*args: str) -> set[str]:
    """The modules `shiftgit ARGS` imported (python -X importtime), and its stdout."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "shiftgit", *args], capture_output=True,
                          text=True)
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


def test_version_answers_as_click_did_without_loading_click() -> None:
    fast = subprocess.run([*SG, "--version"], capture_output=True, text=True)
    slow = CliRunner().invoke(cli, ["--version"], prog_name="shiftgit")
    assert (fast.returncode, fast.stdout, fast.stderr) == (0, slow.output, "")
    assert fast.stdout.startswith("shiftgit, version ")
    assert not {"click", "jsonschema", "pygit2", "dataclasses"} & loaded("--version")


def test_version_with_other_arguments_is_still_clicks() -> None:
    proc = subprocess.run([*SG, "--version", "status"], capture_output=True, text=True)
    assert proc.stdout == subprocess.run([*SG, "--version"], capture_output=True, text=True).stdout
    assert "click" in loaded("--version", "status")
