"""Messages that point to the next step, a text briefing that answers every question, progress on stderr."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from conftest import PYTEST, Repo


def clone(repo: Repo, path: Path) -> Repo:
    subprocess.run(["git", "clone", "-q", str(repo.path), str(path)], check=True)
    return Repo(path)


def failing_state(repo: Repo) -> None:
    repo.write("calc.py", repo.read("calc.py").replace("return a - b", "return a + b"))
    assert repo.sg("check", "--name", "unit", "--", *PYTEST).returncode == 1
    repo.ok("checkpoint", "--step", "found the sub bug", "--next", "fix sub()")
    assert repo.commit("found the sub bug").returncode == 0


def test_rollback_prints_a_restore_command_that_brings_the_files_back(run_repo: Repo) -> None:
    run_repo.write("calc.py", run_repo.read("calc.py") + "# checkpointed\n")
    run_repo.ok("checkpoint", "--step", "s")
    edited = run_repo.read("calc.py") + "# HALF-EDIT\n"
    run_repo.write("calc.py", edited)
    run_repo.write("new file.txt", "added after the checkpoint\n")
    proc = run_repo.ok("rollback", "--yes")
    line = next(x for x in proc.stdout.splitlines() if "git restore --source" in x)
    argv = shlex.split(line.split("`")[1])
    assert argv[:3] == ["git", "restore", "--source"] and {"calc.py", "new file.txt"} <= set(argv)
    assert "HALF-EDIT" not in run_repo.read("calc.py")
    run_repo.git(*argv[1:])
    assert run_repo.read("calc.py") == edited and run_repo.read("new file.txt") == "added after the checkpoint\n"
    run_repo.write("calc.py", run_repo.read("calc.py") + "# again\n")
    report = json.loads(run_repo.sg("rollback", "--yes", "--json").stdout)
    assert report["undo"].startswith(f"git restore --source {report['rescue']} -- ")


def test_init_in_a_clone_says_shift_is_already_committed(run_repo: Repo, tmp_path: Path) -> None:
    other = clone(run_repo, tmp_path / "other")
    assert "kept .shift/ (already committed)" in other.ok("init").stdout
    (other.path / ".shift" / "config.json").write_text(json.dumps({"schema_version": 1, "trailers": False}))
    assert "kept .shift/ (commit it)" in other.ok("init").stdout


def test_log_and_status_in_a_clone_without_fetched_notes_say_sync(run_repo: Repo, tmp_path: Path) -> None:
    failing_state(run_repo)
    other = clone(run_repo, tmp_path / "other")
    for command in ("log", "status"):
        proc = other.sg(command)
        assert proc.returncode == 0 and "run `shiftgit sync`" in proc.stdout + proc.stderr
    assert json.loads(other.sg("status", "--json").stdout)["hint"].endswith("run `shiftgit sync`")
    other.ok("init")
    other.ok("sync")
    for command in ("log", "status"):
        proc = other.sg(command)
        assert "shiftgit sync" not in proc.stdout + proc.stderr
    assert "found the sub bug" in other.sg("log").stdout
    assert "shiftgit sync" not in run_repo.sg("status").stdout  # no remote: nothing to fetch


def test_the_text_briefing_answers_every_question(run_repo: Repo) -> None:
    run_repo.write("docs/notes.txt", "design\n")
    run_repo.ok("checkpoint", "--step", "notes")
    assert run_repo.commit("design notes").returncode == 0
    carried = run_repo.head()
    run_repo.ok("effect", "record", "--key", "migrate-1", "--kind", "db_migration", "--state", "completed")
    failing_state(run_repo)
    run_repo.write("scratch.txt", "after the checkpoint\n")
    proc = run_repo.sg("resume", "--no-run")
    text = proc.stdout
    assert proc.returncode == 3 and "Decision: rollback. Reasons: uncommitted edits" in text
    assert f"docs/notes.txt (added), committed in {carried[:10]}" in text
    assert "calc.py (modified), committed in" in text
    assert "scratch.txt (added), uncommitted, edited after the last checkpoint" in text
    assert "migrate-1 (db_migration): completed, irreversible, safe to repeat: no" in text
    assert "Failing checks:\n- unit [failed]: exit 1; failing: tests/test_calc.py::test_sub" in text
    assert "Record:\n- used: checkpoint #2 in the ledger committed at HEAD (at " in text


def test_many_changed_files_are_capped_with_a_count(run_repo: Repo) -> None:
    for i in range(30):
        run_repo.write(f"pkg/m{i:02}.py", f"x = {i}\n")
    run_repo.ok("checkpoint", "--step", "thirty files")
    briefing = json.loads(run_repo.sg("resume", "--no-run", "--json").stdout)["briefing"]
    assert "pkg/m00.py (added), uncommitted" in briefing
    assert "(+10 more not shown; `shiftgit resume demo --json` lists them under changes)" in briefing


def test_verify_and_resume_show_each_check_on_stderr_and_keep_json_clean(run_repo: Repo) -> None:
    failing_state(run_repo)
    for command in ("verify", "resume"):
        proc = run_repo.sg(command, "--json")
        assert json.loads(proc.stdout)["run"] == "demo"
        assert "[1/1] running unit:" in proc.stderr and "[1/1] unit: exit 1 in " in proc.stderr
        assert "test_sub" not in proc.stderr  # the check's own output only with -v
    proc = run_repo.sg("verify", "-v", "--json")
    assert json.loads(proc.stdout)["result"] == "reproduced"
    assert "1 failed, 1 passed" in proc.stderr and "FAILED tests/test_calc.py::test_sub" in proc.stderr
