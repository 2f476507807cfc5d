"""While no run is active, `init --hooks git` leaves out the commit-msg and post-commit hooks (each a process git
starts at every commit, that idle only exits): whatever needs them installs them before git looks for them, and
nothing the full set of hooks caught or recorded is lost. Real git, real hooks; git says which hooks ran (trace2).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import CALC, Repo

from shiftgit.git import install

GITHUB = "ghp" + "_" + "Zq7Xw2Lm9Pk4Rt6Yb1" + "Nc8Vd3Hs5Jf0Ga7Ue2"  # a token's format, built here: no file holds it
RUN_HOOKS = ("commit-msg", "post-commit")


def hooks_dir(repo: Repo) -> Path:
    return repo.path / repo.git("rev-parse", "--git-path", "hooks").strip()


def commit(repo: Repo, message: str, tmp_path: Path, env: dict[str, str] | None = None,
           *options: str) -> tuple[int, str, list[str]]:
    """`git add -A && git commit`: its exit code, stderr and the hooks git ran (trace2 events)."""
    trace = tmp_path / "trace.json"
    trace.unlink(missing_ok=True)
    repo.git("add", "-A")
    traced = {**(env or {}), "GIT_TRACE2_EVENT": str(trace)}
    proc = repo.run(["git", "commit", "-q", "-m", message, *options], env=traced)
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    ran = [e["argv"][0].rsplit("/", 1)[-1] for e in events
           if e.get("event") == "child_start" and e.get("child_class") == "hook"]
    return proc.returncode, proc.stderr, ran


def data_note(repo: Repo) -> dict[str, object] | None:
    proc = repo.run(["git", "notes", "--ref=shift-data", "show", "HEAD"])
    return json.loads(proc.stdout) if proc.returncode == 0 else None


@pytest.fixture
def idle(repo: Repo) -> Repo:
    repo.ok("init", "--hooks", "git")
    assert repo.commit("set up shiftgit").returncode == 0
    return repo


@pytest.fixture
def pulled(repo: Repo) -> Repo:
    """A run's ledger committed, no run active here and the hooks as `init` leaves them then: a clone that pulled
    another's work, or a repository whose run finished before this shiftgit."""
    repo.ok("init", "--hooks", "git")
    repo.ok("start", "demo", "--goal", "make calc correct", "--stop-when", "tests pass")
    assert repo.commit("start demo").returncode == 0
    repo.ok("stop", "--reason", "user_paused")
    assert repo.commit("paused").returncode == 0
    Path(repo.git("rev-parse", "--absolute-git-dir").strip(), "shift", "active").unlink()
    for hook in RUN_HOOKS:
        (hooks_dir(repo) / hook).unlink()
    repo.ok("init", "--hooks", "git")
    assert not any((hooks_dir(repo) / hook).exists() for hook in RUN_HOOKS)
    return repo


def test_an_idle_commit_runs_the_pre_commit_hook_alone(idle: Repo, tmp_path: Path) -> None:
    assert [hook for hook in os.listdir(hooks_dir(idle)) if not hook.endswith(".sample")] != []
    assert not any((hooks_dir(idle) / hook).exists() for hook in RUN_HOOKS)
    idle.write("calc.py", CALC + "# idle\n")
    code, err, ran = commit(idle, "idle", tmp_path)
    assert (code, err, ran) == (0, "", ["pre-commit"])
    assert data_note(idle) is None
    shift = idle.path / ".git" / "shift"
    assert shift.is_dir() and not (shift / "no-ledger").exists()  # no post-commit hook to tell: nothing written


def test_a_start_installs_them_and_the_runs_commits_are_trailered_and_noted(idle: Repo, tmp_path: Path) -> None:
    idle.ok("start", "demo", "--goal", "make calc correct", "--stop-when", "tests pass")
    folder = hooks_dir(idle)
    for hook in RUN_HOOKS:
        text = (folder / hook).read_text()
        assert os.access(folder / hook, os.X_OK) and f"hook={hook}\n" in text
        assert text == install.shim(hook, sys.executable)  # what `init` writes with a run active
    assert commit(idle, "start demo", tmp_path)[::2] == (0, ["pre-commit", "commit-msg", "post-commit"])
    idle.write("calc.py", CALC + "# step\n")
    idle.ok("checkpoint", "--step", "a step")
    code, err, ran = commit(idle, "a step", tmp_path)
    assert (code, ran) == (0, ["pre-commit", "commit-msg", "post-commit"]), err
    assert "Shift-Run: demo" in idle.git("log", "-1", "--format=%B")
    assert data_note(idle) is not None


def test_resume_installs_them(pulled: Repo, tmp_path: Path) -> None:
    pulled.sg("resume", "demo")  # its exit code says how the run stands; the run is active here again
    assert all((hooks_dir(pulled) / hook).is_file() for hook in RUN_HOOKS)
    pulled.write("calc.py", CALC + "# resumed\n")
    pulled.ok("checkpoint", "--step", "resumed")
    code, err, ran = commit(pulled, "resumed", tmp_path)
    assert (code, ran) == (0, ["pre-commit", "commit-msg", "post-commit"]), err
    assert "Shift-Run: demo" in pulled.git("log", "-1", "--format=%B") and data_note(pulled) is not None


def test_a_run_named_by_shift_run_alone_gets_them_in_its_first_commit(pulled: Repo, tmp_path: Path) -> None:
    env = {"SHIFT_RUN": "demo"}
    pulled.write("calc.py", CALC + "# named\n")
    pulled.ok("checkpoint", "--step", "named", env=env)
    code, err, ran = commit(pulled, "named", tmp_path, env)
    assert (code, ran) == (0, ["pre-commit", "commit-msg", "post-commit"]), err
    assert "Shift-Run: demo" in pulled.git("log", "-1", "--format=%B")
    assert data_note(pulled) is not None
    pulled.write("calc.py", CALC + "# unrecorded\n")  # the gate judges as before
    code, err, _ = commit(pulled, "unrecorded", tmp_path, env)
    assert code == 1 and "commit refused" in err


def test_shift_skip_on_an_idle_commit_is_noted(idle: Repo, tmp_path: Path) -> None:
    idle.write("calc.py", CALC + "# skipped\n")
    code, err, ran = commit(idle, "skipped", tmp_path, {"SHIFT_SKIP": "hotfix at 3am"})
    assert (code, ran) == (0, ["pre-commit", "commit-msg", "post-commit"]), err
    assert err.count("commit gate skipped (SHIFT_SKIP): hotfix at 3am") == 1 and "Traceback" not in err
    assert (data_note(idle) or {}).get("skip") == "hotfix at 3am"


def _ledger_with(repo: Repo, owner: str) -> None:
    document = repo.ledger("demo")
    document["contract"]["owner"] = owner
    repo.ledger_path("demo").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def test_a_staged_ledger_is_noted_and_still_scanned(pulled: Repo, tmp_path: Path) -> None:
    _ledger_with(pulled, "dana")
    code, err, ran = commit(pulled, "an owner", tmp_path)
    assert (code, ran) == (0, ["pre-commit", "commit-msg", "post-commit"]), err  # added by this commit's pre-commit
    assert data_note(pulled) is not None
    _ledger_with(pulled, GITHUB)
    code, err, ran = commit(pulled, "a token in a ledger", tmp_path)
    assert code == 1 and "holds what looks like a secret" in err and "github-token" in err, err
    assert ran == ["pre-commit"]
    for how in (["-a"], ["--", ".shift"]):  # the index git hands the hook: a lock file
        code, err, _ = commit(pulled, "again", tmp_path, None, *how)
        assert code == 1 and "github-token" in err, (how, err)
    assert GITHUB not in pulled.git("log", "-p", "--all")


def test_a_hook_of_the_users_is_left_alone_until_a_run_needs_the_slot(repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    folder = hooks_dir(repo)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "commit-msg").write_text(f'#!/bin/sh\necho "commit-msg" >> {log}\n')
    (folder / "commit-msg").chmod(0o755)
    repo.ok("init", "--hooks", "git")
    assert "commit-msg" in (folder / "commit-msg").read_text() and not (folder / "commit-msg.pre-shiftgit").exists()
    assert commit(repo, "set up", tmp_path)[::2] == (0, ["pre-commit", "commit-msg"])
    assert log.read_text() == "commit-msg\n"
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    assert (folder / "commit-msg.pre-shiftgit").is_file()
    assert commit(repo, "start demo", tmp_path)[::2] == (0, ["pre-commit", "commit-msg", "post-commit"])
    repo.write("calc.py", CALC + "# step\n")
    repo.ok("checkpoint", "--step", "a step")
    code, err, ran = commit(repo, "a step", tmp_path)
    assert (code, ran) == (0, ["pre-commit", "commit-msg", "post-commit"]), err
    assert log.read_text() == "commit-msg\n" * 3 and "Shift-Run: demo" in repo.git("log", "-1", "--format=%B")


def test_a_start_in_a_linked_worktree_installs_them_for_every_worktree(idle: Repo, tmp_path: Path) -> None:
    idle.git("worktree", "add", "-q", str(tmp_path / "side"), "-b", "side")
    side = Repo(tmp_path / "side")
    side.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    assert all((hooks_dir(idle) / hook).is_file() for hook in RUN_HOOKS)
    assert commit(side, "start demo", tmp_path)[::2] == (0, ["pre-commit", "commit-msg", "post-commit"])
    side.write("calc.py", CALC + "# side\n")
    side.ok("checkpoint", "--step", "a step")
    code, err, ran = commit(side, "a step", tmp_path)
    assert (code, ran) == (0, ["pre-commit", "commit-msg", "post-commit"]), err
    assert "Shift-Run: demo" in side.git("log", "-1", "--format=%B")
    idle.write("calc.py", CALC + "# main\n")  # the main worktree has no run: its commit passes, untouched
    code, err, ran = commit(idle, "main", tmp_path)
    assert (code, err) == (0, "") and "Shift-Run" not in idle.git("log", "-1", "--format=%B")


def test_hooks_in_the_work_tree_are_all_installed_at_once(repo: Repo) -> None:
    repo.git("config", "core.hooksPath", ".githooks")  # committed hooks: a start must not add files to commit
    repo.ok("init", "--hooks", "git")
    assert all((repo.path / ".githooks" / hook).is_file() for hook in RUN_HOOKS)


def _clone(origin: Repo, tmp_path: Path, name: str) -> Repo:
    origin.git("clone", "-q", str(origin.path), str(tmp_path / name))
    return Repo(tmp_path / name)


def _no_verify(repo: Repo, message: str) -> str | None:
    """`git add -A && git commit --no-verify` (no pre-commit shim to add the hooks): the note it got, if any."""
    repo.git("add", "-A")
    repo.git("commit", "-q", "--no-verify", "-m", message)
    proc = repo.run(["git", "notes", "--ref=shift", "show", "HEAD"])
    return proc.stdout if proc.returncode == 0 else None


def test_init_in_a_clone_whose_ledger_says_a_run_is_active_installs_every_hook(idle: Repo, tmp_path: Path) -> None:
    idle.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    assert idle.commit("start demo").returncode == 0
    clone = _clone(idle, tmp_path, "clone")
    clone.ok("init", "--hooks", "git")  # no active-run pointer in a fresh clone, but the committed ledger says active
    assert all(install.is_ours(hooks_dir(clone) / hook) for hook in RUN_HOOKS)
    clone.write("calc.py", CALC + "# clone\n")
    clone.ok("checkpoint", "--step", "in the clone")  # the run found by discovery, from the ledger's status
    assert "demo #1" in (_no_verify(clone, "clone step") or "")


def test_a_checkpoint_installs_them_for_a_commit_that_skips_the_pre_commit_hook(idle: Repo, tmp_path: Path) -> None:
    clone = _clone(idle, tmp_path, "clone")
    clone.ok("init", "--hooks", "git")  # no run anywhere yet: idle
    assert not any(os.path.lexists(hooks_dir(clone) / hook) for hook in RUN_HOOKS)
    idle.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    assert idle.commit("start demo").returncode == 0
    clone.git("pull", "-q", "--no-rebase")  # brings a ledger that says active: no hook of ours adds them
    clone.write("calc.py", CALC + "# clone\n")
    clone.ok("checkpoint", "--step", "in the clone")
    assert all(install.is_ours(hooks_dir(clone) / hook) for hook in RUN_HOOKS)
    assert "demo #1" in (_no_verify(clone, "clone step") or "")


def _taken_slot(repo: Repo, hook: str = "commit-msg") -> Path:
    """A hook of someone else's where ours would go, its `.pre-shiftgit` slot taken too (a tool rewrote the hook
    after an earlier `init` had moved the first one aside)."""
    folder = hooks_dir(repo)
    folder.mkdir(parents=True, exist_ok=True)
    for name in (hook, hook + ".pre-shiftgit"):
        (folder / name).write_text("#!/bin/sh\nexit 0\n")
        (folder / name).chmod(0o755)
    return folder


def test_an_idle_init_refuses_a_run_hook_it_could_not_install_later(repo: Repo) -> None:
    folder = _taken_slot(repo)
    proc = repo.sg("init", "--hooks", "git")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "commit-msg.pre-shiftgit exists too" in proc.stderr
    assert "shiftgit init --hooks git" in proc.stderr
    assert not (repo.path / ".shift").exists() and not (folder / "pre-commit").exists()  # nothing written


def test_start_and_resume_say_when_a_run_hook_cannot_be_installed(idle: Repo, tmp_path: Path) -> None:
    folder = _taken_slot(idle)
    proc = idle.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    problems = [line for line in proc.stderr.splitlines() if "could not add the commit-msg hook" in line]
    assert len(problems) == 1 and "merge them into commit-msg.pre-shiftgit" in problems[0], proc.stderr
    assert install.is_ours(folder / "post-commit")  # each hook on its own: the other one is there
    assert idle.commit("start demo").returncode == 0
    idle.write("calc.py", CALC + "# step\n")
    idle.ok("checkpoint", "--step", "a step")
    code, err, _ = commit(idle, "a step", tmp_path)
    assert code == 0 and data_note(idle) is not None, err
    idle.ok("stop", "--reason", "user_paused")
    proc = idle.sg("resume", "demo", "--no-run")
    assert proc.stderr.count("could not add the commit-msg hook") == 1, proc.stderr


def test_hooks_outside_the_git_dir_and_the_work_tree_are_found_where_init_put_them(repo: Repo, tmp_path: Path) -> None:
    shared = tmp_path / "shared-hooks"
    repo.git("config", "core.hooksPath", str(shared))
    repo.ok("init", "--hooks", "git")
    assert (shared / "pre-commit").is_file() and not any((shared / hook).exists() for hook in RUN_HOOKS)
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")  # found without asking git where they are
    assert all(install.is_ours(shared / hook) for hook in RUN_HOOKS)
    assert not any((repo.path / ".git" / "hooks" / hook).exists() for hook in RUN_HOOKS)


def test_a_pull_that_brings_an_active_ledger_installs_them_for_a_cherry_pick(idle: Repo, tmp_path: Path) -> None:
    clone = _clone(idle, tmp_path, "clone")
    clone.ok("init", "--hooks", "git")  # no run anywhere yet: idle
    idle.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    assert idle.commit("start demo").returncode == 0
    clone.git("pull", "-q", "--no-rebase")  # the post-merge hook sees the ledger say active
    assert all(install.is_ours(hooks_dir(clone) / hook) for hook in RUN_HOOKS)
    idle.git("checkout", "-q", "-b", "side")
    idle.write("calc.py", CALC + "# side\n")
    idle.ok("checkpoint", "--step", "on side")
    assert idle.commit("side step").returncode == 0
    clone.git("fetch", "-q", "origin")
    clone.git("cherry-pick", "origin/side")  # no pre-commit hook, no checkpoint here
    proc = clone.run(["git", "notes", "--ref=shift", "show", "HEAD"])
    assert proc.returncode == 0 and "demo #1" in proc.stdout, proc.stderr
