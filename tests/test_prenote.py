"""The checkpoint renders the next commit's note ahead (git/prenote.py): the gate's child then renders none, and
a note rendered ahead is only ever used for the commit whose ledger changes it is keyed by."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import Repo
from test_quicknote import checkpoint, expected, prepared

from shiftgit.git import prenote, quicknote, rawgit
from shiftgit.git.notes import DATA_REF, read_note


def committed(repo: Repo) -> Path:
    return repo.path / ".git" / "shift" / f"{prenote.COMMITTED}demo"


def staged_key(repo: Repo) -> list[str]:
    """The key of the staged ledger changes, from git's own raw diff."""
    lines = repo.git("diff", "--cached", "--raw", "--no-abbrev", "--", ".shift/runs").splitlines()
    return [f"{f[2]} {f[3]} {f[5]}" for f in (line.split() for line in lines) if f[5].endswith("/ledger.json")]


def notes(repo: Repo, commit: str) -> tuple[str | None, str | None]:
    return read_note(repo.path, commit), read_note(repo.path, commit, DATA_REF)


def test_a_checkpoint_after_a_gated_commit_renders_the_next_commits_note(run_repo: Repo) -> None:
    checkpoint(run_repo, "first")
    assert run_repo.commit("first").returncode == 0
    blob = run_repo.git("rev-parse", "HEAD:.shift/runs/demo/ledger.json").strip()
    kept = committed(run_repo).read_bytes()  # what the gate passed: HEAD's ledger, by blob id
    shown = subprocess.run(["git", "cat-file", "blob", blob], cwd=run_repo.path, capture_output=True, check=True)
    assert kept == f"{blob}\n".encode() + shown.stdout
    checkpoint(run_repo, "second")
    found = quicknote.read_prepared(str(run_repo.path / ".git"))
    assert found is not None and found[0] == staged_key(run_repo)  # keyed as the commit to come
    assert prepared(run_repo).read_bytes().split(b"\n", 1)[0] == quicknote.MAGIC + b" 0"  # no gate's commit
    assert run_repo.commit("second").returncode == 0
    head = run_repo.head()
    assert notes(run_repo, head) == expected(run_repo, head) == (found[1], found[2])


def test_a_note_rendered_ahead_for_other_changes_is_not_used(run_repo: Repo) -> None:
    """Keyed otherwise (here: another HEAD ledger than the one the checkpoint rendered against), the gate renders
    the commit's own note."""
    checkpoint(run_repo, "first")
    assert run_repo.commit("first").returncode == 0
    checkpoint(run_repo, "second")
    lines, _, _ = quicknote.read_prepared(str(run_repo.path / ".git")) or ([], "", "")
    other = [f"{'1' * 40} {line.split(' ', 1)[1]}" for line in lines]
    quicknote.prepare(run_repo.path / ".git", other, "shiftgit: not this commit's note\n", "{}\n", pid=0)
    assert run_repo.commit("second").returncode == 0
    head = run_repo.head()
    assert notes(run_repo, head) == expected(run_repo, head)


def test_a_kept_ledger_whose_bytes_are_not_its_blob_keys_nothing(run_repo: Repo) -> None:
    checkpoint(run_repo, "first")
    assert run_repo.commit("first").returncode == 0
    blob, _, data = committed(run_repo).read_bytes().partition(b"\n")
    assert rawgit.object_id("blob", data, 40) == blob.decode()
    forged = data.replace(b'"first"', b'"forged"', 1)
    assert forged != data
    committed(run_repo).write_bytes(blob + b"\n" + forged)
    before = prepared(run_repo).read_bytes()  # the first commit's gate prepared it
    checkpoint(run_repo, "second")
    assert prepared(run_repo).read_bytes() == before  # nothing rendered against bytes that are not that blob
    assert run_repo.commit("second").returncode == 0
    head = run_repo.head()
    assert notes(run_repo, head) == expected(run_repo, head)


TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's form (tests/test_secrets.py's kind)


def test_a_note_of_bytes_shiftgit_wrote_is_not_redacted_again(run_repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkpoint's own ledger (validated.py: written, so redacted) is rendered as it is: the same note."""
    checkpoint(run_repo, "first")
    assert run_repo.commit("first").returncode == 0
    checkpoint(run_repo, f"second {TOKEN}")
    gitdir = str(run_repo.path / ".git")
    found = quicknote.read_prepared(gitdir)
    assert found is not None and TOKEN not in found[1] + found[2] and "[REDACTED:" in found[2]
    prepared(run_repo).unlink()

    def refused(value: object) -> object:
        raise AssertionError("redacted again")

    monkeypatch.setattr("shiftgit.ledger.secrets.redact_obj", refused)
    prenote.prerender(gitdir, "demo", run_repo.read(".shift/runs/demo/ledger.json").encode())
    assert quicknote.read_prepared(gitdir) == found


def test_a_note_of_bytes_shiftgit_did_not_write_is_redacted(run_repo: Repo) -> None:
    checkpoint(run_repo, "first")
    assert run_repo.commit("first").returncode == 0
    checkpoint(run_repo, "second")
    data = run_repo.read(".shift/runs/demo/ledger.json").replace('"second"', f'"second {TOKEN}"', 1).encode()
    assert TOKEN.encode() in data
    gitdir = str(run_repo.path / ".git")
    prenote.prerender(gitdir, "demo", data)
    found = quicknote.read_prepared(gitdir)
    assert found is not None and found[0] and TOKEN not in found[1] + found[2] and "[REDACTED:" in found[2]
