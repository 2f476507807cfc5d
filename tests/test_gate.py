"""The commit gate (SPEC §5): real `git commit` through the hooks of `init --hooks git`, and the pure rules."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo

from shiftgit.git import gate
from shiftgit.git import view as gitview
from shiftgit.ledger import diff as ledgerdiff
from shiftgit.ledger import model as ledger
from shiftgit.ledger import validated

LEDGER = ".shift/runs/demo/ledger.json"
BROKEN = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"


def commit(repo: Repo, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return repo.run(["git", "commit", "-q", *args], env=env)


def refused(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


def rules(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"\[rule (\d)\]", text)}


def checkpointed(repo: Repo, step: str = "step one") -> None:
    repo.write("calc.py", BROKEN)
    repo.ok("checkpoint", "--step", step, "--next", "fix sub()")


def edit_ledger(repo: Repo, change: Any) -> None:
    path = repo.ledger_path("demo")
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


# -- real commits ---------------------------------------------------------------------------------

def test_a_change_without_a_checkpoint_is_refused_with_every_rule_and_its_fix(run_repo: Repo) -> None:
    head = run_repo.head()
    run_repo.write("calc.py", BROKEN)
    run_repo.git("add", "-A")
    err = refused(commit(run_repo, "-m", "sneaky"))
    assert rules(err) == {1, 2, 3}
    assert "calc.py" in err and LEDGER in err
    assert f"shiftgit checkpoint --run demo --step \"<the step just done>\" && git add {LEDGER}" in err
    assert 'SHIFT_SKIP="<reason>"' in err
    assert run_repo.head() == head


def test_a_checkpointed_change_passes(run_repo: Repo) -> None:
    checkpointed(run_repo)
    assert run_repo.commit("step one").returncode == 0
    assert run_repo.git("show", "HEAD:calc.py") == BROKEN


def test_rule_1_ledger_checkpointed_but_not_staged(run_repo: Repo) -> None:
    checkpointed(run_repo)
    run_repo.git("add", "calc.py")
    err = refused(commit(run_repo, "-m", "code only"))
    assert 1 in rules(err)
    assert f"fix: git add {LEDGER}" in err


def test_rule_2_checkpoint_made_before_head_moved(run_repo: Repo) -> None:
    checkpointed(run_repo)
    assert commit(run_repo, "--allow-empty", "-m", "HEAD moves").returncode == 0
    run_repo.git("add", "-A")
    err = refused(commit(run_repo, "-m", "late"))
    assert rules(err) == {2}
    assert "not on HEAD" in err


def test_rule_3_edited_after_the_checkpoint_and_missing_paths(run_repo: Repo) -> None:
    checkpointed(run_repo)
    run_repo.write("calc.py", BROKEN + "# later\n")
    run_repo.write("extra.py", "X = 1\n")
    run_repo.git("add", "-A")
    err = refused(commit(run_repo, "-m", "stale"))
    assert rules(err) == {3}
    assert re.search(r"missing from the checkpoint.*\n\s+extra\.py", err)
    assert re.search(r"edited after the checkpoint.*\n\s+calc\.py", err)


def test_rule_3_part_of_a_file_staged_gets_a_fix_that_works(run_repo: Repo) -> None:
    """`git add -p`: the index holds part of a file the checkpoint recorded whole. The checkpoint fix alone would
    refuse again; the printed alternative (stage it whole) passes."""
    checkpointed(run_repo)
    run_repo.git("add", LEDGER)
    whole = run_repo.read("calc.py")
    run_repo.write("calc.py", whole.replace("return a + b\n\n\ndef sub", "return b + a\n\n\ndef sub"))
    run_repo.git("add", "calc.py")  # staged: a version between HEAD's and the checkpoint's
    run_repo.write("calc.py", whole)
    err = refused(commit(run_repo, "-m", "part"))
    assert rules(err) == {3} and "only part of the file staged" in err
    fix = re.search(r"stage it whole \((git add -- [^)]+)\)", err)
    assert fix and fix.group(1) == "git add -- calc.py"
    run_repo.git(*fix.group(1).split()[1:])
    assert commit(run_repo, "-m", "whole").returncode == 0


def test_rule_3_a_staged_deletion_must_be_checkpointed_too(run_repo: Repo) -> None:
    run_repo.ok("checkpoint", "--step", "nothing yet")
    (run_repo.path / "conftest.py").unlink()
    run_repo.git("add", "-A")
    assert "conftest.py" in refused(commit(run_repo, "-m", "delete"))
    run_repo.ok("checkpoint", "--step", "deleted conftest")
    run_repo.git("add", "-A")
    assert commit(run_repo, "-m", "delete").returncode == 0


def test_commit_dash_a_is_judged_on_the_index_git_hands_the_hook(run_repo: Repo) -> None:
    checkpointed(run_repo)
    run_repo.write("calc.py", BROKEN + "# after the checkpoint\n")
    # nothing is staged in .git/index: only the index of `commit -a` shows the late edit
    err = refused(commit(run_repo, "-a", "-m", "all"))
    assert "calc.py" in err and 3 in rules(err)
    run_repo.ok("checkpoint", "--step", "again")
    assert commit(run_repo, "-a", "-m", "all").returncode == 0


def test_commit_with_paths_is_judged_on_the_index_git_hands_the_hook(run_repo: Repo) -> None:
    checkpointed(run_repo)
    run_repo.git("add", "-A")  # .git/index now holds exactly the checkpointed content
    run_repo.write("calc.py", BROKEN + "# after the checkpoint\n")
    err = refused(commit(run_repo, "-m", "paths", "--", "calc.py", LEDGER))
    assert "calc.py" in err and 3 in rules(err)


def test_rule_4_invalid_newer_and_secret_bearing_ledgers(run_repo: Repo) -> None:
    checkpointed(run_repo)
    edit_ledger(run_repo, lambda d: d.update(status="bogus"))
    run_repo.git("add", "-A")
    err = refused(commit(run_repo, "-m", "invalid"))
    assert 4 in rules(err) and "not a valid ledger" in err and "$.status" in err

    edit_ledger(run_repo, lambda d: d.update(status="active", schema_version=ledger.SCHEMA_VERSION + 1))
    run_repo.git("add", "-A")
    err = refused(commit(run_repo, "-m", "newer"))
    assert 4 in rules(err) and "newer" in err and "pip install -U shiftgit" in err

    token = "ghp_" + "Q7fK2xLm9Pz4Rt8Wv1Ny6Bc3Hd5Js0Ga2Ek7"
    edit_ledger(run_repo, lambda d: d.update(schema_version=ledger.SCHEMA_VERSION, note=f"token {token}"))
    run_repo.git("add", "-A")
    err = refused(commit(run_repo, "-m", "secret"))
    assert 4 in rules(err) and "secret" in err
    assert token not in err
    assert token not in run_repo.git("log", "-p", "--all")


def test_a_secret_is_refused_even_when_only_shift_files_are_staged(run_repo: Repo) -> None:
    token = "ghp_" + "Q7fK2xLm9Pz4Rt8Wv1Ny6Bc3Hd5Js0Ga2Ek7"
    edit_ledger(run_repo, lambda d: d.update(note=f"token {token}"))
    run_repo.git("add", "-A")
    assert 4 in rules(refused(commit(run_repo, "-m", "only .shift")))


def test_rule_5_a_hand_dropped_constraint_or_rewritten_contract(run_repo: Repo) -> None:
    checkpointed(run_repo)
    edit_ledger(run_repo, lambda d: (d.update(constraints=[]), d["contract"].update(goal="anything goes")))
    run_repo.git("add", "-A")
    err = refused(commit(run_repo, "-m", "loosen"))
    assert rules(err) == {5}
    assert "never edit tests/" in err and "was dropped" in err
    assert "contract field goal was changed without an amendment" in err
    assert "shiftgit constraint lift" in err and "shiftgit amend --run demo --goal" in err


def test_rule_5_lets_recorded_lifts_and_amendments_through(run_repo: Repo) -> None:
    constraint = run_repo.ledger("demo")["constraints"][0]["id"]
    run_repo.ok("constraint", "lift", constraint, "--reason", "tests are being rewritten")
    run_repo.ok("amend", "--goal", "make calc correct and fast", "--token-budget", "500", "--reason", "bigger")
    checkpointed(run_repo)
    assert run_repo.commit("lifted and amended").returncode == 0


def test_rule_5_effects_approvals_and_kept_evidence(run_repo: Repo) -> None:
    effect = {"key": "migrate-1", "kind": "migration", "reversibility": "irreversible", "state": "completed",
              "created_at": "2026-01-01T00:00:00Z"}
    approval = {"key": "migrate-1", "state": "granted", "by": "ada", "decided_at": "2026-01-01T00:00:00Z",
                "requested_at": "2026-01-01T00:00:00Z"}
    checkpointed(run_repo)
    edit_ledger(run_repo, lambda d: d.update(effects=[effect], approvals=[approval]))
    assert run_repo.commit("a migration ran", env={"SHIFT_SKIP": "effects recorded by hand"}).returncode == 0

    run_repo.write("calc.py", BROKEN + "# two\n")
    run_repo.ok("checkpoint", "--step", "step two")
    edit_ledger(run_repo, lambda d: (d.update(effects=[{**effect, "state": "planned"}], approvals=[])))
    run_repo.git("add", "-A")
    err = refused(commit(run_repo, "-m", "forget"))
    assert "effect migrate-1 was rewritten (state completed -> planned)" in err
    assert "the approval of migrate-1 (granted) was dropped" in err

    run_repo.git("checkout", "HEAD", "--", LEDGER)  # the committed checkpoint, kept: its evidence must stay
    edit_ledger(run_repo, lambda d: d["checkpoint"]["files"].clear())
    run_repo.git("add", "-A")
    err = refused(commit(run_repo, "-m", "tamper"))
    assert 5 in rules(err) and "evidence was rewritten (files)" in err


def test_rule_6_scope(repo: Repo) -> None:
    repo.ok("init", "--hooks", "git")
    assert repo.commit("init").returncode == 0
    repo.ok("start", "scoped", "--goal", "g", "--stop-when", "s", "--scope", "calc.py", "--scope", "tests/**")
    assert repo.commit("start").returncode == 0
    repo.write("README.md", "# out of scope\n")
    repo.write("tests/test_more.py", "")
    repo.ok("checkpoint", "--step", "touched the readme")
    repo.git("add", "-A")
    err = refused(commit(repo, "-m", "scope"))
    assert rules(err) == {6}
    assert re.search(r"outside run scoped's scope.*\n\s+README\.md\n", err)
    assert "tests/test_more.py" not in err
    assert "git restore --staged -- README.md" in err
    assert "shiftgit amend --run scoped --scope calc.py --scope 'tests/**' --scope README.md" in err


def test_rule_7_require_fresh_checks(run_repo: Repo) -> None:
    config = run_repo.path / ".shift/config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "require_fresh_checks": True}))
    assert run_repo.commit("require fresh checks", env={"SHIFT_SKIP": "config"}).returncode == 0
    run_repo.ok("check", "--name", "ok", "--", "true")
    checkpointed(run_repo)  # the check ran before the edit: stale
    run_repo.git("add", "-A")
    err = refused(commit(run_repo, "-m", "stale evidence"))
    assert rules(err) == {7} and "shiftgit check --run demo --name ok -- true" in err
    run_repo.ok("check", "--name", "ok", "--", "true")
    run_repo.ok("checkpoint", "--step", "checked")
    run_repo.write("notes.txt", "left out of the commit\n")
    run_repo.ok("checkpoint", "--step", "checked, with notes")
    run_repo.ok("check", "--name", "ok", "--", "true")
    run_repo.ok("checkpoint", "--step", "checked again")
    run_repo.git("add", "calc.py", LEDGER)
    err = refused(commit(run_repo, "-m", "partial"))
    assert rules(err) == {7} and "notes.txt" in err
    run_repo.git("add", "-A")
    assert commit(run_repo, "-m", "all of it").returncode == 0


def test_several_broken_rules_are_all_reported(repo: Repo) -> None:
    repo.ok("init", "--hooks", "git")
    assert repo.commit("init").returncode == 0
    repo.ok("start", "multi", "--goal", "g", "--stop-when", "s", "--scope", "calc.py", "--constraint", "keep it")
    assert repo.commit("start").returncode == 0
    repo.write("calc.py", BROKEN)
    repo.write("README.md", "# out of scope\n")
    repo.ok("checkpoint", "--run", "multi", "--step", "s1")
    repo.write("calc.py", BROKEN + "# late\n")
    path = repo.ledger_path("multi")
    document = json.loads(path.read_text())
    document["constraints"] = []
    path.write_text(json.dumps(document, indent=2))
    repo.git("add", "-A")
    err = refused(commit(repo, "-m", "everything wrong"))
    assert rules(err) == {3, 5, 6}
    assert "calc.py" in err and "README.md" in err and "keep it" in err


def test_no_active_run_no_gate_and_shift_run_names_one(run_repo: Repo) -> None:
    (run_repo.path / ".git" / "shift" / "active").unlink()  # no active run in this worktree
    run_repo.write("calc.py", BROKEN)
    run_repo.git("add", "-A")
    assert 2 in rules(refused(commit(run_repo, "-m", "named", env={"SHIFT_RUN": "demo"})))
    assert commit(run_repo, "-m", "a human edit").returncode == 0


def test_shift_skip_lets_a_commit_through(run_repo: Repo) -> None:
    run_repo.write("calc.py", BROKEN)
    run_repo.git("add", "-A")
    proc = commit(run_repo, "-m", "hotfix", env={"SHIFT_SKIP": "prod is down"})
    assert proc.returncode == 0 and "prod is down" in proc.stderr


def test_hooks_leave_the_files_and_the_index_alone(run_repo: Repo) -> None:
    checkpointed(run_repo)
    run_repo.write("scratch.txt", "untracked, unstaged\n")
    run_repo.git("add", "calc.py")
    before = (run_repo.git("status", "--porcelain"), run_repo.git("ls-files", "-s"), run_repo.read("calc.py"))
    refused(commit(run_repo, "-m", "ledger missing"))
    assert (run_repo.git("status", "--porcelain"), run_repo.git("ls-files", "-s"), run_repo.read("calc.py")) == before
    assert run_repo.git("stash", "list") == ""
    run_repo.git("add", LEDGER)
    assert commit(run_repo, "-m", "ok").returncode == 0
    assert run_repo.read("scratch.txt") == "untracked, unstaged\n"
    assert run_repo.git("status", "--porcelain") == "?? scratch.txt\n"


def test_ledgers_shiftgit_wrote_are_recorded_as_validated(run_repo: Repo) -> None:
    checkpointed(run_repo)
    blob = run_repo.git("hash-object", LEDGER).strip()
    git_dir = run_repo.git("rev-parse", "--absolute-git-dir").strip()
    assert blob in (run_repo.path / git_dir / "shift" / "validated").read_text().split()
    assert validated.known_of(run_repo.path / git_dir, [blob, blob[:20], "f" * 40]) == {blob}


def test_the_gate_finds_a_validated_id_only_as_a_whole_token(tmp_path: Path) -> None:
    one, two = "a" * 40, "b" * 64
    validated.record(tmp_path, [b"{}"])
    (tmp_path / "shift" / "validated").write_text(f"{one} {two} written:{one}\nconfig-{two[:40]}\n")
    assert validated.known_of(tmp_path, [one, two, two[:40], one[1:], "written:" + one]) == {one, two, "written:" + one}
    assert validated.known_of(tmp_path, [two[:40]]) == frozenset() == validated.known_of(tmp_path / "none", [one])


# -- the pure rules ---------------------------------------------------------------------------------

def _doc(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema_version": 1, "run": "r", "created_at": "t", "updated_at": "t", "status": "active",
        "contract": {"goal": "g", "stop_when": "s", "scope": [], "budgets": {"tokens": 10}},
        "constraints": [{"id": "c1", "text": "rule", "status": "active", "added_at": "t"}],
        "amendments": [], "effects": [], "approvals": [],
        "checkpoint": {"id": "p1", "seq": 1, "at": "t", "base": "a" * 40,
                       "files": [{"path": "x.py", "id": "b" * 40, "status": "M"}], "checks": []},
    }
    base.update(changes)
    return base


def _staging(new: dict[str, Any], old: dict[str, Any] | None = None, **kw: Any) -> gate.Staging:
    staged = json.dumps(new).encode()
    ledger = gate.Ledger("r", ".shift/runs/r/ledger.json", staged, "f" * 40,
                         json.dumps(old).encode() if old else None, True)
    fields: dict[str, Any] = {"run": "r", "head": "a" * 40, "paths": {"x.py": "b" * 40}, "ledgers": {"r": ledger},
                              "config": {}, "validated": frozenset({"f" * 40})}
    fields.update(kw)
    return gate.Staging(**fields)


def test_judge_passes_a_sound_commit_and_names_each_rule() -> None:
    assert gate.judge(_staging(_doc(), _doc())) == []
    found = gate.judge(_staging(_doc(constraints=[]), _doc(), head="c" * 40, paths={"x.py": "d" * 40, "y": None}))
    assert sorted({p.rule for p in found}) == [2, 3, 5]


def test_ledgerdiff_allows_only_recorded_changes() -> None:
    old = _doc()
    lifted = _doc(constraints=[{**old["constraints"][0], "status": "lifted", "reason": "done", "lifted_at": "u"}])
    assert ledgerdiff.findings(old, lifted, "r") == []
    silent = _doc(constraints=[{**old["constraints"][0], "status": "lifted"}])
    assert [f.kind for f in ledgerdiff.findings(old, silent, "r")] == ["constraint"]
    amended = _doc(contract={**old["contract"], "budgets": {"tokens": 99}},
                   amendments=[{"id": "a1", "at": "u", "field": "tokens", "old": 10, "new": 99, "reason": "more"}])
    assert ledgerdiff.findings(old, amended, "r") == []
    wrong = _doc(contract={**old["contract"], "budgets": {"tokens": 98}}, amendments=amended["amendments"])
    assert [f.kind for f in ledgerdiff.findings(old, wrong, "r")] == ["contract"]
    assert [f.kind for f in ledgerdiff.findings(amended, old, "r")] == ["contract", "amendment"]
    assert [f.kind for f in ledgerdiff.findings(old, None, "r")] == ["ledger"]


@pytest.mark.parametrize(("before", "after", "ok"), [
    ("attempted", "completed", True), ("failed", "attempted", True), ("completed", "compensated", True),
    ("completed", "failed", False), ("compensated", "completed", False), ("unknown", "completed", True),
])
def test_ledgerdiff_effect_states(before: str, after: str, ok: bool) -> None:
    effect = {"key": "k", "kind": "deploy", "reversibility": "reversible", "created_at": "t"}
    old = _doc(effects=[{**effect, "state": before}])
    new = _doc(effects=[{**effect, "state": after, "attempts": 2}])
    assert (ledgerdiff.findings(old, new, "r") == []) is ok


def test_ledgerdiff_approval_decisions_change_only_with_history() -> None:
    granted = {"key": "k", "state": "granted", "by": "ada", "decided_at": "t1", "requested_at": "t0"}
    denied = {**granted, "state": "denied", "decided_at": "t2"}
    old = _doc(approvals=[granted])
    assert [f.kind for f in ledgerdiff.findings(old, _doc(approvals=[denied]), "r")] == ["approval"]
    kept = {**denied, "history": [{"state": "granted", "by": "ada", "decided_at": "t1"}]}
    assert ledgerdiff.findings(old, _doc(approvals=[kept]), "r") == []


def test_the_hook_path_keeps_the_run_id_pattern_of_the_model() -> None:
    assert gitview.RUN_ID_PATTERN == ledger.RUN_ID_PATTERN  # rawledger.RUN_ID_PATTERN
    pattern = re.compile(ledger.RUN_ID_PATTERN)
    samples = ["a", "fix-login", "0.9_x", "a" * 64, "a" * 65, "", "-a", ".a", "A", "a/b", "a b", "é", "a\n", "run!"]
    assert [gitview.is_run_id(s) for s in samples] == [pattern.fullmatch(s) is not None for s in samples]


def test_a_same_second_same_size_edit_is_in_the_checkpoint(repo: Repo) -> None:
    """The gate trusts the checkpoint's files: an edit right after `git add` must not look unchanged to git."""
    repo.ok("init", "--hooks", "none")
    repo.ok("start", "quick", "--goal", "g", "--stop-when", "s")
    for i in range(6):
        repo.write("calc.py", BROKEN.replace("a + b", f"a + {i % 10}", 1))
        repo.commit(f"round {i}")
        repo.write("calc.py", BROKEN.replace("a + b", f"a - {i % 10}", 1))  # same size, same second
        repo.ok("checkpoint", "--run", "quick", "--step", f"round {i}")
        files = repo.ledger("quick")["checkpoint"]["files"]
        assert [f["path"] for f in files] == ["calc.py"], (i, files)
