"""The core commands on real repos: start, check, checkpoint, constraints, amend, stop, finish."""

from __future__ import annotations

import json
import sys
import time

import pytest
from conftest import PYTEST, Repo


def test_start_writes_the_contract_and_refuses_a_second_start(repo: Repo) -> None:
    repo.ok("init", "--hooks", "none")
    repo.ok("start", "r1", "--goal", "g", "--stop-when", "s", "--token-budget", "100", "--forbid", "deploy",
            "--scope", "src/**", "--constraint", "c one", "--constraint", "c two")
    ledger = repo.ledger("r1")
    assert ledger["contract"]["budgets"]["tokens"] == 100
    assert ledger["contract"]["forbid"] == ["deploy"] and ledger["contract"]["scope"] == ["src/**"]
    assert [c["text"] for c in ledger["constraints"]] == ["c one", "c two"]
    assert len({c["id"] for c in ledger["constraints"]}) == 2
    proc = repo.sg("start", "r1", "--goal", "g", "--stop-when", "s")
    assert proc.returncode == 2 and "already exists" in proc.stderr


@pytest.mark.parametrize("bad", ["../evil", "Upper", "", "a" * 65, "-x", "a b", "a/b"])
def test_bad_run_ids_exit_2_and_write_nothing(repo: Repo, bad: str) -> None:
    repo.ok("init", "--hooks", "none")
    before = sorted(p.name for p in (repo.path / ".shift").rglob("*"))
    proc = repo.sg("start", bad, "--goal", "g", "--stop-when", "s")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert ("bad run id" if bad != "-x" else "No such option") in proc.stderr
    assert sorted(p.name for p in (repo.path / ".shift").rglob("*")) == before


def test_commands_outside_a_repo_or_before_init_are_clear(tmp_path, repo: Repo) -> None:
    outside = Repo(tmp_path / "plain")
    outside.path.mkdir()
    proc = outside.sg("status")
    assert proc.returncode == 2 and "not a git repository" in proc.stderr
    proc = repo.sg("status")
    assert proc.returncode == 2 and "shiftgit init" in proc.stderr


def test_check_records_failing_ids_and_passes_the_exit_code(run_repo: Repo) -> None:
    run_repo.write("calc.py", run_repo.read("calc.py").replace("a - b", "a + b"))
    proc = run_repo.sg("check", "--name", "unit", "--", *PYTEST)
    assert proc.returncode == 1
    assert "test_sub" in proc.stdout  # the command's own output is echoed
    check = run_repo.ledger("demo")["pending_checks"][0]
    assert check["exit_code"] == 1 and check["argv"] == PYTEST
    assert check["failing"] == ["tests/test_calc.py::test_sub"]
    assert check["outcome"]["passed"] == 1 and check["outcome"]["failed"] == 1
    assert len(check["output_sha256"]) == 64 and check["content"]
    proc = run_repo.sg("check", "--", sys.executable, "-c", "import sys; sys.exit(7)")
    assert proc.returncode == 7


def test_check_timeout_kills_the_whole_process_group(run_repo: Repo, tmp_path) -> None:
    pidfile = tmp_path / "child.pid"
    script = (f"import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', "
              f"'import time; time.sleep(60)']); open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    started = time.monotonic()
    proc = run_repo.sg("check", "--timeout", "1", "--", sys.executable, "-c", script)
    assert time.monotonic() - started < 15
    assert proc.returncode == 124
    check = run_repo.ledger("demo")["pending_checks"][-1]
    assert check["exit_code"] is None and check["timed_out"] is True
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_check_output_is_capped_and_redacted(run_repo: Repo) -> None:
    token = "ghp_" + "Q7fK2xLm9Pz4Rt8Wv1Ny6Bc3Hd5Js0Ga2Ek7"
    script = "import os; print('x' * 2_000_000); print('token', os.environ['TOK'])"
    run_repo.sg("check", "-q", "--env", "TOK", "--", sys.executable, "-c", script, env={"TOK": token})
    check = run_repo.ledger("demo")["pending_checks"][-1]
    assert len(check["output_tail"]) <= 4000 and check["output_bytes"] > 2_000_000
    assert token not in run_repo.ledger_path("demo").read_text()


def test_missing_command_and_secret_argv_are_usage_errors(run_repo: Repo) -> None:
    proc = run_repo.sg("check", "--", "no-such-command-xyz")
    assert proc.returncode == 2 and "command not found" in proc.stderr
    token = "ghp_" + "Q7fK2xLm9Pz4Rt8Wv1Ny6Bc3Hd5Js0Ga2Ek7"
    proc = run_repo.sg("check", "--", "curl", "-H", f"Authorization: token {token}")
    assert proc.returncode == 2 and "secret" in proc.stderr
    proc = run_repo.sg("check")
    assert proc.returncode == 2
    assert run_repo.ledger("demo")["pending_checks"] == []


def test_checkpoint_takes_files_from_git_and_carries_open_items(run_repo: Repo) -> None:
    head = run_repo.head()
    run_repo.write("calc.py", run_repo.read("calc.py") + "\n# edit\n")
    run_repo.write("new/file.txt", "hello\n")
    run_repo.git("rm", "-q", "conftest.py")
    run_repo.ok("check", "--name", "unit", "--", *PYTEST)
    run_repo.ok("checkpoint", "--step", "one", "--next", "two", "--done-when", "two works",
                "--question", "floats?", "--decision", "keep API -- callers depend on it", "--blocked", "review")
    point = run_repo.ledger("demo")["checkpoint"]
    files = {f["path"]: f for f in point["files"]}
    assert set(files) == {"calc.py", "new/file.txt", "conftest.py"}
    assert files["conftest.py"]["status"] == "D" and files["conftest.py"]["id"] is None
    assert files["calc.py"]["id"] == run_repo.git("hash-object", "calc.py").strip()
    assert point["base"] == head and point["checks"][0]["fresh"] is True
    assert point["decisions"][0]["rationale"] == "callers depend on it"
    assert run_repo.git("rev-parse", "refs/shift/snapshots/demo^{tree}").strip() == point["tree"]
    assert run_repo.git("show", f"{point['snapshot']}:new/file.txt") == "hello\n"
    assert run_repo.git("status", "--porcelain", "new/") == "?? new/\n"  # index untouched
    run_repo.write("calc.py", run_repo.read("calc.py") + "\n# more\n")
    run_repo.ok("checkpoint", "--step", "two", "--resolve", "floats?", "--reason", "ints only")
    point = run_repo.ledger("demo")["checkpoint"]
    assert point["seq"] == 2 and point["questions"] == [] and [b["text"] for b in point["blocked"]] == ["review"]
    assert point["next"] == {"action": "two", "done_when": "two works"}
    assert point["checks"][0]["fresh"] is False  # carried, but calc.py changed since
    assert run_repo.ledger("demo")["history"][0]["step"] == "one"


def test_working_ledger_stays_bounded(run_repo: Repo) -> None:
    from shiftgit.ledger.store import Store
    from shiftgit.runs import checkpoints

    store = Store.open(run_repo.path)
    sizes = []
    for i in range(104):
        spec = checkpoints.CheckpointInput(step=f"step {i} " + "s" * 100, note="n" * 200, done=(f"d{i}",))
        checkpoints.checkpoint(store, "demo", spec)
        if i in (101, 103):
            sizes.append(run_repo.ledger_path("demo").stat().st_size)
    ledger = run_repo.ledger("demo")
    assert len(ledger["history"]) == 100 and ledger["checkpoint"]["seq"] == 104
    assert abs(sizes[1] - sizes[0]) < 200


def test_constraints_lift_with_reason_and_amend_is_recorded(run_repo: Repo) -> None:
    run_repo.ok("constraint", "add", "no fridays")
    proc = run_repo.sg("constraint", "lift", "no fridays")
    assert proc.returncode == 2
    run_repo.ok("constraint", "lift", "no fridays", "--reason", "it is monday")
    texts = {c["text"]: c for c in run_repo.ledger("demo")["constraints"]}
    assert texts["no fridays"]["status"] == "lifted" and texts["no fridays"]["reason"] == "it is monday"
    assert texts["never edit tests/"]["status"] == "active"
    proc = run_repo.sg("constraint", "lift", "never heard of it", "--reason", "x")
    assert proc.returncode == 2 and "never edit tests/" in proc.stderr
    run_repo.ok("amend", "--token-budget", "5000", "--goal", "new goal", "--reason", "scope grew")
    ledger = run_repo.ledger("demo")
    assert ledger["contract"]["goal"] == "new goal" and ledger["contract"]["budgets"]["tokens"] == 5000
    assert {a["field"] for a in ledger["amendments"]} == {"goal", "tokens"}
    assert all(a["reason"] == "scope grew" for a in ledger["amendments"])


def test_stop_and_finish(run_repo: Repo) -> None:
    proc = run_repo.sg("stop", "--reason", "tired")
    assert proc.returncode == 2 and "waiting_for_approval" in proc.stderr
    run_repo.ok("stop", "--reason", "user_paused", "--detail", "lunch")
    assert run_repo.json("status")["runs"][0]["stop"]["reason"] == "user_paused"
    run_repo.ok("finish", "--status", "completed", "--reviewer-action", "read it", "--known-failure", "flaky x")
    assert not run_repo.ledger_path("demo").exists(), "finish moves the ledger into the archive"
    ledger = json.loads(run_repo.git("show", "refs/shift/archive:demo/ledger.json"))
    assert ledger["status"] == "completed" and ledger["receipt"]["reviewer_action"] == "read it"
    assert run_repo.json("status")["active"] is None


def test_show_markdown_and_json(run_repo: Repo) -> None:
    run_repo.ok("checkpoint", "--step", "looked around", "--next", "fix it")
    markdown = run_repo.ok("show", "demo", "--markdown").stdout
    assert "# Run `demo`" in markdown and "never edit tests/" in markdown and "fix it" in markdown
    assert run_repo.json("show", "demo")["run"] == "demo"
    proc = run_repo.sg("show", "nope")
    assert proc.returncode == 2 and "nope" in proc.stderr


def test_hook_help_lists_the_entry_points_and_an_unknown_hook_is_a_usage_error(repo: Repo) -> None:
    assert "claude session-start" in repo.ok("hook", "--help").stdout
    proc = repo.sg("hook", "bogus")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "pre-commit" in proc.stderr
