"""Git hooks: installation and chaining, handoff notes, trailers, rewrite survival, the pre-commit framework."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Repo

from shiftgit.git import handoff

HOOKS = ("pre-commit", "commit-msg", "post-commit", "post-rewrite", "post-merge", "pre-push")
LEDGER = ".shift/runs/demo/ledger.json"
BROKEN = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"
TOKEN = "ghp_" + "Q7fK2xLm9Pz4Rt8Wv1Ny6Bc3Hd5Js0Ga2Ek7"


def hooks_dir(repo: Repo) -> Path:
    return repo.path / repo.git("rev-parse", "--git-path", "hooks").strip()


def note(repo: Repo, rev: str = "HEAD") -> str | None:
    proc = repo.run(["git", "notes", "--ref=shift", "show", rev])
    return proc.stdout if proc.returncode == 0 else None


def note_json(repo: Repo, rev: str = "HEAD") -> dict[str, Any]:
    """The machine record of a commit (refs/notes/shift-data), written with its human note."""
    assert note(repo, rev) is not None, f"no note on {rev}"
    proc = repo.run(["git", "notes", "--ref=shift-data", "show", rev])
    assert proc.returncode == 0, f"no record on {rev}"
    return json.loads(proc.stdout)


def step(repo: Repo, name: str, content: str | None = None, **env: str) -> str:
    """An edit, a checkpoint and a commit; returns the commit id."""
    repo.write("calc.py", content if content is not None else repo.read("calc.py") + f"# {name}\n")
    repo.ok("checkpoint", "--step", name, "--next", f"after {name}")
    proc = repo.commit(name, env=env or None)
    assert proc.returncode == 0, proc.stderr
    return repo.head()


# -- installation -----------------------------------------------------------------------------------

def test_init_installs_executable_shims_where_git_looks_and_is_idempotent(repo: Repo) -> None:
    repo.ok("init", "--hooks", "git")
    folder = hooks_dir(repo)
    assert not (folder / "commit-msg").exists() and not (folder / "post-commit").exists()  # no run: later
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    shims = {name: (folder / name).read_bytes() for name in HOOKS}
    for name, text in shims.items():
        assert os.access(folder / name, os.X_OK)
        assert sys.executable.encode() in text and f"hook={name}".encode() in text
    repo.ok("init", "--hooks", "git")
    assert {name: (folder / name).read_bytes() for name in HOOKS} == shims
    assert not list(folder.glob("*.pre-shiftgit"))
    assert repo.git("config", "--get", "notes.rewriteMode").strip() == "ignore"


def test_core_hooks_path_is_respected(repo: Repo) -> None:
    repo.git("config", "core.hooksPath", "custom-hooks")
    repo.ok("init", "--hooks", "git")
    assert (repo.path / "custom-hooks" / "pre-commit").is_file()
    assert not (repo.path / ".git" / "hooks" / "pre-commit").exists()
    assert repo.commit("init").returncode == 0
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    assert repo.commit("start").returncode == 0
    repo.write("calc.py", BROKEN)
    assert repo.commit("no checkpoint").returncode == 1


def test_an_existing_hook_is_kept_chained_and_its_failure_counts(repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    folder = hooks_dir(repo)
    for name in ("pre-commit", "commit-msg", "post-rewrite"):
        (folder / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n'
                                   f'[ "{name}" = post-rewrite ] && cat >> {log}\n'
                                   f'[ -e {tmp_path}/fail ] && exit 3\nexit 0\n')
        (folder / name).chmod(0o755)
    repo.ok("init", "--hooks", "git")
    repo.ok("init", "--hooks", "git")  # idempotent: never moves our own shim over the kept hook
    assert (folder / "pre-commit.pre-shiftgit").read_text().startswith("#!/bin/sh\necho")
    assert repo.commit("init").returncode == 0
    calls = log.read_text()
    assert "pre-commit \n" in calls and "commit-msg .git/COMMIT_EDITMSG" in calls
    (tmp_path / "fail").touch()
    repo.write("README.md", "# x\n")
    assert repo.commit("their hook fails").returncode != 0
    (tmp_path / "fail").unlink()
    assert repo.commit("their hook passes").returncode == 0
    # post-rewrite: both hooks get git's "OLD NEW" lines (ours removes a note the amended commit no longer earns)
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    assert repo.commit("start").returncode == 0
    step(repo, "one", BROKEN)
    old = repo.head()
    assert note(repo) is not None
    repo.git("checkout", "HEAD~1", "--", LEDGER)
    repo.git("add", "-A")
    assert repo.run(["git", "commit", "-q", "--amend", "--no-edit", "--no-verify"]).returncode == 0
    assert f"{old} {repo.head()}" in log.read_text()
    assert note(repo) is None


def test_hooks_run_the_recorded_interpreter_without_python_or_shiftgit_on_path(run_repo: Repo) -> None:
    run_repo.write("calc.py", BROKEN)
    run_repo.ok("checkpoint", "--step", "bare path")
    run_repo.git("add", "-A")
    proc = run_repo.run(["git", "commit", "-q", "-m", "bare PATH"], env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "bare path" in (note(run_repo) or "")


def test_idle_hooks_never_start_python(run_repo: Repo) -> None:
    for name in HOOKS:
        shim = hooks_dir(run_repo) / name
        shim.write_text(shim.read_text().replace(sys.executable, "/nonexistent/python"))
    env = {"PATH": "/usr/bin:/bin"}
    run_repo.write("calc.py", BROKEN)
    run_repo.git("add", "-A")
    proc = run_repo.run(["git", "commit", "-q", "-m", "gate needs python"], env=env)
    assert proc.returncode == 1 and "/nonexistent/python is gone" in proc.stderr
    run_repo.ok("finish", "--status", "abandoned")  # no active run any more
    run_repo.git("add", "-A")
    proc = run_repo.run(["git", "commit", "-q", "-m", "no run, ledger changed"], env=env)
    assert proc.returncode == 1 and "is gone" in proc.stderr  # a staged ledger is scanned for secrets, run or not
    proc = run_repo.run(["git", "commit", "-q", "--no-verify", "-m", "no run, ledger changed"], env=env)
    assert proc.returncode == 0 and "is gone" in proc.stderr  # post-commit would write a note: it says so
    run_repo.write("README.md", "# idle\n")
    run_repo.git("add", "-A")
    proc = run_repo.run(["git", "commit", "-q", "-m", "idle"], env=env)
    assert proc.returncode == 0 and proc.stderr == ""


def test_pre_commit_framework_config_is_added_idempotently(repo: Repo) -> None:
    repo.ok("init", "--hooks", "pre-commit")
    config = yaml.safe_load((repo.path / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"]: h for r in config["repos"] for h in r["hooks"]}
    assert {h["entry"] for h in hooks.values()} == {f"shiftgit hook {name}" for name in HOOKS}
    assert all(h["always_run"] for h in hooks.values())
    assert hooks["shiftgit-gate"]["stages"] == ["pre-commit"]
    first = (repo.path / ".pre-commit-config.yaml").read_text()
    proc = repo.ok("init", "--hooks", "pre-commit")
    assert (repo.path / ".pre-commit-config.yaml").read_text() == first
    assert "pre-commit install --hook-type pre-commit --hook-type commit-msg" in proc.stdout


def test_pre_commit_framework_config_keeps_the_users_entries(repo: Repo) -> None:
    mine = "repos:\n-   repo: local\n    hooks:\n    -   id: mine\n        name: mine\n        entry: 'true'\n" \
           "        language: system\n"
    (repo.path / ".pre-commit-config.yaml").write_text(mine)
    repo.ok("init", "--hooks", "pre-commit")
    text = (repo.path / ".pre-commit-config.yaml").read_text()
    assert text.startswith(mine)
    ids = [h["id"] for r in yaml.safe_load(text)["repos"] for h in r["hooks"]]
    assert ids[0] == "mine" and "shiftgit-gate" in ids
    odd = mine + "fail_fast: true\n"  # `repos:` is not last: never guess, say what to add
    (repo.path / ".pre-commit-config.yaml").write_text(odd)
    proc = repo.ok("init", "--hooks", "pre-commit")
    assert (repo.path / ".pre-commit-config.yaml").read_text() == odd
    assert "could not add" in proc.stdout and "id: shiftgit-gate" in proc.stdout


@pytest.mark.parametrize("text", ["repos: 7\n", "repos: {a: 1}\n", "- a\n", "repos: [7]\n",
                                  "repos:\n- repo: local\n  hooks: 3\n", "repos: [\n"])
def test_a_pre_commit_config_pre_commit_cannot_read_is_one_line_and_nothing_is_written(repo: Repo, text: str) -> None:
    (repo.path / ".pre-commit-config.yaml").write_text(text)
    config = repo.git("config", "--local", "--list")
    proc = repo.sg("init", "--hooks", "pre-commit")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("shiftgit: .pre-commit-config.yaml: ") and "`repos:` is a list" in line
    assert (repo.path / ".pre-commit-config.yaml").read_text() == text
    assert not (repo.path / ".shift").exists() and repo.git("config", "--local", "--list") == config


def test_the_pre_commit_framework_route_gates_and_notes(repo: Repo, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "shiftgit").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m shiftgit "$@"\n')
    (bin_dir / "shiftgit").chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    repo.ok("init", "--hooks", "pre-commit")
    proc = repo.run([sys.executable, "-m", "pre_commit", "install", "--hook-type", "pre-commit", "--hook-type",
                     "commit-msg", "--hook-type", "post-commit", "--hook-type", "post-rewrite"], env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert repo.commit("init", env=env).returncode == 0
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    assert repo.commit("start", env=env).returncode == 0
    repo.write("calc.py", BROKEN)
    refused = repo.commit("no checkpoint", env=env)
    assert refused.returncode == 1 and "[rule 2]" in refused.stdout + refused.stderr
    repo.ok("checkpoint", "--step", "via the framework")
    assert repo.commit("framework", env=env).returncode == 0
    assert "via the framework" in (note(repo) or "")
    assert "Shift-Checkpoint:" in repo.git("log", "-1", "--format=%B")


# -- notes ------------------------------------------------------------------------------------------

def test_the_note_reads_in_git_log_and_its_json_is_the_committed_checkpoint(run_repo: Repo) -> None:
    run_repo.write("calc.py", BROKEN)
    assert run_repo.sg("check", "--name", "unit", "--", sys.executable, "-m", "pytest", "-q", "-p",
                       "no:cacheprovider", "tests").returncode == 1
    run_repo.ok("checkpoint", "--step", "found the sub bug", "--next", "fix sub()", "--done-when", "test_sub passes")
    assert run_repo.commit("wip").returncode == 0
    text = note(run_repo) or ""
    lines = text.splitlines()
    committed = json.loads(run_repo.git("show", f"HEAD:{LEDGER}"))["checkpoint"]
    assert lines == [f"shiftgit: demo #1 {committed['id']} — found the sub bug",
                     "next: fix sub() — done when: test_sub passes",
                     "checks: 0 passed, 1 failed, 0 stale — failing: tests/test_calc.py::test_sub",
                     "files: 1 changed — calc.py"]
    shown = run_repo.git("log", "-1")
    assert "Notes (shift):" in shown and "found the sub bug" in shown and "{" not in shown  # no JSON
    record = run_repo.git("notes", "--ref=shift-data", "show", "HEAD")
    document = json.loads(record)
    assert document["checkpoints"] == [{**committed, "run": "demo"}]
    assert record == json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    assert handoff.pair(document) == (text, record)


def test_no_handoff_note_and_no_note_for_commits_without_ledger_changes(run_repo: Repo) -> None:
    start_note = note_json(run_repo)
    assert start_note["checkpoints"] == [] and start_note["runs"] == ["demo"]
    assert "no handoff" in (note(run_repo) or "")
    run_repo.ok("constraint", "add", "no network")
    assert run_repo.commit("a constraint").returncode == 0
    assert note_json(run_repo)["checkpoints"] == []
    run_repo.ok("finish", "--status", "abandoned")
    assert run_repo.commit("finish").returncode == 0
    run_repo.write("README.md", "# human\n")
    assert run_repo.commit("human").returncode == 0
    assert note(run_repo) is None


def test_shift_skip_is_recorded_in_the_note(run_repo: Repo) -> None:
    run_repo.write("calc.py", BROKEN)
    assert run_repo.commit("hotfix", env={"SHIFT_SKIP": "prod hotfix by on-call"}).returncode == 0
    assert note_json(run_repo)["skip"] == "prod hotfix by on-call"
    assert "commit gate skipped (SHIFT_SKIP): prod hotfix by on-call" in run_repo.git("log", "-1", "--notes=shift")


def test_secrets_never_land_in_notes_or_history(run_repo: Repo) -> None:
    run_repo.write("calc.py", BROKEN)
    run_repo.ok("checkpoint", "--step", "debug", "--note", f"used {TOKEN} here")
    assert run_repo.commit("one").returncode == 0
    run_repo.write("README.md", "# skip\n")
    assert run_repo.commit("two", env={"SHIFT_SKIP": f"token {TOKEN} expired"}).returncode == 0
    assert "REDACTED" in (note(run_repo) or "")
    assert TOKEN not in run_repo.git("log", "-p", "--all", "--notes=shift")
    for line in run_repo.git("notes", "--ref=shift", "list").splitlines():
        assert TOKEN not in run_repo.git("cat-file", "-p", line.split()[0])


# -- trailers ---------------------------------------------------------------------------------------

def trailers(repo: Repo) -> str:
    return repo.git("log", "-1", "--format=%(trailers:key=Shift-Run,key=Shift-Checkpoint)").strip()


def test_trailers_name_the_run_and_checkpoint(run_repo: Repo) -> None:
    step(run_repo, "one", BROKEN)
    point = run_repo.ledger("demo")["checkpoint"]["id"]
    assert trailers(run_repo) == f"Shift-Run: demo\nShift-Checkpoint: {point}"
    run_repo.write("calc.py", BROKEN + "# two\n")
    run_repo.ok("checkpoint", "--step", "two")
    run_repo.git("add", "-A")
    assert run_repo.run(["git", "commit", "-q", "--amend", "--no-edit"]).returncode == 0
    second = run_repo.ledger("demo")["checkpoint"]["id"]
    assert trailers(run_repo) == f"Shift-Run: demo\nShift-Checkpoint: {second}"  # replaced, not added
    run_repo.write("calc.py", BROKEN + "# three\n")
    run_repo.ok("checkpoint", "--step", "three")
    assert run_repo.commit("three", env={"SHIFT_SKIP": "the gate was skipped"}).returncode == 0
    assert "Shift-Checkpoint: " + run_repo.ledger("demo")["checkpoint"]["id"] in trailers(run_repo)


def test_no_trailers_when_configured_off_and_an_empty_message_still_aborts(run_repo: Repo) -> None:
    run_repo.write("calc.py", BROKEN)
    run_repo.ok("checkpoint", "--step", "one")
    run_repo.git("add", "-A")
    assert run_repo.run(["git", "commit", "-q", "-m", ""]).returncode != 0
    assert run_repo.run(["git", "commit", "-q", "-m", "# only a comment", "--cleanup=strip"]).returncode != 0
    config = run_repo.path / ".shift/config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "trailers": False}))
    assert run_repo.commit("quiet").returncode == 0
    assert trailers(run_repo) == ""


# (message, the shim appends the trailers itself when the gate found git's config plain): one paragraph, every line
# text, none a comment, a divider or a conflicts list, the last one ended; `git interpret-trailers` does the rest
MESSAGES = [("round 1\n", True), ("a\nb\n", True), ("fix\nSigned-off-by: me\n", True), ("Shift-Run: old\n", True),
            ("t\u00e9st: v\r\n", True), ("fix\n\nShift-Run: old\n", False), ("fix\n---\nx\n", False),
            ("fix\nConflicts:\n\ta\n", False), ("no newline", False), ("  lead\n", False), ("fix\n# comment\n", False),
            ("x\n\n\n", False), ("fix\n -- \n", False), ("fix\n\t\n", False)]


def test_the_commit_msg_shim_leaves_a_message_as_git_interpret_trailers_would(run_repo: Repo, tmp_path: Path) -> None:
    lines = ["Shift-Run: demo", "Shift-Checkpoint: p1-abc"]
    trailer_args = [arg for line in lines for arg in ("--trailer", line)]
    folder = run_repo.path / ".git" / "shift"
    msg, expected, trace = tmp_path / "msg", tmp_path / "expected", tmp_path / "trace"
    for message, appended in MESSAGES:
        expected.write_bytes(message.encode())
        run_repo.git("interpret-trailers", "--in-place", "--if-exists", "replace", *trailer_args, str(expected))
        for plain in ("", " plain"):  # the shim sees this test as its `git commit` (its parent pid)
            (folder / "trailers").write_text(f"{os.getpid()}{plain}\n" + "".join(f"{line}\n" for line in lines))
            msg.write_bytes(message.encode())
            trace.unlink(missing_ok=True)
            proc = run_repo.run(["sh", "-c", 'exec .git/hooks/commit-msg "$1"', "sh", str(msg)],
                                env={"GIT_TRACE2_EVENT": str(trace)})
            assert proc.returncode == 0, proc.stderr
            assert msg.read_bytes() == expected.read_bytes(), (message, plain)
            assert trace.exists() is not (appended and plain == " plain"), (message, plain)  # no git: appended


def test_git_config_that_moves_trailers_leaves_them_to_git(run_repo: Repo) -> None:
    run_repo.write("calc.py", BROKEN)
    run_repo.ok("checkpoint", "--step", "one")
    run_repo.git("add", "-A")
    trace = run_repo.path.parent / "trace.json"
    assert run_repo.run(["git", "commit", "-q", "-m", "one"], env={"GIT_TRACE2_EVENT": str(trace)}).returncode == 0
    assert "interpret-trailers" not in trace.read_text()  # the gate found no such config: the shim appended them
    assert run_repo.git("log", "-1", "--format=%B") == f"one\n\n{trailers(run_repo)}\n\n"
    run_repo.git("config", "trailer.where", "start")  # a trailer block's start: git knows where that is
    run_repo.write("calc.py", BROKEN + "# two\n")
    run_repo.ok("checkpoint", "--step", "two")
    run_repo.git("add", "-A")
    trace.unlink()
    assert run_repo.run(["git", "commit", "-q", "-m", "two\n\nSigned-off-by: me"],
                        env={"GIT_TRACE2_EVENT": str(trace)}).returncode == 0
    assert "interpret-trailers" in trace.read_text()
    point = run_repo.ledger("demo")["checkpoint"]["id"]
    assert run_repo.git("log", "-1", "--format=%B") == \
        f"two\n\nShift-Checkpoint: {point}\nShift-Run: demo\nSigned-off-by: me\n\n"  # each at the start


# -- rewrites ---------------------------------------------------------------------------------------

def test_amend_gives_the_new_commit_its_own_handoff(run_repo: Repo) -> None:
    first = step(run_repo, "step one", BROKEN)
    run_repo.write("calc.py", BROKEN + "# amended\n")
    run_repo.ok("checkpoint", "--step", "step two")
    run_repo.git("add", "-A")
    assert run_repo.run(["git", "commit", "-q", "--amend", "--no-edit"]).returncode == 0
    assert [p["step"] for p in note_json(run_repo)["checkpoints"]] == ["step two"]
    assert [p["step"] for p in note_json(run_repo, first)["checkpoints"]] == ["step one"]


def test_rebase_keeps_each_commits_handoff_and_skip_reason(run_repo: Repo) -> None:
    step(run_repo, "step one", BROKEN)
    run_repo.write("README.md", "# by hand\n")
    assert run_repo.commit("skipped", env={"SHIFT_SKIP": "docs only"}).returncode == 0
    step(run_repo, "step three")
    before = run_repo.git("rev-list", "-3", "HEAD").split()
    proc = run_repo.run(["git", "rebase", "-q", "--force-rebase", "HEAD~3"],
                        env={"GIT_SEQUENCE_EDITOR": "true", "GIT_COMMITTER_DATE": "2030-01-01T00:00:00+0000"})
    assert proc.returncode == 0, proc.stderr
    after = run_repo.git("rev-list", "-3", "HEAD").split()
    assert not set(before) & set(after)
    assert [p["step"] for p in note_json(run_repo, after[0])["checkpoints"]] == ["step three"]
    assert note_json(run_repo, after[1]) == {"checkpoints": [], "runs": [], "shift_note": 1, "skip": "docs only"}
    assert [p["step"] for p in note_json(run_repo, after[2])["checkpoints"]] == ["step one"]
    log = run_repo.json("log")
    assert [(e["commit"], e["step"]) for e in log] == [(after[0], "step three"), (after[2], "step one")]


def test_post_rewrite_without_stdin_derives_the_pairs(run_repo: Repo) -> None:
    """The pre-commit framework runs post-rewrite without stdin: the reflog tells what the amend replaced."""
    shim = hooks_dir(run_repo) / "post-rewrite"
    shim.write_text(f'#!/bin/sh\nPRE_COMMIT_REWRITE_COMMAND="$1" exec "{sys.executable}" -m shiftgit hook '
                    'post-rewrite < /dev/null\n')
    step(run_repo, "one", BROKEN)
    run_repo.git("checkout", "HEAD~1", "--", LEDGER)  # the amended commit no longer carries checkpoint one
    run_repo.git("add", "-A")
    assert run_repo.run(["git", "commit", "-q", "--amend", "--no-edit", "--no-verify"]).returncode == 0
    assert note(run_repo) is None  # git copied the old note; post-rewrite removed it


@pytest.mark.parametrize("hook", ["pre-commit", "commit-msg", "post-commit", "post-rewrite", "pre-push"])
def test_hooks_outside_a_shiftgit_repo_do_nothing(repo: Repo, hook: str) -> None:
    proc = repo.run([sys.executable, "-m", "shiftgit", "hook", hook, ".git/COMMIT_EDITMSG"], input="")
    assert proc.returncode == 0 and proc.stderr == ""


def test_a_bad_shift_run_is_a_clear_refusal(run_repo: Repo) -> None:
    run_repo.write("calc.py", BROKEN)
    run_repo.git("add", "-A")
    proc = run_repo.run(["git", "commit", "-q", "-m", "x"], env={"SHIFT_RUN": "../evil"})
    assert proc.returncode == 1 and "SHIFT_RUN" in proc.stderr and "Traceback" not in proc.stderr


def test_worktrees_have_their_own_active_run(run_repo: Repo, tmp_path: Path) -> None:
    other = tmp_path / "other"
    run_repo.git("worktree", "add", "-q", str(other))
    wt = Repo(other)
    wt.write("calc.py", BROKEN)
    assert wt.commit("no run here").returncode == 0  # the active run belongs to the first worktree
    wt.ok("start", "second", "--goal", "g", "--stop-when", "s")
    assert wt.commit("start second").returncode == 0
    wt.write("calc.py", BROKEN + "# wt\n")
    assert wt.commit("gated here").returncode == 1
    subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=run_repo.path, check=True)


def imported(repo: Repo, *args: str) -> set[str]:
    proc = repo.run([sys.executable, "-X", "importtime", "-m", "shiftgit", "hook", *args])
    assert proc.returncode == 0, proc.stderr
    return {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


def test_the_commit_path_imports_no_click_pygit2_or_jsonschema(run_repo: Repo) -> None:
    heavy = {"click", "pygit2", "jsonschema", "dataclasses", "shiftgit.ledger.model"}
    run_repo.write("calc.py", BROKEN)
    run_repo.ok("checkpoint", "--step", "light")
    run_repo.git("add", "-A")
    assert not heavy & imported(run_repo, "pre-commit")
    path = run_repo.ledger_path("demo")
    path.write_text(json.dumps(json.loads(path.read_text())))  # valid, but bytes shiftgit never wrote
    run_repo.git("add", "-A")
    assert "shiftgit.ledger.quickschema" in imported(run_repo, "pre-commit")  # so the gate validates them
    assert "shiftgit.ledger.quickschema" not in imported(run_repo, "pre-commit")  # and remembers it did
    assert run_repo.commit("light").returncode == 0
    assert not heavy & imported(run_repo, "post-commit")


def test_the_gate_judges_the_first_commit_of_an_unborn_branch(tmp_path: Path) -> None:
    """No HEAD yet: the index is judged against the empty tree (the diff against HEAD git started cannot be)."""
    repo = Repo(tmp_path / "unborn")
    repo.path.mkdir()
    repo.git("init", "-q", "-b", "main")
    repo.ok("init", "--hooks", "git")
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    repo.write("calc.py", BROKEN)
    repo.ok("checkpoint", "--step", "first", "--next", "second")
    repo.write("extra.py", "x = 1\n")  # staged, but not in the checkpoint
    refused = repo.commit("first")
    assert refused.returncode == 1 and "[rule 3]" in refused.stderr and "extra.py" in refused.stderr, refused.stderr
    (repo.path / "extra.py").unlink()
    assert repo.commit("first").returncode == 0
    assert (note(repo) or "").startswith("shiftgit: demo #1 ")
