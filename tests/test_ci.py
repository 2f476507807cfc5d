"""`shiftgit ci check` and the pre-push gate: commits that skipped the local gate are caught later.

Real repositories, a real bare remote, real `git push` with the hooks installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import CALC, Repo, make_repo

ROOT = Path(__file__).resolve().parents[1]
BROKEN = CALC.replace("return a - b", "return a + b")


def remote_repo(tmp_path: Path) -> tuple[Repo, Path]:
    """A repo with shiftgit (git hooks), run `demo` started, pushed to a bare remote; origin/HEAD set."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    repo = make_repo(tmp_path / "work")
    repo.git("remote", "add", "origin", str(remote))
    repo.ok("init", "--hooks", "git")
    assert repo.commit("set up shiftgit").returncode == 0
    repo.ok("start", "demo", "--goal", "make calc correct", "--stop-when", "tests pass")
    assert repo.commit("start demo").returncode == 0
    repo.git("push", "-q", "-u", "origin", "main")
    repo.git("remote", "set-head", "origin", "main")
    return repo, remote


def gated_commit(repo: Repo, text: str, message: str) -> None:
    repo.write("calc.py", text)
    repo.ok("checkpoint", "--step", message)
    assert repo.commit(message).returncode == 0


def ungated_commit(repo: Repo, text: str, message: str, env: dict[str, str] | None = None) -> None:
    repo.write("calc.py", text)
    repo.git("add", "-A")
    flags = [] if env else ["--no-verify"]
    proc = repo.run(["git", "commit", "-q", *flags, "-m", message], env=env)
    assert proc.returncode == 0, proc.stderr


def by_subject(report: dict[str, object]) -> dict[str, dict[str, object]]:
    commits = report["commits"]
    assert isinstance(commits, list)
    return {c["subject"]: c for c in commits}


def test_gated_commits_pass_and_a_no_verify_commit_fails_naming_its_rules(tmp_path: Path) -> None:
    repo, _ = remote_repo(tmp_path)
    gated_commit(repo, BROKEN, "gated")
    ungated_commit(repo, CALC, "behind the gate's back")
    proc = repo.sg("ci", "check", "--json")
    assert proc.returncode == 1, proc.stderr
    verdicts = by_subject(json.loads(proc.stdout))
    assert verdicts["gated"]["status"] == "passed"
    bad = verdicts["behind the gate's back"]
    assert bad["status"] == "failed" and bad["runs"] == ["demo"]
    assert {p["rule"] for p in bad["problems"]} >= {1, 2}
    text = repo.sg("ci", "check").stdout
    assert repo.head()[:12] in text and "[rule 1]" in text and "fix:" in text


def test_a_shift_skip_commit_passes_with_its_reason_listed(tmp_path: Path) -> None:
    repo, _ = remote_repo(tmp_path)
    ungated_commit(repo, BROKEN, "hotfix", env={"SHIFT_SKIP": "prod is down"})
    proc = repo.sg("ci", "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "passed with SHIFT_SKIP: prod is down" in proc.stdout


def test_a_commit_whose_note_is_missing_breaks_rule_8(tmp_path: Path) -> None:
    repo, _ = remote_repo(tmp_path)
    gated_commit(repo, BROKEN, "gated")
    repo.git("notes", "--ref=shift", "remove", "HEAD")
    repo.git("notes", "--ref=shift-data", "remove", "HEAD")
    report = json.loads(repo.sg("ci", "check", "--json", "--no-fetch").stdout)
    problems = by_subject(report)["gated"]["problems"]
    assert [p["rule"] for p in problems] == [8]
    assert "notes repair" in problems[0]["fix"][0]


def test_ci_reads_the_notes_a_fresh_clone_fetches_itself(tmp_path: Path) -> None:
    repo, remote = remote_repo(tmp_path)
    ungated_commit(repo, BROKEN, "hotfix", env={"SHIFT_SKIP": "reviewed"})
    repo.git("push", "-q", "origin", "main", "refs/notes/shift", "refs/notes/shift-data")
    clone = Repo(tmp_path / "clone")
    subprocess.run(["git", "clone", "-q", str(remote), str(clone.path)], check=True)
    offline = clone.sg("ci", "check", "origin/main~1..origin/main", "--no-fetch")  # no notes here: no skip
    assert offline.returncode == 1 and "hotfix" in offline.stdout
    proc = clone.sg("ci", "check", "origin/main~1..origin/main", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["notes"]["fetched"] is True
    assert by_subject(report)["hotfix"]["skip"] == "reviewed"


def test_the_github_action_runs_ci_check_on_the_pull_requests_range(tmp_path: Path) -> None:
    repo, _ = remote_repo(tmp_path)
    base = repo.head()
    gated_commit(repo, BROKEN, "gated")
    ungated_commit(repo, CALC, "no verify")
    ungated_commit(repo, CALC + "\n# skipped\n", "skipped", env={"SHIFT_SKIP": "pairing with Bo"})
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    script = action["runs"]["steps"][-1]["run"]
    env = {"RANGE_INPUT": "", "PR_BASE": base, "PR_HEAD": repo.head(), "PUSH_BEFORE": "", "PUSH_AFTER": ""}
    proc = repo.run(["bash", "-c", script], env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    titles = [line.split("::", 2)[1] for line in proc.stdout.splitlines() if line.startswith("::error title=")]
    no_verify, gated, skipped = (repo.git("rev-parse", rev).strip()[:12] for rev in ("HEAD~1", "HEAD~2", "HEAD"))
    assert titles and all(no_verify in title for title in titles), titles
    assert not any(gated in title or skipped in title for title in titles)
    assert "passed with SHIFT_SKIP: pairing with Bo" in proc.stdout


def test_pre_push_refuses_a_no_verify_commit_and_the_remote_keeps_its_branch(tmp_path: Path) -> None:
    repo, remote = remote_repo(tmp_path)
    before = repo.git("--git-dir", str(remote), "rev-parse", "main").strip()
    ungated_commit(repo, BROKEN, "behind the gate's back")
    proc = repo.run(["git", "push", "origin", "main"])
    assert proc.returncode != 0
    assert "shiftgit pre-push" in proc.stderr and "[rule 1]" in proc.stderr
    assert repo.git("--git-dir", str(remote), "rev-parse", "main").strip() == before


def test_shift_skip_lets_a_push_through_and_keeps_the_reason_in_a_note(tmp_path: Path) -> None:
    repo, remote = remote_repo(tmp_path)
    ungated_commit(repo, BROKEN, "behind the gate's back")
    proc = repo.run(["git", "push", "-q", "origin", "main"], env={"SHIFT_SKIP": "release blocker"})
    assert proc.returncode == 0, proc.stderr
    assert repo.git("--git-dir", str(remote), "rev-parse", "main").strip() == repo.head()
    note = repo.git("notes", "--ref=shift", "show", "HEAD")
    assert "pre-push: release blocker" in note
    assert repo.sg("ci", "check", "--no-fetch").returncode == 0


def test_an_idle_push_starts_no_python(tmp_path: Path) -> None:
    repo, _ = remote_repo(tmp_path)
    repo.ok("finish", "--status", "abandoned")
    assert repo.commit("finish demo").returncode == 0
    repo.git("push", "-q", "origin", "main")
    log = tmp_path / "pythons.log"
    probe = tmp_path / "python"  # the shims' interpreter, logging each start (they run `python -S`: no sitecustomize)
    probe.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {sys.executable} "$@"\n')
    probe.chmod(0o755)
    hooks = repo.path / repo.git("rev-parse", "--git-path", "hooks").strip()
    for shim in hooks.iterdir():
        shim.write_text(shim.read_text().replace(f"python={sys.executable}", f"python={probe}"))
    env = {"PYTHONPATH": str(ROOT)}
    repo.write("README.md", "no run is active\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "docs")
    assert repo.run(["git", "push", "-q", "origin", "main"], env=env).returncode == 0
    assert not log.exists() or "pre-push" not in log.read_text()
    ungated_commit(repo, BROKEN, "still no run")
    archived = repo.git("show", "refs/shift/archive:demo/ledger.json")  # finish moved it there
    repo.write(".shift/runs/demo/ledger.json", archived + "\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "--no-verify", "-m", "a ledger change")
    assert repo.run(["git", "push", "-q", "origin", "main"], env=env).returncode == 0
    assert "pre-push" in log.read_text()  # a ledger change in the range: Python judged it


def test_a_merge_that_merges_ledgers_gets_its_note(tmp_path: Path) -> None:
    repo, _ = remote_repo(tmp_path)
    repo.git("checkout", "-q", "-b", "side")
    gated_commit(repo, BROKEN, "on the side")
    repo.git("checkout", "-q", "main")
    repo.write("README.md", "main moves on\n")
    repo.git("add", "-A")
    repo.run(["git", "commit", "-q", "-m", "readme"], env={"SHIFT_SKIP": "docs only"})
    proc = repo.run(["git", "merge", "--no-ff", "-q", "-m", "merge side", "side"])
    assert proc.returncode == 0, proc.stderr
    note = repo.git("notes", "--ref=shift", "show", "HEAD", check=False)
    assert "on the side" in note
    report = json.loads(repo.sg("ci", "check", "--json", "--no-fetch").stdout)
    assert by_subject(report)["merge side"]["status"] != "failed"


def test_a_cherry_picked_commit_without_its_handoff_is_reported(tmp_path: Path) -> None:
    repo, _ = remote_repo(tmp_path)
    repo.git("checkout", "-q", "-b", "side")
    gated_commit(repo, BROKEN, "fix on the side")
    picked = repo.head()
    repo.git("checkout", "-q", "main")
    repo.write("README.md", "main moves on\n")
    repo.git("add", "-A")
    repo.run(["git", "commit", "-q", "-m", "readme"], env={"SHIFT_SKIP": "docs only"})
    assert repo.run(["git", "cherry-pick", picked]).returncode == 0
    report = json.loads(repo.sg("ci", "check", "--json", "--no-fetch").stdout)
    assert report["ok"] is False
    assert 2 in {p["rule"] for p in by_subject(report)["fix on the side"]["problems"]}


@pytest.mark.parametrize("spec", ["nope..HEAD", "HEAD..no-such-branch"])
def test_an_unknown_range_is_one_line_and_exit_2(tmp_path: Path, spec: str) -> None:
    repo, _ = remote_repo(tmp_path)
    proc = repo.sg("ci", "check", spec)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert spec in proc.stderr


def test_a_shallow_clone_is_told_to_fetch_more_history(tmp_path: Path) -> None:
    repo, remote = remote_repo(tmp_path)
    for n in range(3):
        gated_commit(repo, BROKEN + f"\n# {n}\n", f"step {n}")
    repo.git("push", "-q", "origin", "main")
    clone = Repo(tmp_path / "shallow")
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{remote}", str(clone.path)], check=True)
    for spec in ("origin/main~2..origin/main", f"{repo.git('rev-parse', 'HEAD~2').strip()}..origin/main"):
        proc = clone.sg("ci", "check", spec, "--no-fetch")
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "--deepen" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_no_default_range_without_a_remote_is_a_usage_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "lonely")
    proc = repo.sg("ci", "check")
    assert proc.returncode == 2 and "main..HEAD" in proc.stderr


def test_init_installs_pre_push_and_post_merge(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "w")
    repo.ok("init", "--hooks", "git")
    hooks = Path(repo.git("rev-parse", "--git-path", "hooks").strip())
    hooks = hooks if hooks.is_absolute() else repo.path / hooks
    for name in ("pre-push", "post-merge"):
        assert "shiftgit" in (hooks / name).read_text()
    other = make_repo(tmp_path / "p")
    other.ok("init", "--hooks", "pre-commit")
    config = yaml.safe_load(other.read(".pre-commit-config.yaml"))
    stages = {s for entry in config["repos"] for h in entry["hooks"] for s in h["stages"]}
    assert {"pre-push", "post-merge"} <= stages


def test_the_ci_module_is_on_the_stdlib_only_hook_path() -> None:
    code = ("import sys; import shiftgit.git.ci; "
            "print(sorted(m for m in ('click', 'pygit2', 'jsonschema') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
