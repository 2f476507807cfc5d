"""A big ledger's effect records read from the snapshot its last write left: the same model a JSON read makes, the
same bytes written after, and exactly as strict (ledger/snapshot.py)."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from conftest import Repo

from shiftgit.errors import LedgerError
from shiftgit.ledger import snapshot, validated
from shiftgit.ledger import store as store_module
from shiftgit.ledger.canonical import canonical_bytes
from shiftgit.ledger.model import Effect, Ledger
from shiftgit.ledger.secrets import redact_obj
from shiftgit.ledger.store import Store


def effect(i: int, **fields: object) -> Effect:
    return Effect(**{"key": f"e{i}", "kind": "job", "reversibility": "repeatable", "state": "completed",
                     "created_at": "2026-01-01T00:00:00Z", "argv": ["true", str(i)],  # a list: a read makes a tuple
                     "history": [{"at": "t", "state": "completed", "attempt": 1}], "runner": {"pid": i, "host": "h"},
                     "duration_s": 0.25, "result": f"exit 0 — ü {i}", "attempts": 1, "extra": {"future": [i, None]},
                     **fields})  # type: ignore[arg-type]


def full_read(repo: Repo) -> Ledger:
    return Ledger.from_dict(json.loads(repo.ledger_path("demo").read_bytes()))


def full_write(ledger: Ledger) -> bytes:
    document = redact_obj(ledger.to_dict())
    assert isinstance(document, dict)
    return canonical_bytes(document)


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "MIN", 0)  # every ledger is big enough: the tests stay fast
    monkeypatch.setattr(store_module, "SNAPSHOT_MIN", 0)


def snapshotted(repo: Repo, count: int) -> Ledger:
    """A ledger of COUNT effects written by one store, its snapshot left as at that process's exit."""
    store = Store.open(repo.path)
    ledger = dataclasses.replace(store.read("demo"), effects=tuple(effect(i) for i in range(count)))
    store.write(ledger)
    snapshot._save_all()
    assert os.path.isfile(snapshot._path(str(store.repo.git_dir), "demo"))
    return ledger


def loaded(repo: Repo) -> tuple[Store, Ledger, bool]:
    """A fresh store's read, and whether the snapshot gave its effects."""
    store = Store.open(repo.path)
    ledger = store.read("demo")
    seen = store._seen.get("demo")  # none: the bytes were checked whole
    return store, ledger, seen is not None and bool(seen.arrays)


def test_a_read_from_the_snapshot_is_the_read_of_the_json(run_repo: Repo, small: None) -> None:
    snapshotted(run_repo, 12)
    store, ledger, used = loaded(run_repo)
    assert used
    assert ledger == full_read(run_repo)
    assert [type(e.argv) for e in ledger.effects] == [tuple] * 12  # as a read of the JSON makes them
    changed = dataclasses.replace(ledger, effects=(*ledger.effects[:5], effect(5, state="failed"), *ledger.effects[6:],
                                                   effect(99)), status="stopped")
    store.write(changed)
    assert run_repo.ledger_path("demo").read_bytes() == full_write(changed)
    snapshot._save_all()
    again, read, used = loaded(run_repo)
    assert used and read == full_read(run_repo) == Store.open(run_repo.path).read("demo")


def test_effects_another_writer_added_after_them_are_read_from_the_json(run_repo: Repo, small: None) -> None:
    first = snapshotted(run_repo, 8)
    later = dataclasses.replace(first, effects=(*first.effects, effect(8), effect(9)), status="stopped")
    data = full_write(later)  # another version's write: the same canonical bytes, no snapshot
    run_repo.ledger_path("demo").write_bytes(data)
    validated.record(Store.open(run_repo.path).repo.git_dir, [data], written=True)
    store, ledger, used = loaded(run_repo)
    assert used
    assert ledger == full_read(run_repo) and ledger.status == "stopped" and len(ledger.effects) == 10
    store.write(dataclasses.replace(ledger, effects=ledger.effects[1:]))
    assert run_repo.ledger_path("demo").read_bytes() == full_write(dataclasses.replace(ledger,
                                                                                      effects=ledger.effects[1:]))


def test_a_hand_edit_of_a_snapshotted_effect_is_read_and_checked_as_before(run_repo: Repo, small: None) -> None:
    snapshotted(run_repo, 6)
    path = run_repo.ledger_path("demo")
    valid = path.read_text().replace('"result": "exit 0 — ü 2"', '"result": "edited by hand"')
    path.write_text(valid)
    store, ledger, used = loaded(run_repo)
    assert not used and ledger.effects[2].result == "edited by hand" and ledger == full_read(run_repo)
    snapshotted(run_repo, 6)
    state = '"state": "completed",\n      "timeout"'  # an effect's own state (history entries have one too)
    path.write_text(path.read_text().replace(state, state.replace("completed", "bogus"), 1))
    with pytest.raises(LedgerError, match="invalid ledger"):
        Store.open(run_repo.path).read("demo")


def test_a_hand_edit_that_repeats_the_effects_key_is_read_as_json_reads_it(run_repo: Repo) -> None:
    """JSON keeps the last of two `"effects"` keys; the snapshot's text matches the first. Bytes the schema takes but
    shiftgit did not write are never read from a snapshot (review of e17: the second `effect list` listed 400
    effects the file does not hold, and `effect run` skipped a key it never ran)."""
    store = Store.open(run_repo.path)
    many = tuple(effect(i, result="exit 0 " + "r" * 700) for i in range(400))
    store.write(dataclasses.replace(store.read("demo"), effects=many))  # > 256 KiB: a snapshot is left at exit
    snapshot._save_all()
    path = run_repo.ledger_path("demo")
    text = path.read_text()
    after = text.index("\n  ],\n", text.index('\n  "effects": [')) + len("\n  ],\n")
    path.write_text(text[:after] + '  "effects": [],\n' + text[after:])  # valid JSON, valid by the schema
    for _ in range(2):  # the first read lists the bytes as validated; the second must not take the snapshot
        listed = run_repo.ok("effect", "list", "--run", "demo", "--json")
        assert json.loads(listed.stdout) == []


def test_a_torn_foreign_or_other_version_snapshot_is_left_aside(run_repo: Repo, small: None,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    snapshotted(run_repo, 4)
    where = snapshot._path(str(Store.open(run_repo.path).repo.git_dir), "demo")
    with open(where, "rb") as handle:
        kept = handle.read()
    monkeypatch.setattr(snapshot, "FORMAT", snapshot.FORMAT + 1)  # a shiftgit whose records differ
    assert not loaded(run_repo)[2] and loaded(run_repo)[1] == full_read(run_repo)
    monkeypatch.undo()
    monkeypatch.setattr(snapshot, "MIN", 0)
    monkeypatch.setattr(store_module, "SNAPSHOT_MIN", 0)
    for junk in (kept[: len(kept) // 2], b"not marshal", b""):
        with open(where, "wb") as handle:
            handle.write(junk)
        assert not loaded(run_repo)[2] and loaded(run_repo)[1] == full_read(run_repo)


def test_effect_run_leaves_a_snapshot_and_the_next_one_reads_it(run_repo: Repo, small: None) -> None:
    snapshotted(run_repo, 3)
    os.remove(snapshot._path(str(Store.open(run_repo.path).repo.git_dir), "demo"))
    for i in range(2):
        run_repo.ok("effect", "run", "--key", f"k{i}", "--kind", "job", "--repeatable", "-q", "--", "true")
    assert not os.path.isfile(snapshot._path(str(Store.open(run_repo.path).repo.git_dir), "demo"))  # a small ledger
    big = [effect(i, output_tail="x" * 2000) for i in range(140)]  # ~300 KiB: past MIN in a real process
    store = Store.open(run_repo.path)
    store.write(dataclasses.replace(store.read("demo"), effects=tuple(big)))
    snapshot._PENDING.clear()
    for i in range(2, 4):
        run_repo.ok("effect", "run", "--key", f"k{i}", "--kind", "job", "--repeatable", "-q", "--", "true")
        assert os.path.isfile(snapshot._path(str(store.repo.git_dir), "demo"))
    store, ledger, used = loaded(run_repo)
    assert used and ledger == full_read(run_repo) and [e.key for e in ledger.effects[-2:]] == ["k2", "k3"]
    assert run_repo.ledger_path("demo").read_bytes() == full_write(ledger)


def test_a_snapshot_a_few_effects_behind_is_kept_and_one_further_behind_replaced(run_repo: Repo, small: None) -> None:
    snapshotted(run_repo, 20)
    where = snapshot._path(str(Store.open(run_repo.path).repo.git_dir), "demo")
    before = os.stat(where).st_mtime_ns, os.path.getsize(where)
    store, ledger, used = loaded(run_repo)
    assert used
    store.write(dataclasses.replace(ledger, effects=(*ledger.effects, effect(20))))
    snapshot._save_all()
    assert (os.stat(where).st_mtime_ns, os.path.getsize(where)) == before  # one behind: left as it is
    store, ledger, used = loaded(run_repo)
    assert used and ledger == full_read(run_repo)
    changed = dataclasses.replace(ledger, effects=(effect(0, state="failed"), *ledger.effects[1:]))
    store.write(changed)  # an effect the snapshot holds changed: its text no longer begins the ledger's
    snapshot._save_all()
    assert os.path.getsize(where) != before[1]
    store, ledger, used = loaded(run_repo)
    assert used and ledger == full_read(run_repo) and ledger.effects[0].state == "failed"
    store.write(dataclasses.replace(ledger, effects=(*ledger.effects, *(effect(i) for i in range(30, 46)))))
    snapshot._save_all()  # sixteen behind: a new one
    store, ledger, used = loaded(run_repo)
    assert used and len(store._seen["demo"].arrays["effects"].items or ()) == 37 and ledger == full_read(run_repo)
    assert snapshot._READ[(str(store.repo.git_dir), "demo")] == ledger.effects  # all of them from the snapshot


def test_finishing_a_run_removes_its_snapshot(run_repo: Repo, small: None) -> None:
    snapshotted(run_repo, 3)
    where = snapshot._path(str(run_repo.path / ".git"), "demo")
    assert os.path.isfile(where)
    run_repo.ok("finish", "--status", "abandoned")
    assert not os.path.exists(where)
