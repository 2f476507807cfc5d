"""rollback: restore the last checkpoint's files, keep everything it replaces under a rescue ref."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import CALC, Repo
from verify_helpers import BROKEN_SUB, clone, record_failing

from shiftgit.git.record import is_safe_path
from shiftgit.ledger.store import Store
from shiftgit.recovery.freshness import assess


def _rescue_refs(repo: Repo) -> list[str]:
    return repo.git("for-each-ref", "--format=%(refname)", "refs/shift/rescue/").split()


def test_rollback_restores_and_rescues_everything_it_replaces(run_repo: Repo) -> None:
    record_failing(run_repo)
    head, index = run_repo.head(), (run_repo.path / ".git" / "index").read_bytes()
    run_repo.write("calc.py", BROKEN_SUB + "\n# HALF-EDIT-1\n")
    run_repo.write("notes/scratch.txt", "SCRATCH-2\n")
    os.remove(run_repo.path / "conftest.py")
    run_repo.write("__pycache__/junk.pyc", "ignored\n")
    run_repo.ok("constraint", "add", "recorded after the checkpoint")
    ledger = run_repo.ledger_path("demo").read_bytes()

    proc = run_repo.sg("rollback", "--yes", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert sorted(report["restore"]) == ["calc.py", "conftest.py"] and report["remove"] == ["notes/scratch.txt"]

    assert run_repo.read("calc.py") == BROKEN_SUB and run_repo.read("conftest.py") == ""
    assert not (run_repo.path / "notes").exists()
    assert run_repo.read("__pycache__/junk.pyc") == "ignored\n"  # ignored files are not the run's to touch
    assert run_repo.head() == head and (run_repo.path / ".git" / "index").read_bytes() == index
    assert run_repo.ledger_path("demo").read_bytes() == ledger  # .shift/ stays, with what was recorded since

    [ref] = _rescue_refs(run_repo)
    assert ref == report["rescue"] and ref.startswith("refs/shift/rescue/demo/")
    assert run_repo.git("show", f"{ref}:calc.py").endswith("# HALF-EDIT-1\n")
    assert run_repo.git("show", f"{ref}:notes/scratch.txt") == "SCRATCH-2\n"
    assert "conftest.py" not in run_repo.git("ls-tree", "-r", "--name-only", ref).split()
    stat = run_repo.git("show", "--stat", "--format=", ref)  # parent: the snapshot, so the diff is the loss
    assert "calc.py" in stat and "notes/scratch.txt" in stat and ".shift" not in stat
    assert run_repo.json("resume", "--no-run")["decision"] == "resume"


def test_modes_symlinks_and_file_directory_swaps_come_back(run_repo: Repo) -> None:
    run_repo.write("bin/tool", "#!/bin/sh\necho hi\n")
    os.chmod(run_repo.path / "bin" / "tool", 0o755)
    os.symlink("calc.py", run_repo.path / "link")
    run_repo.write("thing/inner.txt", "inner\n")
    run_repo.ok("checkpoint", "--step", "layout")
    os.chmod(run_repo.path / "bin" / "tool", 0o644)
    os.remove(run_repo.path / "link")
    run_repo.write("link", "now a file\n")
    (run_repo.path / "thing" / "inner.txt").unlink()
    (run_repo.path / "thing").rmdir()
    run_repo.write("thing", "a file where a directory was\n")
    run_repo.ok("rollback", "--yes")
    assert os.access(run_repo.path / "bin" / "tool", os.X_OK)
    assert os.readlink(run_repo.path / "link") == "calc.py"
    assert run_repo.read("thing/inner.txt") == "inner\n"
    [ref] = _rescue_refs(run_repo)
    assert run_repo.git("show", f"{ref}:thing") == "a file where a directory was\n"


def test_without_a_terminal_it_asks_for_yes_and_changes_nothing(run_repo: Repo) -> None:
    record_failing(run_repo)
    run_repo.write("calc.py", CALC)
    proc = run_repo.sg("rollback")
    assert proc.returncode == 2
    assert "--yes" in proc.stderr and "Traceback" not in proc.stderr
    assert run_repo.read("calc.py") == CALC and _rescue_refs(run_repo) == []


def test_nothing_to_roll_back_makes_no_rescue(run_repo: Repo) -> None:
    record_failing(run_repo)
    proc = run_repo.ok("rollback", "--yes")
    assert "nothing to roll back" in proc.stdout and _rescue_refs(run_repo) == []


def test_each_rollback_keeps_its_own_rescue(run_repo: Repo) -> None:
    record_failing(run_repo)
    for n in range(2):
        run_repo.write("calc.py", f"# attempt {n}\n")
        run_repo.ok("rollback", "--yes")
    refs = _rescue_refs(run_repo)
    assert len(refs) == 2
    assert sorted(run_repo.git("show", f"{r}:calc.py") for r in refs) == ["# attempt 0\n", "# attempt 1\n"]


def test_a_run_without_a_checkpoint_cannot_roll_back(run_repo: Repo) -> None:
    proc = run_repo.sg("rollback", "--yes")
    assert proc.returncode == 2 and "no checkpoint" in proc.stderr


def test_a_fresh_clone_rolls_back_a_committed_checkpoint_without_the_snapshot_ref(run_repo: Repo,
                                                                                   tmp_path: Path) -> None:
    record_failing(run_repo)
    other = clone(run_repo, tmp_path / "elsewhere")
    assert other.git("for-each-ref", "refs/shift/") == ""
    other.write("calc.py", "# broken in the clone\n")
    other.ok("rollback", "--yes")
    assert other.read("calc.py") == BROKEN_SUB
    [ref] = _rescue_refs(other)
    assert other.git("show", f"{ref}:calc.py") == "# broken in the clone\n"


def test_paths_that_would_leave_the_work_tree_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "escape")
    assert is_safe_path(root, "sub/file.txt") and is_safe_path(root, "escape")
    for bad in ("../x", "sub/../../x", "/etc/passwd", ".git/config", "sub/.GIT/hooks/x", "", "a//b",
                "escape/file"):
        assert not is_safe_path(root, bad), bad


def _rebased_onto_an_upstream_file(run_repo: Repo) -> None:
    """The run's checkpoint (calc.py committed with it, scratch.txt recorded but left uncommitted), then a clean
    `git rebase` onto an upstream that committed a new file: the checkpoint's base is no longer an ancestor."""
    run_repo.git("branch", "upstream", "HEAD~2")
    run_repo.write("calc.py", BROKEN_SUB)
    run_repo.write("scratch.txt", "the run's own, recorded, never committed\n")
    run_repo.ok("checkpoint", "--step", "broke sub", "--next", "fix it")
    run_repo.git("add", "calc.py", ".shift")
    assert run_repo.run(["git", "commit", "-q", "-m", "broke sub"]).returncode == 0
    run_repo.git("checkout", "-q", "upstream")
    run_repo.write("upstream.txt", "committed upstream\n")
    run_repo.git("add", "upstream.txt")
    run_repo.git("commit", "-q", "-m", "upstream adds a file")
    run_repo.git("checkout", "-q", "main")
    run_repo.git("rebase", "-q", "upstream")
    assert run_repo.git("merge-base", "--is-ancestor", "upstream", "HEAD", check=False) == ""


def test_after_a_rebase_an_upstream_file_is_committed_not_an_edit_and_rollback_keeps_it(run_repo: Repo) -> None:
    _rebased_onto_an_upstream_file(run_repo)
    report = run_repo.json("resume", "--no-run", codes=(4,))
    assert report["changes"]["after_checkpoint"] == [] and report["changes"]["uncommitted"] == [
        {"path": "scratch.txt", "status": "A", "checkpoint_covers": True}]
    assert not any("upstream.txt" in r for r in report["reasons"]), report["reasons"]
    assert any("HEAD moved" in r and "rebase, amend or reset rewrote it" in r  # still for a person to judge
               and "without a handoff" not in r for r in report["reasons"]), report["reasons"]
    fresh = assess(Store.open(run_repo.path), "demo")  # what the agent hooks say at the end of a turn
    assert fresh.head_moved and fresh.files == ()
    assert run_repo.json("rollback", "--yes")["remove"] == [] and _rescue_refs(run_repo) == []
    assert run_repo.read("upstream.txt") == "committed upstream\n"
    assert run_repo.read("scratch.txt").startswith("the run's own")

    run_repo.write("calc.py", "# a real edit after the rebase\n")
    run_repo.write("upstream.txt", "edited too\n")
    report = run_repo.json("resume", "--no-run", codes=(4,))
    assert report["changes"]["after_checkpoint"] == ["calc.py", "upstream.txt"]
    rolled = run_repo.json("rollback", "--yes")
    assert sorted(rolled["restore"]) == ["calc.py", "upstream.txt"] and rolled["remove"] == []
    assert run_repo.read("calc.py") == BROKEN_SUB and run_repo.read("upstream.txt") == "committed upstream\n"
    assert run_repo.git("show", f"{rolled['rescue']}:calc.py") == "# a real edit after the rebase\n"
