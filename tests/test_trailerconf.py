"""The commit gate reads whether git's config moves trailers from the config files (git/trailerconf.py) only when
they settle it: never "plain" where `git config` finds a trailer or comment setting; else git is asked, as before."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import Repo

from shiftgit.git.rawgit import TRAILER_CONFIG
from shiftgit.git.trailerconf import plain_in_files


def git_says_plain(repo: Repo, env: dict[str, str]) -> bool:
    """What the gate asked git before: `git config --get-regexp` finds no trailer.* or core.comment* key."""
    return repo.run(["git", *TRAILER_CONFIG], env=env).returncode == 1


def answers(repo: Repo, env: dict[str, str] | None = None) -> tuple[bool, bool]:
    full = {**os.environ, **(env or {})}
    return plain_in_files(full, str(repo.path)), git_says_plain(repo, env or {})


def test_a_plain_config_is_settled_by_the_files(repo: Repo) -> None:
    assert answers(repo) == (True, True)
    repo.git("config", "user.name", "Someone")  # other settings: still plain
    assert answers(repo) == (True, True)


@pytest.mark.parametrize("where", ["local", "global", "worktree", "included", "comment", "environment", "system"])
def test_any_trailer_or_comment_setting_is_never_taken_as_plain(repo: Repo, isolated: Path, where: str) -> None:
    home = isolated
    env: dict[str, str] = {}
    if where == "local":
        repo.git("config", "trailer.where", "start")
    elif where == "global":
        repo.git("config", "--file", str(home / "gitconfig"), "trailer.ifexists", "replace")
    elif where == "worktree":
        repo.git("config", "extensions.worktreeConfig", "true")
        repo.git("config", "--worktree", "trailer.where", "start")
    elif where == "included":
        (home / "more").write_text("[trailer]\n\twhere = start\n")
        repo.git("config", "include.path", str(home / "more"))
    elif where == "comment":
        repo.git("config", "core.commentChar", ";")
    elif where == "environment":
        env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "trailer.where", "GIT_CONFIG_VALUE_0": "start"}
    else:
        (home / "system").write_text("[trailer]\n\twhere = start\n")
        env = {"GIT_CONFIG_NOSYSTEM": "0", "GIT_CONFIG_SYSTEM": str(home / "system")}
    assert answers(repo, env) == (False, False)


def test_a_worktree_or_a_git_dir_elsewhere_is_left_to_git(repo: Repo, tmp_path: Path) -> None:
    repo.git("worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    assert plain_in_files(dict(os.environ), str(tmp_path / "side")) is False
    assert plain_in_files({**os.environ, "GIT_DIR": str(repo.path / ".git")}, str(repo.path)) is False


def test_the_system_file_is_read_only_where_the_build_puts_it(repo: Repo) -> None:
    system = {k: v for k, v in os.environ.items() if k != "GIT_CONFIG_NOSYSTEM"}
    assert plain_in_files({**system, "GIT_EXEC_PATH": "/opt/git/libexec/git-core"}, str(repo.path)) is False
    on_usr = plain_in_files({**system, "GIT_EXEC_PATH": "/usr/lib/git-core"}, str(repo.path))
    assert on_usr is (not Path("/etc/gitconfig").exists() or all(
        word not in Path("/etc/gitconfig").read_bytes().lower() for word in (b"trailer", b"comment", b"include")))


def test_a_checkpointed_commit_with_a_plain_config_starts_no_git_config(run_repo: Repo, tmp_path: Path) -> None:
    run_repo.write("calc.py", "# one\n")
    run_repo.ok("checkpoint", "--step", "one")
    run_repo.git("add", "-A")
    trace = tmp_path / "trace.json"
    assert run_repo.run(["git", "commit", "-q", "-m", "one"], env={"GIT_TRACE2_EVENT": str(trace)}).returncode == 0
    started = [e["argv"][1:2] for e in map(json.loads, trace.read_text().splitlines()) if e["event"] == "start"]
    assert ["config"] not in started and ["interpret-trailers"] not in started, started
    point = run_repo.ledger("demo")["checkpoint"]["id"]
    assert run_repo.git("log", "-1", "--format=%B") == f"one\n\nShift-Run: demo\nShift-Checkpoint: {point}\n\n"


def test_the_trailers_file_is_never_written_through_a_link(run_repo: Repo, tmp_path: Path) -> None:
    """The gate writes `<git-dir>/shift/trailers` over in place: a symlink or a hard link there (a `cp -al` copy of
    the repository) is replaced, and what it pointed at is left as it was."""
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not the repository's\n")
    trailers = run_repo.path / ".git" / "shift" / "trailers"
    for link in (trailers.symlink_to, lambda target: os.link(target, trailers)):
        trailers.unlink(missing_ok=True)
        link(outside)
        run_repo.write("calc.py", run_repo.read("calc.py") + "# one more\n")
        run_repo.ok("checkpoint", "--step", "one more")
        assert run_repo.commit("one more").returncode == 0
        assert outside.read_text() == "not the repository's\n"
        assert not trailers.is_symlink() and trailers.stat().st_nlink == 1
        assert "Shift-Checkpoint:" in run_repo.git("log", "-1", "--format=%B")


def test_a_ledger_parsed_from_bytes_is_not_taken_for_its_text() -> None:
    """rawjson takes a byte-order mark before bytes, as json does, and refuses it before text: git/rawledger.document
    answers each form for itself, whichever the gate asked first."""
    from shiftgit.git import rawledger

    data = b'\xef\xbb\xbf{"run": "demo"}'
    assert rawledger.document(data) == {"run": "demo"}
    with pytest.raises(ValueError):
        rawledger.document(data, data.decode("utf-8"))
