"""What a person reviewing a run reads: the postmortem, per-step diffs, rollback further back, milestones,
and --json on check and init."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CALC, Repo

PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
BROKEN = CALC.replace("return a - b", "return a + b")


def step(repo: Repo, name: str, content: str, *, check: int | None = None, milestone: bool = False) -> None:
    repo.write("calc.py", content)
    if check is not None:
        assert repo.sg("check", "--name", "unit", "--quiet", "--", *PYTEST).returncode == check
    repo.ok("checkpoint", "--step", name, *(["--milestone"] if milestone else []))


def test_report_covers_the_run_from_contract_to_receipt(run_repo: Repo, tmp_path: Path) -> None:
    run_repo.ok("amend", "--goal", "make calc correct, and fast", "--reason", "speed matters")
    step(run_repo, "fixed sub", CALC + "# one\n", check=0, milestone=True)
    step(run_repo, "broke sub again", BROKEN, check=1)
    run_repo.ok("stop", "--reason", "blocked_external", "--detail", "the CI quota ran out")
    text = run_repo.ok("report", "--markdown").stdout
    assert "| 1 |" in text and "fixed sub **(milestone)**" in text and "| 2 |" in text
    assert "unit: failed (exit 1" in text and "tests/test_calc.py::test_sub" in text
    assert "speed matters" in text and "blocked_external" in text and "the CI quota ran out" in text
    document = run_repo.json("report", "--json")
    assert [p["checks"] for p in document["timeline"]] == [
        {"passed": 1, "failed": 0, "never_attempted": 0, "stale": 0},
        {"passed": 0, "failed": 1, "never_attempted": 0, "stale": 0}]
    page = tmp_path / "run.html"
    run_repo.ok("report", "--html", str(page))
    html = page.read_text()
    assert "fixed sub" in html and "broke sub again" in html and "<svg" in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html


def test_report_html_escapes_recorded_text(run_repo: Repo, tmp_path: Path) -> None:
    step(run_repo, "<script>alert(1)</script>", CALC + "# x\n")
    page = tmp_path / "run.html"
    run_repo.ok("report", "--html", str(page))
    assert "<script>" not in page.read_text() and "&lt;script&gt;" in page.read_text()


def _chromium() -> str | None:
    found = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], capture_output=True, timeout=900,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    return shutil.which("chromium")


def test_report_html_renders_the_steps_in_headless_chromium(run_repo: Repo, tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium here and it cannot be installed (apt-get install chromium needs root and Debian)")
    step(run_repo, "parsed the input format", CALC + "# one\n", check=0, milestone=True)
    step(run_repo, "found the subtraction bug", BROKEN, check=1)
    page = tmp_path / "run.html"
    run_repo.ok("report", "--html", str(page))
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "parsed the input format" in proc.stdout and "found the subtraction bug" in proc.stdout
    assert proc.stdout.count("<circle") == 2


def test_diff_of_one_step_and_of_a_span(run_repo: Repo) -> None:
    step(run_repo, "one", CALC + "# one\n")
    run_repo.write("NOTES.md", "a note\n")
    step(run_repo, "two", CALC + "# one\n")
    step(run_repo, "three", CALC + "# three\n")
    two = run_repo.ok("diff", "2").stdout
    assert "NOTES.md" in two and "calc.py" not in two
    span = run_repo.ok("diff", "demo", "1..3", "--stat").stdout
    assert "NOTES.md" in span and "calc.py" in span and ".shift" not in span
    latest = run_repo.ok("diff").stdout
    assert "# three" in latest and "NOTES.md" not in latest
    bad = run_repo.sg("diff", "7")
    assert bad.returncode == 2 and "no checkpoint #7" in bad.stderr and "Traceback" not in bad.stderr


def test_rollback_paths_reopen_only_those_files(run_repo: Repo) -> None:
    step(run_repo, "one", CALC + "# one\n")
    run_repo.write("calc.py", CALC + "# later\n")
    run_repo.write("README.md", "later\n")
    run_repo.ok("rollback", "--yes", "--", "calc.py")
    assert run_repo.read("calc.py") == CALC + "# one\n" and run_repo.read("README.md") == "later\n"


def test_rollback_last_green_without_a_green_checkpoint_says_so(run_repo: Repo) -> None:
    step(run_repo, "red", BROKEN, check=1)
    proc = run_repo.sg("rollback", "--last-green", "--yes")
    assert proc.returncode == 2 and "no checkpoint whose checks all passed" in proc.stderr


def test_milestones_reach_the_briefing(run_repo: Repo) -> None:
    step(run_repo, "the parser works", CALC + "# one\n", milestone=True)
    step(run_repo, "tidied", CALC + "# two\n")
    brief = run_repo.sg("resume", "--no-run").stdout
    assert "Milestones reached" in brief and "the parser works" in brief.split("Milestones reached", 1)[1]


def test_check_and_init_speak_json(run_repo: Repo) -> None:
    proc = run_repo.sg("check", "--json", "--name", "unit", "--", *PYTEST)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["check"]["exit_code"] == 0 and "passed" in proc.stderr
    init = json.loads(run_repo.ok("init", "--json").stdout)
    assert init["hooks"] == "git" and any("kept .shift/" in line for line in init["done"])
