"""A checkpoint reads HEAD and its branch from the git dir's files (else in one git process), and writes without
jsonschema, as strictly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import Repo, make_repo


def started(repo: Repo) -> Repo:
    repo.ok("init", "--hooks", "none")
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    return repo


def git_commands(repo: Repo, tmp_path: Path, *args: str) -> list[str]:
    trace = tmp_path / "trace.json"
    trace.unlink(missing_ok=True)
    repo.ok(*args, env={"GIT_TRACE2_EVENT": str(trace)})
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    return [" ".join(e["argv"][1:]) for e in events if e["event"] == "start"]


def test_the_branch_and_base_are_as_git_says_on_a_branch_and_detached(repo: Repo, tmp_path: Path) -> None:
    started(repo)
    commands = git_commands(repo, tmp_path, "checkpoint", "--step", "on main")
    point = repo.ledger("demo")["checkpoint"]
    assert point["branch"] == "main" and point["base"] == repo.head()
    assert not any(c.startswith(("symbolic-ref", "rev-parse HEAD")) for c in commands), commands
    repo.git("checkout", "-q", "--detach")
    repo.ok("checkpoint", "--step", "detached")
    point = repo.ledger("demo")["checkpoint"]
    assert point["branch"] is None and point["base"] == repo.head()
    repo.git("checkout", "-q", "main")
    repo.git("tag", "main")  # git spells the branch `heads/main` now: asked of git, as it was
    repo.ok("checkpoint", "--step", "shadowed")
    point = repo.ledger("demo")["checkpoint"]
    assert point["branch"] == "heads/main" and point["base"] == repo.head()


def test_a_repository_without_a_commit_checkpoints_with_no_base(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "fresh")
    repo.path.mkdir()
    repo.git("init", "-q", "-b", "trunk")
    started(repo)
    repo.write("a.txt", "a\n")
    repo.ok("checkpoint", "--step", "first")
    point = repo.ledger("demo")["checkpoint"]
    assert point["base"] is None and point["branch"] == "trunk"
    assert [f["path"] for f in point["files"]] == ["a.txt"]


def test_a_checkpoint_of_many_files_is_written_valid_without_importing_jsonschema(tmp_path: Path) -> None:
    repo = started(make_repo(tmp_path / "many"))
    for n in range(300):
        repo.write(f"src/f{n}.py", f"X = {n}\n")
    code = ("import sys; from shiftgit.__main__ import main; main(['checkpoint', '--step', 'many']); "
            "print('jsonschema' in sys.modules, file=sys.stderr)")
    proc = repo.run([sys.executable, "-c", code])
    assert proc.stderr.strip().endswith("False"), proc.stderr
    assert len(repo.ledger("demo")["checkpoint"]["files"]) == 300
    import jsonschema

    from shiftgit.ledger.schema import schema_text

    validator = jsonschema.Draft202012Validator(json.loads(schema_text()))
    assert not list(validator.iter_errors(repo.ledger("demo")))
