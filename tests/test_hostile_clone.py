"""A cloned repository's own Python files never run in shiftgit's place.

shiftgit starts Python at the top of the user's work tree (git hooks, the checkpoint's packer, the agents'
background job, the publisher, the merge driver). `python -c` and `python -m` put that directory first on
sys.path, so a repository holding `shiftgit/__init__.py` or `hashlib.py` would run its code on every commit.
Each module here records its import in MARKS: no mark may appear.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Repo, make_repo

from shiftgit import __version__
from shiftgit.procs import module_argv

PACKAGE = Path(__file__).resolve().parents[1] / "shiftgit"
MARK = "import os\nopen(os.path.join(os.environ['MARKS'], __name__), 'a').close()\n"
SHADOWS = ("shiftgit/__init__.py", "shiftgit/__main__.py", "shiftgit/git/__init__.py", "hashlib.py", "json.py",
           "zlib.py", "shlex.py", "subprocess.py", "tempfile.py", "fcntl.py")


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Repo, Path]:
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("MARKS", str(marks))
    repo = make_repo(tmp_path / "clone")
    for rel in SHADOWS:
        repo.write(rel, MARK)
    assert repo.commit("a repository that shadows modules").returncode == 0
    return repo, marks


def sg(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    """The user's `shiftgit` (a console script starts with its own folder, not the work tree, on sys.path)."""
    proc = repo.run([*module_argv("shiftgit"), *args])
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


def test_a_python_module_started_in_the_work_tree_runs_ours(hostile: tuple[Repo, Path]) -> None:
    repo, marks = hostile
    assert sg(repo, "--version").stdout.strip() == f"shiftgit, version {__version__}"
    assert sorted(p.name for p in marks.iterdir()) == []


def test_commits_and_a_packed_checkpoint_import_nothing_from_the_work_tree(hostile: tuple[Repo, Path]) -> None:
    repo, marks = hostile
    sg(repo, "init", "--hooks", "git")
    assert repo.commit("set up shiftgit").returncode == 0
    sg(repo, "start", "demo", "--goal", "grow", "--stop-when", "eighty files")
    assert repo.commit("start demo").returncode == 0
    for n in range(80):  # past the packer's threshold: the checkpoint starts its `python -S -c` packer
        repo.write(f"data/f{n}.txt", f"line {n}\n")
    sg(repo, "checkpoint", "--step", "eighty files", "--next", "commit")
    done = repo.commit("eighty files")
    assert done.returncode == 0, done.stderr
    assert "shiftgit" in repo.git("notes", "--ref=refs/notes/shift", "show", "HEAD")  # the hooks did run
    assert sorted(p.name for p in marks.iterdir()) == []


def test_no_module_is_started_with_a_bare_dash_m() -> None:
    """Every `python -m` shiftgit starts goes through procs.module_argv (-P, or a -c that drops the work tree)."""
    bare = re.compile(r'sys\.executable\)?\}?"?,? ?"?-m"?|executable\)\} -m ')
    found = [f"{path.relative_to(PACKAGE)}:{n}" for path in sorted(PACKAGE.rglob("*.py"))
             if path.name != "demo.py"  # the tour runs in a folder it made itself
             for n, line in enumerate(path.read_text().splitlines(), 1) if bare.search(line)]
    assert found == []


@pytest.mark.skipif(sys.version_info < (3, 11), reason="-P came with Python 3.11")
def test_the_merge_driver_and_the_agents_command_leave_the_work_tree_off_sys_path(hostile: tuple[Repo, Path]) -> None:
    repo, _ = hostile
    sg(repo, "init", "--hooks", "git")
    driver = repo.git("config", "merge.shiftgit-ledger.driver").strip()
    assert driver.endswith(" -P -m shiftgit merge-driver %O %A %B %P"), driver


def test_a_publish_path_in_the_committed_config_pushes_nowhere(tmp_path: Path) -> None:
    """`.shift/config.json` is committed: "publish" naming a path (a bare repository the clone ships, with a
    pre-receive hook) must not make git push there and run that hook; only this clone's own remotes count."""
    repo = make_repo(tmp_path / "clone")
    sg(repo, "init", "--hooks", "git")
    bare = repo.path / "vendor" / "cache.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    marker = tmp_path / "pre-receive-ran"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    hook.chmod(0o755)
    config = json.loads(repo.read(".shift/config.json"))
    repo.write(".shift/config.json", json.dumps({**config, "publish": "vendor/cache.git"}))
    assert repo.commit("a clone that publishes into itself").returncode == 0
    sg(repo, "start", "fix", "--goal", "g", "--stop-when", "s")
    sg(repo, "check", "--name", "t", "--", "true")
    repo.write("calc.py", "X = 1\n")
    sg(repo, "checkpoint", "--step", "s")
    sg(repo, "resume", "--no-run")
    assert not marker.exists()
    assert subprocess.run(["git", "-C", str(bare), "for-each-ref"], capture_output=True, text=True).stdout == ""


def test_a_ledger_nested_thousands_deep_is_reported_in_one_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "clone")
    sg(repo, "init", "--hooks", "git")
    sg(repo, "start", "deep", "--goal", "g", "--stop-when", "s")
    repo.ledger_path("deep").write_text('{"schema_version": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    for args in (("status",), ("show", "deep"), ("resume", "--no-run"), ("log",), ("validate",)):
        proc = repo.run([*module_argv("shiftgit"), *args])
        assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr, (args, proc.stderr[-500:])
        assert len(proc.stderr.strip().splitlines()) <= 1, (args, proc.stderr)  # resume: escalates, exit 4
    assert "corrupt JSON" in repo.run([*module_argv("shiftgit"), "show", "deep"]).stderr


DEEP = "[" * 100_000 + "]" * 100_000


def taken_over(tmp_path: Path, craft: Callable[[Repo], None], init: bool = True) -> Repo:
    """A clone of a repository whose run `demo` has a committed checkpoint, after `craft` ran in the original."""
    seed = make_repo(tmp_path / "seed")
    sg(seed, "init", "--hooks", "git")
    assert seed.commit("shiftgit").returncode == 0
    sg(seed, "start", "demo", "--goal", "g", "--stop-when", "s")
    seed.write("calc.py", "X = 2\n")
    sg(seed, "checkpoint", "--step", "s1")
    assert seed.commit("step 1").returncode == 0
    craft(seed)
    seed.git("add", "-A")
    seed.run(["git", "commit", "-q", "--no-verify", "-m", "crafted"])
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.path), str(origin)], check=True)
    seed.git("push", "-q", str(origin), "refs/notes/*:refs/notes/*", "refs/shift/*:refs/shift/*")
    subprocess.run(["git", "clone", "-q", str(origin), str(tmp_path / "clone")], check=True)
    clone = Repo(tmp_path / "clone")
    if init:
        sg(clone, "init", "--hooks", "git")
    return clone


def one_line_or_none(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    proc = repo.run([*module_argv("shiftgit"), *args])
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) <= 1, (args, proc.stderr[-800:])
    return proc


def test_json_nested_thousands_deep_in_a_clones_memory_or_notes_is_one_line(tmp_path: Path) -> None:
    def craft(seed: Repo) -> None:
        seed.write(".shift/memory.json", '{"entries": ' + DEEP + "}")
        head = seed.git("rev-parse", "HEAD").strip()
        seed.run(["git", "notes", "--ref=shift-data", "add", "-f", "-F", "-", head], input=f'{{"checkpoints": {DEEP}}}')

    clone = taken_over(tmp_path, craft)
    for args in (("resume", "--no-run"), ("sync",), ("log",), ("status",)):
        one_line_or_none(clone, *args)


def test_a_config_nested_thousands_deep_is_one_line_for_doctor_too(tmp_path: Path) -> None:
    def craft(seed: Repo) -> None:
        config = json.loads(seed.read(".shift/config.json"))
        seed.write(".shift/config.json", json.dumps(config)[:-1] + ', "x": ' + DEEP + "}")

    clone = taken_over(tmp_path, craft, init=False)
    for args in (("doctor",), ("init", "--hooks", "git"), ("status",)):
        one_line_or_none(clone, *args)


def test_a_ledger_the_schema_allows_but_no_record_can_hold_is_one_line(tmp_path: Path) -> None:
    """Every effect record has `created_at`, though the schema does not require it: a hand-made one lacks it."""
    def craft(seed: Repo) -> None:
        sg(seed, "effect", "run", "--key", "e1", "--kind", "deploy", "--reversible", "--", "true")
        document = seed.ledger("demo")
        del document["effects"][0]["created_at"]
        seed.ledger_path("demo").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")

    clone = taken_over(tmp_path, craft)
    for args in (("status",), ("show", "demo"), ("verify",), ("resume", "--no-run")):
        one_line_or_none(clone, *args)
    assert "invalid ledger" in one_line_or_none(clone, "show", "demo").stderr
    proc = clone.run([*module_argv("shiftgit"), "validate", "demo"])  # says so too, not "ok"
    assert proc.returncode == 1 and "created_at" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
