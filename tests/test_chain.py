"""The tamper-evident chain: `verify --chain` and the commit gate name the checkpoint a hand edit breaks.

Arrange with shiftgit and git, tamper by hand (as a person or a hostile clone would), then ask
`verify --chain` and `git commit`; nothing either of them reads is rewritten.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo


def step(repo: Repo, n: int, *, commit: bool = True) -> None:
    repo.write("calc.py", repo.read("calc.py") + f"# step {n}\n")
    repo.ok("checkpoint", "--step", f"step {n}")
    if commit:
        assert repo.commit(f"step {n}").returncode == 0


def edit_ledger(repo: Repo, change: Any) -> bytes:
    ledger = repo.ledger("demo")
    change(ledger)
    repo.ledger_path("demo").write_text(json.dumps(ledger, indent=2, sort_keys=True) + "\n")
    return repo.ledger_path("demo").read_bytes()


def chain(repo: Repo) -> tuple[int, Any]:
    proc = repo.sg("verify", "--chain", "demo", "--json")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def refused_commit(repo: Repo) -> str:
    repo.write("calc.py", repo.read("calc.py") + "# more\n")
    proc = repo.commit("after the hand edit")
    assert proc.returncode == 1, proc.stderr
    assert repo.git("status", "--porcelain").strip(), "the refused commit left the change staged"
    return proc.stderr


def test_an_untouched_chain_holds_across_checkpoints_commits_notes_and_ledger_refs(run_repo: Repo) -> None:
    for n in range(1, 4):
        step(run_repo, n)
    step(run_repo, 4, commit=False)
    code, report = chain(run_repo)
    assert code == 0 and report["result"] == "intact" and report["first"] is None, report
    assert report["checkpoints"] == 4 and report["records"] >= 6
    ledger = run_repo.ledger("demo")
    assert [h["epoch"] for h in ledger["history"]] == [1, 1, 1] and ledger["checkpoint"]["epoch"] == 1
    assert ledger["history"][0]["prev"] is None and ledger["checkpoint"]["prev"] == ledger["history"][-1]["digest"]
    text = run_repo.sg("verify", "--chain")
    assert text.returncode == 0 and "intact (4 checkpoint(s)" in text.stdout


def test_a_checkpoint_edited_after_the_fact_is_named_by_verify_and_the_gate(run_repo: Repo) -> None:
    step(run_repo, 1)
    step(run_repo, 2, commit=False)
    forged = edit_ledger(run_repo, lambda d: d["checkpoint"].update(step="all tests pass"))
    code, report = chain(run_repo)
    assert code == 1 and report["first"]["seq"] == 2 and "rewritten after the fact" in report["first"]["what"]
    assert "work tree" in report["first"]["where"]
    stderr = refused_commit(run_repo)
    assert "[rule 5]" in stderr and "checkpoint #2: differs from the checkpoint" in stderr
    assert run_repo.ledger_path("demo").read_bytes() == forged, "nothing is rewritten"


def test_a_dropped_history_entry_is_named(run_repo: Repo) -> None:
    for n in range(1, 4):
        step(run_repo, n)
    edit_ledger(run_repo, lambda d: d.update(history=[h for h in d["history"] if h["seq"] != 2]))
    code, report = chain(run_repo)
    assert code == 1 and "checkpoint #2 is missing from the history (dropped)" in report["first"]["what"]
    assert report["first"]["seq"] == 3
    stderr = refused_commit(run_repo)
    assert "checkpoint #3: checkpoint #2 is missing from the history (dropped)" in stderr


@pytest.mark.parametrize("where", ["checkpoint", "lease"])
def test_a_forged_epoch_is_named_by_verify_and_the_gate(run_repo: Repo, where: str) -> None:
    step(run_repo, 1)
    step(run_repo, 2)
    if where == "checkpoint":
        edit_ledger(run_repo, lambda d: d["checkpoint"].update(epoch=7))
        expected = "checkpoint #2: claims owner epoch 7, which no takeover in the lease records (a forged epoch)"
    else:
        edit_ledger(run_repo, lambda d: d["lease"].update(epoch=7))
        expected = "the lease claims owner epoch 7, which no takeover records (a forged epoch)"
    code, report = chain(run_repo)
    assert code == 1 and any(expected.split(": ", 1)[-1] in b["what"] for b in report["breaks"]), report
    assert expected in refused_commit(run_repo)


def test_each_checkpoint_links_the_ledger_ref_commit_it_was_written_onto(run_repo: Repo) -> None:
    for n in range(1, 4):
        step(run_repo, n, commit=n < 3)
    ref = "refs/shift/ledgers/demo"
    claim, *commits = run_repo.git("rev-list", "--reverse", ref).split()
    points = [json.loads(run_repo.git("show", f"{c}:ledger.json"))["checkpoint"] for c in commits]
    assert [p["ledger"] for p in points] == [claim, *commits[:2]]  # each onto the ledger before it
    ledger = run_repo.ledger("demo")
    assert [h["ledger"] for h in ledger["history"]] == [claim, commits[0]]
    assert chain(run_repo)[0] == 0


@pytest.mark.parametrize("link", ["head", "own"])
def test_a_hand_edited_ledger_link_is_named_by_verify_and_the_gate(run_repo: Repo, link: str) -> None:
    step(run_repo, 1)
    step(run_repo, 2, commit=False)
    own = run_repo.git("rev-parse", "refs/shift/ledgers/demo").strip()  # the commit holding checkpoint #2 itself
    forged = {"head": run_repo.head(), "own": own}[link]
    written = edit_ledger(run_repo, lambda d: d["checkpoint"].update(ledger=forged))
    code, report = chain(run_repo)
    assert code == 1 and report["first"]["seq"] == 2, report
    expected = "not in the ledger ref's history" if link == "head" else "already holds checkpoint #2"
    named = [b for b in report["breaks"] if "written onto ledger-ref commit" in b["what"]]
    assert named and expected in named[0]["what"] and "work tree" in named[0]["where"], report
    assert named[0]["seq"] == 2
    stderr = refused_commit(run_repo)
    assert "[rule 5]" in stderr and "checkpoint #2" in stderr
    assert run_repo.ledger_path("demo").read_bytes() == written, "nothing is rewritten"


def test_a_rewritten_ledger_ref_history_is_caught(run_repo: Repo) -> None:
    for n in range(1, 4):
        step(run_repo, n, commit=False)  # checkpoints #1 and #2 live only on refs/shift/ledgers/demo
    ref = "refs/shift/ledgers/demo"
    claim, *commits = run_repo.git("rev-list", "--reverse", ref).split()  # the first write's owner-epoch claim
    assert len(commits) == 3 and "owner epoch 1" in run_repo.git("log", "-1", "--format=%s", claim)
    first = json.loads(run_repo.git("show", f"{commits[0]}:ledger.json"))
    first["checkpoint"]["step"] = "a different first step"
    blob = run_repo.run(["git", "hash-object", "-w", "--stdin"],
                        input=json.dumps(first, indent=2, sort_keys=True) + "\n").stdout.strip()
    tree = run_repo.run(["git", "mktree"], input=f"100644 blob {blob}\tledger.json\n").stdout.strip()
    parent = run_repo.git("commit-tree", tree, "-p", claim, "-m", "shiftgit ledger: demo checkpoint 1").strip()
    for commit in commits[1:]:
        parent = run_repo.git("commit-tree", f"{commit}^{{tree}}", "-p", parent, "-m", "rewritten").strip()
    run_repo.git("update-ref", ref, parent)
    code, report = chain(run_repo)
    assert code == 1 and report["first"]["seq"] == 1 and ref in report["first"]["where"] + report["first"]["what"]
    assert run_repo.git("rev-parse", ref).strip() == parent, "verify --chain rewrote nothing"


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed: cannot make an ssh key")
def test_with_an_ssh_signing_key_snapshot_and_ledger_commits_are_signed_and_checked(run_repo: Repo,
                                                                                    tmp_path: Path) -> None:
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ada", "-f", str(key)], check=True)
    signers = tmp_path / "allowed_signers"
    signers.write_text(f"ada@example.com {(tmp_path / 'key.pub').read_text()}")
    for name, value in (("gpg.format", "ssh"), ("user.signingkey", str(key)),
                        ("gpg.ssh.allowedSignersFile", str(signers))):
        run_repo.git("config", name, value)
    step(run_repo, 1)
    step(run_repo, 2, commit=False)
    for ref in ("refs/shift/ledgers/demo", "refs/shift/snapshots/demo"):
        assert "gpgsig" in run_repo.git("cat-file", "commit", ref)
        run_repo.git("verify-commit", ref)  # git itself accepts the signature
    code, report = chain(run_repo)
    assert code == 0 and report["signatures"]["good"] >= 4 and report["signatures"]["bad"] == 0, report
    body = run_repo.git("cat-file", "commit", "refs/shift/ledgers/demo").replace("checkpoint 2", "checkpoint 9")
    forged = run_repo.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], input=body).stdout.strip()
    run_repo.git("update-ref", "refs/shift/ledgers/demo", forged)
    code, report = chain(run_repo)
    assert code == 1 and any("bad signature" in b["what"] for b in report["breaks"]), report


def test_the_digest_ignores_empty_fields_a_later_shiftgit_adds_and_nothing_else() -> None:
    from shiftgit.ledger.chain import digest

    point = {"id": "p1", "seq": 1, "at": "2026-01-01T00:00:00Z", "step": "a", "checks": [{"exit_code": 0}]}
    assert digest(point) == digest({**point, "turn": None, "unrecorded": [], "milestone": False, "run": "demo"})
    assert digest(point) != digest({**point, "step": "b"})
    assert digest(point) != digest({**point, "checks": [{"exit_code": 1}]})


def test_the_merge_driver_keeps_the_newer_owner_lease_and_every_epoch() -> None:
    from shiftgit.ledger.merge import _lease

    one = {"epoch": 1, "holder": {"host": "a"}, "renewed_at": "T1", "epochs": [{"epoch": 1, "at": "T0"}]}
    two = {"epoch": 2, "holder": {"host": "b"}, "renewed_at": "T0", "epochs": [{"epoch": 1, "at": "T0"},
                                                                              {"epoch": 2, "at": "T0"}]}
    merged = _lease(one, two)
    assert merged["holder"] == {"host": "b"} and [e["epoch"] for e in merged["epochs"]] == [1, 2]
    assert _lease(one, None) == one
