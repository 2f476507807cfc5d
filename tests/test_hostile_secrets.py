"""Nothing secret leaves the machine: snapshots, rescues and pushes leave out what the scanner finds (issue 11).

Each test runs the real CLI and real git; what left (or did not) is read back with git, never with shiftgit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CALC, Repo

# Tokens in their real formats, built at run time so that this file holds none.
GITHUB = "ghp" + "_" + "Zq7Xw2Lm9Pk4Rt6Yb1" + "Nc8Vd3Hs5Jf0Ga7Ue2"
AWS_ID = "AKIA" + "QX7ZR4MPLK2WN8TB"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzEXAMPLEKEY9"


def objects(repo: Repo, revs: list[str], git_dir: Path | None = None) -> bytes:
    """The content of every object reachable from `revs`."""
    where = [f"--git-dir={git_dir}"] if git_dir else []
    listed = subprocess.run(["git", *where, "rev-list", "--objects", *revs], cwd=repo.path, capture_output=True,
                            check=True).stdout
    ids = b"\n".join(line.split(b" ", 1)[0] for line in listed.splitlines() if line.strip())
    return subprocess.run(["git", *where, "cat-file", "--batch"], cwd=repo.path, input=ids + b"\n",
                          capture_output=True, check=True).stdout


def every_object(git_dir: Path) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "--batch-all-objects", "--batch"],
                          capture_output=True, check=True).stdout


def refs(repo: Repo, prefix: str) -> list[str]:
    return repo.git("for-each-ref", "--format=%(refname)", prefix).split()


def bare_remote(repo: Repo, tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo.git("remote", "add", "origin", str(remote))
    repo.git("push", "-q", "origin", "main")
    return remote


def test_a_checkpoint_withholds_token_files_from_its_snapshot_and_says_so(run_repo: Repo) -> None:
    run_repo.write(".env", f"AWS_ACCESS_KEY_ID={AWS_ID}\nAWS_SECRET_ACCESS_KEY={AWS_SECRET}\n")
    run_repo.write("local-token.txt", f"GITHUB_TOKEN={GITHUB}\n")
    run_repo.write("calc.py", CALC + "\n# step\n")
    proc = run_repo.ok("checkpoint", "--step", "beside two secret files")
    assert ".env" in proc.stderr and "local-token.txt" in proc.stderr and "rollback cannot restore" in proc.stderr
    point = run_repo.ledger("demo")["checkpoint"]
    assert {w["path"]: w["rule"] for w in point["withheld"]} == {".env": "aws-access-key",
                                                                 "local-token.txt": "github-token"}
    snapshot = run_repo.git("ls-tree", "-r", "--name-only", "refs/shift/snapshots/demo").split()
    assert "calc.py" in snapshot and ".env" not in snapshot and "local-token.txt" not in snapshot
    content = objects(run_repo, refs(run_repo, "refs/shift/"))
    assert GITHUB.encode() not in content and AWS_ID.encode() not in content and AWS_SECRET.encode() not in content
    assert {f["path"] for f in point["files"]} >= {".env", "local-token.txt", "calc.py"}  # the record stays whole


def test_files_heads_already_holds_and_random_looking_checksums_stay_in_the_snapshot(run_repo: Repo) -> None:
    run_repo.write("fixtures/committed-token.txt", f"token={GITHUB}\n")
    assert run_repo.commit("a fixture the team committed", env={"SHIFT_SKIP": "fixture"}).returncode == 0
    run_repo.write("go.sum", "golang.org/x/text v0.3.0 h1:g61tztE5qeGQ89tm6NTjjM9VPIm088od1l6aSorWRWG=\n")
    run_repo.write("calc.py", CALC + "\n# step\n")
    run_repo.ok("checkpoint", "--step", "nothing to withhold")
    assert "withheld" not in run_repo.ledger("demo")["checkpoint"]
    snapshot = run_repo.git("ls-tree", "-r", "--name-only", "refs/shift/snapshots/demo").split()
    assert {"go.sum", "fixtures/committed-token.txt"} <= set(snapshot)


def test_rollback_keeps_no_secret_in_its_rescue_and_says_what_it_cannot_restore(run_repo: Repo) -> None:
    run_repo.write(".env", f"GITHUB_TOKEN={GITHUB}\n")
    run_repo.write("calc.py", CALC + "\n# step\n")
    run_repo.ok("checkpoint", "--step", "a step beside a .env")
    run_repo.write(".env", f"GITHUB_TOKEN={GITHUB}\nMORE=1\n")  # changed after the checkpoint
    run_repo.write("new-secret.txt", f"token: {GITHUB}\n")  # added after it: rollback would remove it
    run_repo.write("calc.py", CALC + "\n# HALF-EDIT-8812\n")
    proc = run_repo.sg("rollback", "--yes", "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    left = {w["path"]: w["why"] for w in report["withheld"]}
    assert "withheld it from its snapshot" in left[".env"] and "left as it is" in left["new-secret.txt"]
    assert run_repo.read(".env").endswith("MORE=1\n") and run_repo.read("new-secret.txt")  # untouched
    assert "HALF-EDIT-8812" not in run_repo.read("calc.py")  # the rest was rolled back
    rescue = report["rescue"]
    assert b"HALF-EDIT-8812" in objects(run_repo, [rescue])
    assert GITHUB.encode() not in objects(run_repo, refs(run_repo, "refs/shift/"))
    proc = run_repo.sg("rollback", "--yes")
    assert "not rolled back: .env" in proc.stderr and "not rolled back: new-secret.txt" in proc.stderr


def test_sync_pushes_snapshots_without_the_secrets_they_left_out(run_repo: Repo, tmp_path: Path) -> None:
    remote = bare_remote(run_repo, tmp_path)
    run_repo.write(".env", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n")
    run_repo.write("calc.py", CALC + "\n# step\n")
    run_repo.ok("checkpoint", "--step", "step")
    assert run_repo.commit("step").returncode == 0
    report = run_repo.json("sync", "origin")
    assert "refs/shift/snapshots/demo" in report["pushed"] and report["refused"] == {}
    assert AWS_SECRET.encode() not in every_object(remote)


def test_sync_refuses_a_shift_ref_that_would_push_a_secret_and_pushes_the_rest(run_repo: Repo,
                                                                             tmp_path: Path) -> None:
    remote = bare_remote(run_repo, tmp_path)
    run_repo.write("calc.py", CALC + "\n# step\n")
    run_repo.ok("checkpoint", "--step", "a clean snapshot")
    blob = run_repo.run(["git", "hash-object", "-w", "--stdin"], input=f"key={GITHUB}\n").stdout.strip()
    tree = run_repo.run(["git", "mktree"], input=f"100644 blob {blob}\tleak.txt\n").stdout.strip()
    commit = run_repo.git("commit-tree", tree, "-p", "HEAD", "-m", "made elsewhere").strip()
    run_repo.git("update-ref", "refs/shift/rescue/demo/forged", commit)
    proc = run_repo.sg("sync", "origin", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["refused"] == {"refs/shift/rescue/demo/forged": [{"path": "leak.txt", "rule": "github-token"}]}
    assert "refs/shift/snapshots/demo" in report["pushed"]
    assert GITHUB.encode() not in every_object(remote)
    proc = run_repo.sg("sync", "origin")
    assert proc.returncode == 1 and "not pushed: refs/shift/rescue/demo/forged" in proc.stderr
    assert "leak.txt (github-token)" in proc.stderr and "Traceback" not in proc.stderr


def _ledger_with(repo: Repo, field: str, text: str) -> None:
    document = repo.ledger("demo")
    document["contract"][field] = text
    raw = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)
    repo.ledger_path("demo").write_text(raw.replace("ghp_", "\\u0067hp_"))


def test_the_gate_finds_a_token_spelled_with_json_escapes(run_repo: Repo) -> None:
    run_repo.write("calc.py", CALC + "\n# step\n")
    run_repo.ok("checkpoint", "--step", "step")
    _ledger_with(run_repo, "owner", GITHUB)
    assert "\\u0067hp_" in run_repo.ledger_path("demo").read_text()
    proc = run_repo.commit("step")
    assert proc.returncode == 1 and "github-token" in proc.stderr, proc.stderr


def test_with_no_active_run_a_staged_ledger_is_still_scanned(run_repo: Repo) -> None:
    run_repo.ok("stop", "--reason", "user_paused")
    assert run_repo.commit("paused").returncode == 0
    gitdir = Path(run_repo.git("rev-parse", "--absolute-git-dir").strip())
    (gitdir / "shift" / "active").unlink()
    _ledger_with(run_repo, "owner", GITHUB)
    proc = run_repo.commit("a ledger holding a token, no run active here")
    assert proc.returncode == 1 and "holds what looks like a secret" in proc.stderr, proc.stderr
    assert "github-token" in proc.stderr and "Traceback" not in proc.stderr
    run_repo.git("checkout", "HEAD", "--", ".shift")
    run_repo.write("README.md", "# calc\n")  # an idle commit passes
    assert run_repo.commit("idle").returncode == 0


def test_a_file_is_judged_by_the_blob_git_made_of_it_not_by_its_bytes_on_disk(run_repo: Repo) -> None:
    """The scanner reads a file from disk only when it hashes to the blob; a clean filter makes them differ."""
    run_repo.git("config", "filter.reveal.clean", f"sed s/PLACEHOLDER/{GITHUB}/")
    run_repo.write(".gitattributes", "secret.cfg filter=reveal\n")
    run_repo.write("secret.cfg", "key=PLACEHOLDER\n")  # harmless on disk, a token in git
    run_repo.write("calc.py", CALC + "\n# step\n")
    run_repo.ok("checkpoint", "--step", "a filter that writes a token")
    point = run_repo.ledger("demo")["checkpoint"]
    assert {w["path"]: w["rule"] for w in point["withheld"]} == {"secret.cfg": "github-token"}
    assert GITHUB.encode() not in objects(run_repo, refs(run_repo, "refs/shift/"))


def test_a_file_read_from_disk_is_read_whole_whatever_its_size(tmp_path: Path) -> None:
    """One read for a file under a chunk, every chunk of a larger one; bytes that are not the blob: None."""
    import os

    from shiftgit.git import secretscan
    from shiftgit.git.rawgit import object_id

    sizes = (0, 10, secretscan._READ - 1, secretscan._READ, secretscan._READ + 1, 3 * secretscan._READ + 7)
    for size in sizes:
        (tmp_path / f"f{size}").write_bytes(bytes(n % 251 for n in range(size)))
    root = os.open(tmp_path, os.O_RDONLY)
    try:
        for size in sizes:
            data = (tmp_path / f"f{size}").read_bytes()
            assert secretscan._file_blob(root, f"f{size}", object_id("blob", data, 40)) == data
            assert secretscan._file_blob(root, f"f{size}", object_id("blob", data + b"x", 40)) is None
    finally:
        os.close(root)


# A secret no token format or `key=value` rule finds on its own: only its place in the command line tells.
WORD = "open" + "sesame77"
SHORT = "Qz9" + "k"  # shorter than any `key=value` rule reads
LETTERS = "opense" + "same"


def _touch(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').close()"


def _forms(marker: Path) -> list[tuple[list[str], str]]:
    """(a command line, the secret in it); curl's is all letters: `-u user:pass` with a digit was found before."""
    py, touch, sh = sys.executable, _touch(marker), f"touch {marker}; exit 0"
    return [([py, "-c", touch, "--password", WORD], WORD), ([py, "-c", touch, "--password=" + SHORT], SHORT),
            ([py, "-c", touch, "--token", WORD], WORD), ([py, "-c", touch, "--api-key", WORD], WORD),
            (["env", "PGPASSWORD=" + SHORT, py, "-c", touch], SHORT),
            (["sh", "-c", f"{sh}; mysql -p{WORD} db"], WORD), (["sh", "-c", f"{sh}; sshpass -p {WORD} ssh host"], WORD),
            (["sh", "-c", f"{sh}; curl -u ada:{LETTERS} https://example.invalid/"], LETTERS),
            # the shell's own options before -c, and variables, options, programs and headers read since
            (["sh", "-e", "-c", f"{sh}; mysql -p{WORD} db"], WORD),
            (["bash", "-eu", "-c", f"{sh}; sshpass -p {WORD} true"], WORD),
            (["env", "MYSQL_PWD=" + SHORT, py, "-c", touch], SHORT), ([py, "-c", touch, "--api-secret", WORD], WORD),
            ([py, "-c", touch, "-passin", "pass:" + WORD], WORD),
            (["sh", "-c", f"{sh}; docker login -p {WORD} r"], WORD),
            ([py, "-c", touch, "-H", f"Authorization: Bearer {SHORT}123456"], SHORT + "123456")]


def _refused(repo: Repo, proc: subprocess.CompletedProcess[str], marker: Path, secret: str) -> None:
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "looks like a secret" in proc.stderr and "environment variable" in proc.stderr, proc.stderr
    assert secret not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
    assert not marker.exists(), "the command ran"
    assert secret.encode() not in (repo.path / ".shift").joinpath("runs", "demo", "ledger.json").read_bytes()
    assert secret.encode() not in every_object(repo.path / ".git")


@pytest.mark.parametrize("form", range(15))
def test_a_secret_as_a_word_of_a_checks_command_line_is_refused_before_it_runs(run_repo: Repo, tmp_path: Path,
                                                                              form: int) -> None:
    marker = tmp_path / "ran"
    argv, secret = _forms(marker)[form]
    _refused(run_repo, run_repo.sg("check", "--name", "leaky", "--", *argv), marker, secret)


def test_effects_services_and_contract_commands_refuse_a_secret_word_too(run_repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    py, touch = sys.executable, _touch(marker)
    _refused(run_repo, run_repo.sg("effect", "run", "--key", "deploy-1", "--kind", "deploy", "--reversible", "--",
                                   py, "-c", touch, "--api-key", WORD), marker, WORD)
    _refused(run_repo, run_repo.sg("effect", "run", "--key", "deploy-2", "--kind", "deploy", "--reversible",
                                   "--probe", f"mysql -p{WORD} -e 'select 1'", "--", py, "-c", touch), marker, WORD)
    _refused(run_repo, run_repo.sg("service", "start", "--name", "web", "--", py, "-c", touch, "--token", WORD),
             marker, WORD)
    _refused(run_repo, run_repo.sg("amend", "--accept", f"db=sshpass -p {WORD} ssh host true", "--reason", "r"),
             marker, WORD)
    _refused(run_repo, run_repo.sg("amend", "--inspect", f"curl -u ada:{WORD} https://example.invalid/",
                                   "--reason", "r"), marker, WORD)
    _refused(run_repo, run_repo.sg("effect", "run", "--key", "k1", "--kind", "x", "--repeatable", "--", "bash", "-eu",
                                   "-c", f"touch {marker}; sshpass -p {WORD} true"), marker, WORD)


def test_ordinary_options_that_take_a_word_still_run(run_repo: Repo, tmp_path: Path) -> None:
    """`-p` is a port, a plugin or a path for most programs; `--password` with nothing after it asks for one."""
    py = sys.executable
    for argv in ([py, "-c", "pass", "-p", "8080"], [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--co",
                                                     "tests"], [py, "-c", "pass", "--password", "$DB_PASSWORD"],
                 [py, "-c", "pass", "--token", "1500", "--include-token", "y"],
                 ["sh", "-c", "exit 0; mysql -p db; docker run -p 8080:80 img; gh auth login --with-token"]):
        run_repo.ok("check", "--name", "ordinary", "--", *argv)


def test_an_empty_probe_is_refused_as_empty_before_anything_runs(run_repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    proc = run_repo.sg("effect", "run", "--key", "deploy-3", "--kind", "deploy", "--reversible", "--probe", "",
                       "--", sys.executable, "-c", _touch(marker))
    assert proc.returncode == 2 and "--probe is empty" in proc.stderr and not marker.exists(), proc.stderr
