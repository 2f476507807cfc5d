"""`shiftgit log`: the checkpoint timeline along HEAD's history, from notes, newest first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import Repo

from shiftgit.git import handoff
from shiftgit.git.notes import write_notes


def checkpoint_and_commit(repo: Repo, step: str) -> str:
    repo.write("calc.py", repo.read("calc.py") + f"# {step}\n")
    repo.ok("checkpoint", "--step", step, "--next", f"after {step}")
    assert repo.commit(step).returncode == 0
    return repo.head()


def test_empty_timeline(run_repo: Repo) -> None:
    assert run_repo.json("log") == []
    assert "no checkpoints yet" in run_repo.ok("log").stdout


def test_timeline_newest_first_with_the_uncommitted_checkpoint_on_top(run_repo: Repo) -> None:
    one = checkpoint_and_commit(run_repo, "one")
    two = checkpoint_and_commit(run_repo, "two")
    run_repo.write("calc.py", run_repo.read("calc.py") + "# three\n")
    run_repo.ok("checkpoint", "--step", "three")
    log = run_repo.json("log")
    assert [(e.get("commit"), e["run"], e["seq"], e["step"]) for e in log] == [
        (None, "demo", 3, "three"), (two, "demo", 2, "two"), (one, "demo", 1, "one")]
    assert log[1]["next"] == "after two"
    assert [e["step"] for e in run_repo.json("log", "-n", "2")] == ["three", "two"]
    lines = run_repo.ok("log").stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("(working)") and "demo #3" in lines[0]
    assert lines[1].startswith(two[:10]) and "two — next: after two" in lines[1]


def test_commits_left_behind_by_an_amend_are_not_on_the_timeline(run_repo: Repo) -> None:
    checkpoint_and_commit(run_repo, "one")
    run_repo.write("calc.py", run_repo.read("calc.py") + "# amended\n")
    run_repo.ok("checkpoint", "--step", "one, amended")
    run_repo.git("add", "-A")
    assert run_repo.run(["git", "commit", "-q", "--amend", "--no-edit"]).returncode == 0
    assert [(e["commit"], e["step"]) for e in run_repo.json("log")] == [(run_repo.head(), "one, amended")]


def test_notes_fetched_from_other_clones_join_the_timeline(run_repo: Repo) -> None:
    mine = checkpoint_and_commit(run_repo, "mine")
    base = run_repo.git("rev-parse", "HEAD~1").strip()
    theirs = {"id": "p1-0123456789ab", "seq": 1, "at": "2030-01-01T00:00:00Z", "step": "theirs", "run": "other"}
    same = json.loads(run_repo.git("notes", "--ref=shift-data", "show", mine))["checkpoints"][0]
    remote = {base: handoff.data_text({"shift_note": 1, "checkpoints": [theirs], "runs": ["other"]}),
              mine: handoff.data_text({"shift_note": 1, "checkpoints": [same, {**theirs, "id": "p2-x", "seq": 2}],
                                       "runs": ["demo", "other"]})}
    write_notes(run_repo.path, remote, ref="refs/shift-remote/origin/notes/shift-data")  # where sync and fetch put it
    log = run_repo.json("log")
    assert [(e["commit"], e["run"], e["step"]) for e in log] == [
        (mine, "other", "theirs"), (mine, "demo", "mine"), (base, "other", "theirs")]
    assert len({e["id"] for e in log}) == 3  # the checkpoint both refs hold is listed once


def test_a_note_sync_merged_by_keeping_both_texts_reads_as_one() -> None:
    from shiftgit.git.notemerge import MARKER, merge_note_texts

    one = {"id": "p1-a", "seq": 1, "at": "2030-01-01T00:00:00Z", "step": "a", "run": "a"}
    two = {"id": "p1-b", "seq": 1, "at": "2030-01-02T00:00:00Z", "step": "b", "run": "b"}
    def old(document: dict[str, object]) -> str:  # a note written before the split: JSON on its last line
        return handoff.note_text(document) + handoff.data_text(document)

    left = old({"shift_note": 1, "checkpoints": [one], "runs": ["a"]})
    right = old({"shift_note": 1, "checkpoints": [two], "runs": ["b"], "skip": "why"})
    both = merge_note_texts(merge_note_texts(left, "reviewed by Ada\n"), right)  # a plain note forces keep-both
    assert MARKER in both and "reviewed by Ada" in both
    document = handoff.parse_note(both)
    assert document is not None
    assert [p["id"] for p in document["checkpoints"]] == ["p1-a", "p1-b"] and document["skip"] == "why"
    one = merge_note_texts(left, right)  # two handoff notes alone merge into one note, one JSON line
    assert MARKER not in one and handoff.parse_note(one) == document
    assert handoff.parse_note(left) == json.loads(left.splitlines()[-1])


def test_a_note_written_before_the_split_is_read_from_the_human_ref(run_repo: Repo) -> None:
    """No machine record: the human note's own JSON (its last line) is the record."""
    head = run_repo.head()
    run_repo.git("notes", "--ref=shift-data", "remove", head)  # this commit's record: the new layout's
    point = {"id": "p1-old", "seq": 1, "at": "2020-01-01T00:00:00Z", "step": "written before the split", "run": "demo"}
    document = {"shift_note": 1, "checkpoints": [point], "runs": ["demo"]}
    write_notes(run_repo.path, {head: handoff.note_text(document) + handoff.data_text(document)})
    assert [(e["commit"], e["step"]) for e in run_repo.json("log")] == [(head, "written before the split")]


def test_a_record_whose_text_imitates_the_next_commit_adds_nothing(run_repo: Repo) -> None:
    """Records are streamed with the commits from one `git log`: a record's lines cannot open a commit."""
    one = checkpoint_and_commit(run_repo, "one")
    two = checkpoint_and_commit(run_repo, "two")
    record = run_repo.git("notes", "--ref=shift-data", "show", two)
    forged = f"{one} \n" + handoff.data_text({"shift_note": 1, "checkpoints": [
        {"id": "p9-forged", "seq": 9, "at": "2030-01-01T00:00:00Z", "step": "forged", "run": "demo"}]})
    write_notes(run_repo.path, {two: record + forged}, ref="refs/notes/shift-data")
    log = run_repo.json("log")
    assert [(e["commit"], e["step"]) for e in log if e["step"] != "forged"] == [(two, "two"), (one, "one")]
    assert [e["commit"] for e in log if e["step"] == "forged"] == [two]  # read as the note of its own commit


def test_a_long_history_is_read_whole_across_rounds_and_log_n_stops_early(repo: Repo) -> None:
    """More commits than the first rounds hold (64, then 128, ...): every record once, newest first."""
    stream = "".join(f"commit refs/heads/long\ncommitter B <b@b> {1700000000 + i} +0000\ndata {len(str(i))}\n{i}\n"
                     for i in range(300))
    assert repo.run(["git", "fast-import", "--quiet"], input=stream).returncode == 0
    repo.git("checkout", "-q", "-f", "long")
    ids = repo.git("rev-list", "HEAD").split()
    assert len(ids) == 300

    def record(seq: int, commit: str) -> str:
        point = {"id": f"p{seq}-{commit[:8]}", "seq": seq, "at": f"2024-01-01T00:{seq // 60:02d}:{seq % 60:02d}Z",
                 "step": f"step {seq}", "run": "demo"}
        return handoff.data_text({"shift_note": 1, "checkpoints": [point]})

    records = {c: record(300 - i, c) for i, c in enumerate(ids)}
    write_notes(repo.path, records, ref="refs/notes/shift-data")
    repo.ok("init", "--hooks", "none")
    log = repo.json("log")
    assert [e["commit"] for e in log] == ids
    assert [e["seq"] for e in log] == list(range(300, 0, -1))
    assert [e["commit"] for e in repo.json("log", "-n", "70")] == ids[:70]


def test_the_lines_of_log_are_its_entries_rendered_even_for_text_that_must_be_escaped_or_cut(repo: Repo) -> None:
    """`log` prints committed checkpoints straight from their records; `log --json`'s entries, rendered, say
    the same: escapes, cuts, non-ASCII text, milestones, left-out fields, odd types."""
    from shiftgit.git import timeline

    for i in range(8):
        repo.git("commit", "-q", "--allow-empty", "-m", f"c{i}")
    ids = repo.git("rev-list", "HEAD").split()
    points = [
        {"id": "a", "seq": 1, "at": "2024-01-01T00:00:00Z", "step": "plain", "run": "r", "next": {"action": "go"}},
        {"id": "b", "seq": 2, "at": "t", "step": "s\x1b[31mred\r\n", "run": "r\u202e", "next": {"action": "x\ty"}},
        {"id": "c", "seq": 3, "at": "t", "step": "é" * 250, "run": "r", "milestone": True,
         "next": {"action": "n" * 300}},
        {"id": "d", "seq": None, "step": "", "run": 7, "next": "not an object", "milestone": 0},
        {"id": "e", "seq": 4.5, "at": "", "step": ["a", "list"], "run": None, "next": {"action": {"nested": 1}}},
        {"id": "f", "seq": 5, "at": "t", "step": "ünïcode ok", "run": "r", "next": {"action": ""}, "milestone": "yes"},
        {"id": "g", "seq": 6, "at": "t", "step": "x" * 150, "run": "r", "next": {"action": "y" * 60}},
        {"id": "h"},
    ]
    records = {c: handoff.data_text({"shift_note": 1, "checkpoints": [p]})
               for c, p in zip(ids[:8], points, strict=True)}
    write_notes(repo.path, records, ref="refs/notes/shift-data")
    repo.ok("init", "--hooks", "none")
    entries = repo.json("log")
    assert [e["id"] for e in entries] == [p["id"] for p in points]
    assert repo.ok("log").stdout == timeline.render(entries) + "\n"
    assert repo.ok("log", "-n", "3").stdout == timeline.render(entries[:3]) + "\n"


def test_notes_no_checkpoint_of_shiftgit_could_carry_do_not_stop_log(repo: Repo) -> None:
    """Notes are anyone's text: checkpoints that are not a list, an id that is a list, JSON nested deeper
    than Python reads: `log` shows what it can read and goes on."""
    for i in range(5):
        repo.git("commit", "-q", "--allow-empty", "-m", f"c{i}")
    ids = repo.git("rev-list", "HEAD").split()
    point = {"id": "p1-fine", "seq": 1, "at": "2024-01-01T00:00:00Z", "step": "fine", "run": "demo"}
    records = {ids[0]: '{"shift_note":1,"checkpoints":5}\n',
               ids[1]: handoff.data_text({"shift_note": 1, "checkpoints": [{**point, "id": ["a", "list"]}]}),
               ids[2]: '{"shift_note":1,"checkpoints":[' + "[" * 100_000 + "]" * 100_000 + "]}\n",
               ids[3]: handoff.data_text({"shift_note": 1, "checkpoints": [point, {**point, "id": ["a", "list"]}]}),
               ids[4]: handoff.data_text({"shift_note": 1, "checkpoints": "not a list"})}
    write_notes(repo.path, records, ref="refs/notes/shift-data")
    repo.ok("init", "--hooks", "none")
    log = repo.json("log")
    assert [(e["commit"], e["id"]) for e in log] == [(ids[1], ["a", "list"]), (ids[3], "p1-fine")]
    assert len(repo.ok("log").stdout.splitlines()) == 2


def test_only_a_real_trailer_on_a_commit_without_notes_marks_its_note_missing(run_repo: Repo) -> None:
    """The trailer is looked up only for commits with no note whose message names the key (in any case, as git
    matches it); the key in the text of a message, not in its trailers, is not a trailer."""
    one = checkpoint_and_commit(run_repo, "one")
    two = checkpoint_and_commit(run_repo, "two")
    three = checkpoint_and_commit(run_repo, "three")
    message = run_repo.git("log", "-1", "--format=%B", one)
    assert "Shift-Checkpoint: " in message
    for commit in (one, two, three):
        run_repo.git("notes", "--ref=shift", "remove", commit)
        run_repo.git("notes", "--ref=shift-data", "remove", commit)
    # two: the key only in a paragraph of text; three: the trailer's key in lower case
    for commit, old, new in ((two, "Shift-Checkpoint: ", "see the Shift-Checkpoint: docs\n\nShift-Other: "),
                             (three, "Shift-Checkpoint: ", "shift-checkpoint: ")):
        text = run_repo.git("log", "-1", "--format=%B", commit).replace(old, new)
        rewritten = run_repo.git("commit-tree", f"{commit}^{{tree}}", "-p", f"{commit}^", "-m", text).strip()
        run_repo.git("replace", commit, rewritten)
    entries = run_repo.json("log")
    assert [(e["commit"], e["step"]) for e in entries if e.get("note_missing")] == [(three, "three"), (one, "one")]


def test_log_n_found_among_the_newest_records_looks_up_no_older_note(repo: Repo, tmp_path: Path) -> None:
    """The newest commits' records hold what `log -n 2` prints: the older commits' notes written before the split
    (on the human ref, read with `cat-file`) are never looked up then; `log` reads them all, in order."""
    stream = "".join(f"commit refs/heads/main\ncommitter B <b@b> {1700000000 + i} +0000\ndata {len(str(i))}\n{i}\n"
                     for i in range(10))
    assert repo.run(["git", "fast-import", "--quiet", "--force"], input=stream).returncode == 0
    repo.git("reset", "-q", "--hard")
    ids = repo.git("rev-list", "HEAD").split()

    def document(seq: int, commit: str) -> dict[str, object]:
        return {"shift_note": 1, "runs": ["demo"], "checkpoints": [
            {"id": f"p{seq}-{commit[:8]}", "seq": seq, "at": f"2024-01-01T00:00:{seq:02d}Z", "step": f"step {seq}",
             "run": "demo"}]}

    newest, older = ids[:3], ids[3:]
    write_notes(repo.path, {c: handoff.data_text(document(10 - i, c)) for i, c in enumerate(newest)},
                ref="refs/notes/shift-data")
    write_notes(repo.path, {c: handoff.note_text(document(7 - i, c)) + handoff.data_text(document(7 - i, c))
                            for i, c in enumerate(older)})
    repo.ok("init", "--hooks", "none")
    trace = tmp_path / "trace.json"

    def cat_files(*args: str) -> tuple[list[Any], int]:
        trace.unlink(missing_ok=True)
        proc = repo.sg(*args, "--json", env={"GIT_TRACE2_EVENT": str(trace)})
        assert proc.returncode == 0, proc.stderr
        starts = [json.loads(line) for line in trace.read_text().splitlines()]
        return json.loads(proc.stdout), sum(1 for e in starts if e.get("event") == "start"
                                            and e.get("argv", [])[1:2] == ["cat-file"])

    shown, looked_up = cat_files("log", "-n", "2")
    assert [(e["commit"], e["step"]) for e in shown] == [(ids[0], "step 10"), (ids[1], "step 9")]
    assert looked_up == 0
    shown, looked_up = cat_files("log")
    assert [e["commit"] for e in shown] == ids
    assert [e["seq"] for e in shown] == list(range(10, 0, -1))
    assert looked_up == 1
