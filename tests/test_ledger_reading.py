"""The work tree's ledger files, read for `status` and `log` with one listing and one open each
(ledger/reading.py): the same runs `run_ids` lists, and every symbolic link refused as `inside` refuses it."""

from __future__ import annotations

import os

import pytest
from conftest import Repo

from shiftgit.errors import UsageError
from shiftgit.ledger.store import Store


def runs_dir(repo: Repo) -> str:
    repo.ok("init", "--hooks", "none")
    return str(repo.path / ".shift" / "runs")


def test_every_run_run_ids_lists_and_only_those(repo: Repo) -> None:
    top = runs_dir(repo)
    for run, text in (("a", '{"run": "a"}\n'), ("b2.x", '{"run": "b2.x"}\n'), ("Bad_Name", "{}\n")):
        os.makedirs(os.path.join(top, run))
        with open(os.path.join(top, run, "ledger.json"), "w") as handle:
            handle.write(text)
    os.makedirs(os.path.join(top, "empty"))  # no ledger: no run
    os.makedirs(os.path.join(top, "folder", "ledger.json"))  # a directory by that name: no run
    os.makedirs(os.path.join(top, "fifo"))
    os.mkfifo(os.path.join(top, "fifo", "ledger.json"))  # not a regular file: no run (and never a hang)
    os.makedirs(os.path.join(top, "dangling"))
    os.symlink("nowhere.json", os.path.join(top, "dangling", "ledger.json"))  # leads to no file: no run
    with open(os.path.join(top, "stray.json"), "w") as handle:
        handle.write("{}\n")
    store = Store.open(repo.path)
    found = store.ledger_files()
    assert list(found) == store.run_ids() == ["a", "b2.x"]
    assert found == {"a": b'{"run": "a"}\n', "b2.x": b'{"run": "b2.x"}\n'}
    assert store.ledger_files(["b2.x", "empty"]) == {"b2.x": b'{"run": "b2.x"}\n', "empty": None}


@pytest.mark.parametrize("link", ["file", "directory"])
def test_a_linked_ledger_or_run_directory_is_refused_as_everywhere(repo: Repo, link: str) -> None:
    top = runs_dir(repo)
    os.makedirs(os.path.join(top, "a"))
    with open(os.path.join(top, "a", "ledger.json"), "w") as handle:
        handle.write("{}\n")
    if link == "file":
        os.makedirs(os.path.join(top, "b"))
        os.symlink(os.path.join(top, "a", "ledger.json"), os.path.join(top, "b", "ledger.json"))
    else:
        os.symlink(os.path.join(top, "a"), os.path.join(top, "b"))
    store = Store.open(repo.path)
    with pytest.raises(UsageError) as expected:
        store.ledger_path("b")
    for ask in (lambda: store.ledger_files(), lambda: store.ledger_files(["a", "b"])):
        with pytest.raises(UsageError) as refused:
            ask()
        assert str(refused.value) == str(expected.value)
    status = repo.sg("status")
    assert status.returncode == 2 and "symbolic link" in status.stderr and "Traceback" not in status.stderr


def test_a_freezing_pause_leaves_what_it_built_to_the_counts_and_collects_again() -> None:
    """GcPaused(freeze=True) (`status`): the collector is back on after it, and the objects built inside are in the
    permanent generation (never walked again, still freed by their counts); a plain pause freezes nothing."""
    import gc

    from shiftgit.ledger.reading import GcPaused

    assert gc.get_freeze_count() == 0
    try:
        with GcPaused():
            plain = [{"n": n} for n in range(1000)]
        assert gc.isenabled() and gc.get_freeze_count() == 0
        with GcPaused(freeze=True):
            assert not gc.isenabled()
            kept = [{"n": n} for n in range(1000)]
        assert gc.isenabled() and gc.get_freeze_count() >= len(kept)
        assert len(plain) == len(kept)
    finally:
        gc.unfreeze()
