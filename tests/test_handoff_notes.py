"""The handoff a person reads in `git log` (refs/notes/shift), the record shiftgit reads (refs/notes/shift-data),
and missing notes healed by `shiftgit notes repair`."""

from __future__ import annotations

import json
import sys

from conftest import Repo

from shiftgit.git import handoff

PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
FAILING = "".join(f"\n\ndef test_row_{i}():\n    assert 'row {i} ' + 'x' * 80 == 'row {i} ' + 'y' * 80, 'why ' * 20\n"
                  for i in range(25))


def record(repo: Repo, rev: str = "HEAD") -> dict[str, object]:
    return json.loads(repo.git("notes", "--ref=shift-data", "show", rev))


def test_fifty_checkpointed_commits_keep_git_log_short(run_repo: Repo) -> None:
    run_repo.write("tests/test_rows.py", FAILING)
    for i in range(50):
        run_repo.write("calc.py", run_repo.read("calc.py") + f"# step {i}\n")
        if i % 10 == 0:  # real pytest output, 25 failing tests; later checkpoints carry it on as stale
            assert run_repo.sg("check", "--name", "unit", "--quiet", "--", *PYTEST).returncode == 1
        run_repo.ok("checkpoint", "--step", f"step {i} of the long run", "--next", "go on",
                    "--done-when", "all rows pass", *(["--milestone"] if i == 49 else []))
        assert run_repo.commit(f"step {i}").returncode == 0
    shown = run_repo.git("log", "-50").encode()
    bare = run_repo.git("log", "-50", "--no-notes").encode()
    per_commit = (len(shown) - len(bare)) / 50
    assert per_commit <= 1200, per_commit
    assert b'{"' not in shown
    notes = [run_repo.git("notes", "--ref=shift", "show", f"HEAD~{i}") for i in range(50)]
    assert all(len(n.encode()) <= 1200 and len(n.splitlines()) <= 8 for n in notes)
    assert "[milestone]" in notes[0] and "checks: 0 passed, 1 failed" in notes[-1] and "more)" in notes[-1]
    data = record(run_repo, "HEAD~49")
    assert len(json.dumps(data)) > 5000  # the full record is kept, off the displayed ref
    print(f"git log bytes per commit: {per_commit:.0f} (note {sum(len(n) for n in notes) / 50:.0f} B)")


def test_init_configures_git_to_show_only_the_human_note(run_repo: Repo) -> None:
    assert run_repo.git("config", "--get-all", "notes.displayRef").split() == ["refs/notes/shift"]
    assert run_repo.git("config", "--get-all", "notes.rewriteRef").split() == ["refs/notes/shift",
                                                                               "refs/notes/shift-data"]
    run_repo.ok("init")  # idempotent
    assert run_repo.git("config", "--get-all", "notes.rewriteRef").split() == ["refs/notes/shift",
                                                                               "refs/notes/shift-data"]


def test_effects_blocked_items_and_questions_reach_the_note(run_repo: Repo) -> None:
    run_repo.ok("effect", "run", "--key", "warm-1", "--kind", "cache_warm", "--repeatable", "--",
                sys.executable, "-c", "pass")
    run_repo.write("calc.py", run_repo.read("calc.py") + "# more\n")
    run_repo.ok("checkpoint", "--step", "warmed", "--blocked", "waiting for the API key",
                "--question", "which region?")
    assert run_repo.commit("warmed").returncode == 0
    note = run_repo.git("notes", "--ref=shift", "show", "HEAD")
    assert "effects: warm-1 completed" in note
    assert "blocked: waiting for the API key" in note and "questions: which region?" in note


def test_terminal_escapes_in_recorded_text_never_reach_git_log(run_repo: Repo) -> None:
    run_repo.write("calc.py", run_repo.read("calc.py") + "# esc\n")
    run_repo.ok("checkpoint", "--step", "title \x1b]0;owned\x07 set")
    assert run_repo.commit("esc").returncode == 0
    note = run_repo.git("notes", "--ref=shift", "show", "HEAD")
    assert "\x1b" not in note and "\\u001b]0;owned\\u0007" in note


def test_notes_repair_writes_only_what_is_missing(run_repo: Repo) -> None:
    for step in ("one", "two", "three"):
        run_repo.write("calc.py", run_repo.read("calc.py") + f"# {step}\n")
        run_repo.ok("checkpoint", "--step", step)
        assert run_repo.commit(step).returncode == 0
    before = {rev: run_repo.git("notes", "--ref=shift", "show", rev) for rev in ("HEAD", "HEAD~1", "HEAD~2")}
    run_repo.git("notes", "--ref=shift", "remove", "HEAD~1")
    run_repo.git("notes", "--ref=shift-data", "remove", "HEAD~1")
    run_repo.git("notes", "--ref=shift-data", "remove", "HEAD~2")  # the human note stays as it is
    entries = run_repo.json("log")
    marked = [e for e in entries if e.get("note_missing")]
    assert [e["step"] for e in marked] == ["two"] and marked[0]["commit"] == run_repo.git("rev-parse", "HEAD~1").strip()
    assert "note missing" in run_repo.ok("log").stdout
    report = run_repo.json("notes", "repair")
    wrote = {item["commit"]: item["wrote"] for item in report["repaired"]}
    assert sorted(wrote.values()) == [["note", "record"], ["record"]]
    assert {rev: run_repo.git("notes", "--ref=shift", "show", rev) for rev in before} == before
    assert record(run_repo, "HEAD~2")["checkpoints"][0]["step"] == "one"  # type: ignore[index]
    assert not [e for e in run_repo.json("log") if e.get("note_missing")]
    assert run_repo.json("notes", "repair") == {"repaired": []}


def test_notes_repair_refuses_a_bad_range_in_one_line(run_repo: Repo) -> None:
    proc = run_repo.sg("notes", "repair", "no-such-branch..HEAD")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_note_written_before_the_split_still_reads(run_repo: Repo) -> None:
    run_repo.write("calc.py", run_repo.read("calc.py") + "# old\n")
    run_repo.ok("checkpoint", "--step", "an old note")
    assert run_repo.commit("old").returncode == 0
    data = run_repo.git("notes", "--ref=shift-data", "show", "HEAD")
    human = run_repo.git("notes", "--ref=shift", "show", "HEAD")
    run_repo.git("notes", "--ref=shift-data", "remove", "HEAD")
    run_repo.git("notes", "--ref=shift", "add", "-f", "-m", human.rstrip("\n") + "\n" + data.rstrip("\n"), "HEAD")
    assert [e["step"] for e in run_repo.json("log")] == ["an old note"]
    assert run_repo.json("notes", "repair") == {"repaired": []}  # its JSON is the record


def test_the_checks_line_counts_states_as_the_ledger_judges_them() -> None:
    from shiftgit.git import handoff

    tree = "t" * 40
    checks = [{"name": "unit", "exit_code": 0, "content": tree},
              {"name": "lint", "exit_code": 0, "content": "o" * 40},  # ran on other content: stale
              {"name": "e2e", "exit_code": 1, "content": tree, "failing": ["a", "b", "c", "d"]}]
    point = {"run": "r", "seq": 2, "id": "p2-x", "step": "s", "tree": tree, "checks": checks,
             "never_attempted": ["smoke"]}
    line = handoff.note_text({"shift_note": 1, "checkpoints": [point], "runs": ["r"]}).splitlines()[1]
    assert line == "checks: 1 passed, 1 failed, 1 stale, 1 never attempted — failing: a, b, c (+1 more)"


def test_parse_note_reads_each_line_as_json_loads_does() -> None:
    """parse_note takes a one-line record at once and calls the JSON scanner itself: what it returns is what
    reading each line of the text with json.loads returns, for text that looks like one line and is not."""
    def by_lines(text: str) -> object:
        documents = []
        for line in text.splitlines():
            if line.startswith("{"):
                try:
                    document = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(document, dict) and "shift_note" in document:
                    documents.append(document)
        return documents[0] if len(documents) == 1 else handoff.merged(documents) if documents else None

    record = '{"checkpoints":[{"id":"p1","step":"é"}],"shift_note":1}'
    other = '{"checkpoints":[{"id":"p2"}],"shift_note":1}'
    texts = [record, record + "\n", record + "\n\n", record + " \t\n", record + "\r\n", record + "x\n",
             '{"shift_note":1,\r"x":2}\n', '{"shift_note":1,\n"x":2}', '{"shift_note":1}\x1c' + other,
             '{"shift_note":1,"s":"a\u2028b"}', '{"shift_note":1,"s":"a\x85b"}\n', '{"s":"\u2029"}',
             record + "\v" + other, record + "\n" + other + "\n", "[1]", '{"no":1}', "{", "{}" + "\n" * 3,
             '{"shift_note":1} {"shift_note":2}', '{"shift_note":1,"d":' + "[" * 5000 + "]" * 5000 + "}", ""]
    for text in texts:
        assert handoff.parse_note(text) == by_lines(text), repr(text[:60])
