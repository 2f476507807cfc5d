"""`check --keep-output` and `shiftgit output`: a check's whole output, redacted, kept in git."""

from __future__ import annotations

import sys

from conftest import Repo

TOKEN = "ghp_" + "Kq7Rt2Lm9Pz4Xw8Vn1Ny6Bc3Hd5Js0Ga2Ek7"
LOUD = [sys.executable, "-c", "import os\nfor i in range(20000): print(f'line {i:05d} ' + 'x' * 60)\n"
        "print('token: ' + os.environ.get('LEAK', ''))\nraise SystemExit(3)"]


def test_the_whole_output_is_kept_redacted_and_printed_back(run_repo: Repo) -> None:
    proc = run_repo.sg("check", "--name", "loud", "--keep-output", "-q", "--", *LOUD, env={"LEAK": TOKEN})
    assert proc.returncode == 3 and "shiftgit output k-" in proc.stderr
    check = run_repo.ledger("demo")["pending_checks"][-1]
    blob = check["output_blob"]
    assert check["output_bytes"] > 1_000_000 and len(check["output_tail"]) < 10_000  # the ledger keeps the tail
    ref = "refs/shift/outputs/demo"
    assert run_repo.git("rev-parse", f"{ref}:{check['id']}").strip() == blob
    shown = run_repo.sg("output", check["id"])
    assert shown.returncode == 0
    assert shown.stdout.startswith("line 00000 ") and "line 19999 " in shown.stdout
    assert TOKEN not in shown.stdout and TOKEN[4:] not in shown.stdout and "token: [REDACTED" in shown.stdout
    assert run_repo.run(["git", "grep", "-F", TOKEN[4:], ref]).returncode == 1
    assert run_repo.git("status", "--porcelain", "--", ".shift").strip()  # only the ledger changed in the tree


def test_each_kept_output_adds_to_the_runs_ref(run_repo: Repo) -> None:
    for n in (1, 2):
        run_repo.ok("check", "--name", f"c{n}", "--keep-output", "-q", "--", sys.executable, "-c", f"print({n})")
    first, second = [c["id"] for c in run_repo.ledger("demo")["pending_checks"]]
    ref = "refs/shift/outputs/demo"
    assert sorted(run_repo.git("ls-tree", "--name-only", ref).split()) == sorted([first, second])
    assert run_repo.git("rev-list", "--count", ref).strip() == "2"
    run_repo.ok("checkpoint", "--step", "two checks")  # the checks move into the checkpoint; output still found
    assert run_repo.sg("output", first).stdout == "1\n"
    (run_repo.path / ".shift/runs/demo/ledger.json").unlink()  # even with no ledger, the ref has it
    assert run_repo.sg("output", second).stdout == "2\n"


def test_a_check_without_kept_output_or_an_unknown_id_is_one_clear_line(run_repo: Repo) -> None:
    run_repo.ok("check", "--name", "plain", "-q", "--", sys.executable, "-c", "print('hi')")
    check = run_repo.ledger("demo")["pending_checks"][-1]
    assert check.get("output_blob") is None
    for name, why in ((check["id"], "without --keep-output"), ("k-nope", "no run here recorded it")):
        proc = run_repo.sg("output", name)
        assert proc.returncode == 2 and why in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_crafted_output_blob_naming_a_revision_prints_nothing_of_it(run_repo: Repo) -> None:
    """The record's `output_blob` is a blob id: a ledger from elsewhere naming `HEAD:calc.py` shows no file."""
    import json

    run_repo.ok("check", "--name", "quiet", "--", sys.executable, "-c", "pass")
    document = run_repo.ledger("demo")
    check = document["pending_checks"][-1]
    check["output_blob"] = "HEAD:calc.py"
    run_repo.ledger_path("demo").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    proc = run_repo.sg("output", check["id"])
    assert proc.returncode == 2 and "def add" not in proc.stdout and "no kept output" in proc.stderr, proc.stdout
