"""The fast commit path: the gate prepares the handoff note, post-commit writes it (git/quicknote.py),
and the general way takes over whenever the prepared note is not provably the commit's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import Repo

from shiftgit.git import handoff, quicknote, rawgit
from shiftgit.git import view as gitview
from shiftgit.git.notes import DATA_REF, NOTES_REF, read_note
from shiftgit.git.spares import Spares
from shiftgit.ledger import validated

PACKAGE = str(Path(quicknote.__file__).resolve().parents[2])
ENTRY = ("import sys\nsys.path.append(sys.argv.pop(1))\nfrom shiftgit.__main__ import hook_main\n"
         "sys.exit(hook_main(sys.argv[1:]))")


def checkpoint(repo: Repo, name: str) -> None:
    repo.write("calc.py", repo.read("calc.py") + f"# {name}\n")
    repo.ok("checkpoint", "--step", name, "--next", f"after {name}")
    repo.git("add", "-A")


def prepared(repo: Repo) -> Path:
    return repo.path / ".git" / "shift" / quicknote.PREPARED


def expected(repo: Repo, commit: str) -> tuple[str, str]:
    """The note and record the general way renders for `commit` (hooks.post_commit's computation)."""
    with gitview.Objects(repo.path, gitview.hook_env()) as objects:
        document = handoff.note_document(gitview.ledger_changes(objects, commit), None)
    assert document is not None
    return handoff.pair(document)



def noted_commit(repo: Repo, message: str) -> str:
    """`git commit` traced into `t` (started_gits reads it); its two notes are the ones expected. HEAD."""
    proc = repo.run(["git", "commit", "-q", "-m", message], env={"GIT_TRACE2_EVENT": str(repo.path / "t")})
    assert proc.returncode == 0, proc.stderr
    head = repo.head()
    assert (read_note(repo.path, head), read_note(repo.path, head, DATA_REF)) == expected(repo, head)
    return head


def test_the_gate_prepares_the_note_and_post_commit_writes_it_as_the_general_way_would(run_repo: Repo) -> None:
    checkpoint(run_repo, "fast")
    tips = dict(zip((NOTES_REF, DATA_REF), run_repo.git("rev-parse", NOTES_REF, DATA_REF).split(), strict=True))
    head = noted_commit(run_repo, "fast")
    lines, note, _ = quicknote.read_prepared(str(run_repo.path / ".git"))
    assert note == read_note(run_repo.path, head) and lines[0].endswith(" .shift/runs/demo/ledger.json")
    # one compare-and-swap moved both refs; their commits carry the annotated commit's committer line
    committer = run_repo.git("log", "-1", "--format=%cn <%ce> %cd", "--date=raw", head)
    for ref in (NOTES_REF, DATA_REF):
        assert run_repo.git("log", "-1", "--format=%an <%ae> %ad|%cn <%ce> %cd", "--date=raw", ref) == \
            f"{committer.strip()}|{committer}"
        assert run_repo.git("ls-tree", "--name-only", ref, f"{head[:2]}/").strip() == f"{head[:2]}/{head[2:]}"
        # moved in the files (git/refswap.py), its reflog line as update-ref writes one: git reads it back
        assert run_repo.git("log", "-g", "-1", "--format=%gn <%ge>|%gs", ref).strip() == \
            f"{committer.split('> ')[0]}>|shiftgit: handoff of {head[:12]}"
        assert run_repo.git("rev-parse", f"{ref}@{{1}}").strip() == tips[ref]
    # the shim ran no diff-tree: the gate of this very commit prepared the note, checked against the trees
    gits = started_gits(run_repo, run_repo.path / "t")
    # the gate runs diff-index and reads every object it needs from the loose files (git/looseread.py: no
    # cat-file); the child it leaves (git/waiter.py) reads the commit and the notes trees so too, writes the objects
    # itself (no unpack-objects; git fsck finds them sound) and moves the refs in the files (no update-ref)
    # (no config query: the config files say git's trailer settings are its defaults, git/trailerconf.py, so the
    # commit-msg shim appends the trailers itself: no interpret-trailers)
    assert gits == ["commit", "diff-index", "maintenance"]
    assert run_repo.git("fsck", "--no-dangling", "--strict").strip() == ""


def test_where_the_files_do_not_settle_a_ref_move_update_ref_moves_the_notes_refs(run_repo: Repo) -> None:
    """A reference-transaction hook, a notes ref with no reflog yet (git's config decides whether to start one):
    the child's update-ref moves both refs, the hook sees the transaction, git starts the reflog."""
    hook = run_repo.path / ".git" / "hooks" / "reference-transaction"
    hook.write_text('#!/bin/sh\n[ "$1" != committed ] || cat >> "$(git rev-parse --git-dir)/seen"\n')
    hook.chmod(0o755)
    (run_repo.path / ".git" / "logs" / "refs" / "notes" / "shift-data").unlink()
    checkpoint(run_repo, "hooked")
    noted_commit(run_repo, "hooked")
    assert started_gits(run_repo, run_repo.path / "t").count("update-ref") == 1
    seen = (run_repo.path / ".git" / "seen").read_text()
    assert f" {DATA_REF}\n" in seen and f" {NOTES_REF}\n" in seen
    assert run_repo.git("log", "-g", "--format=%gs", DATA_REF).strip() == "shiftgit: handoff"  # git started it


def test_a_shared_repository_gets_the_objects_from_git_itself(run_repo: Repo) -> None:
    """Where the config may ask git for more than plain loose objects (here group-writable ones), git writes them."""
    run_repo.git("config", "core.sharedRepository", "group")
    checkpoint(run_repo, "shared")
    noted_commit(run_repo, "shared")
    assert "unpack-objects" in started_gits(run_repo, run_repo.path / "t")
    assert run_repo.git("fsck", "--no-dangling", "--strict").strip() == ""


def test_loose_objects_are_what_git_reads_back_and_never_replace_one(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    objects = tmp_path / ".git" / "objects"
    blob_id = rawgit.object_id("blob", b"note\n", 40)
    wanted = [("blob", b"note\n"), ("tree", rawgit.tree_body({"f": ("100644", blob_id)}))]
    rawgit.write_loose(wanted, 40, str(objects))
    for kind, body in wanted:
        oid = rawgit.object_id(kind, body, 40)
        shown = subprocess.run(["git", "cat-file", kind, oid], cwd=tmp_path, capture_output=True, check=True).stdout
        assert shown == body and (objects / oid[:2] / oid[2:]).stat().st_mode & 0o222 == 0  # read-only, as git's
    blob = objects / blob_id[:2] / blob_id[2:]
    before = blob.stat()
    rawgit.write_loose(wanted[:1], 40, str(objects))  # there already: left as it is, no temporary file left
    assert (blob.stat().st_ino, blob.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert [p.name for p in blob.parent.iterdir()] == [blob.name]
    more = [("tree", rawgit.tree_body({"g": ("100644", blob_id)})), ("commit", b"tree " + blob_id.encode() + b"\n")]
    with Spares(str(objects), {0o444: 3}) as spares:  # written into files made ahead (git/spares.py)
        rawgit.write_loose(more, 40, str(objects), spares)
        assert len(spares.free[0o444]) == 1
    for kind, body in more:
        oid = rawgit.object_id(kind, body, 40)
        shown = subprocess.run(["git", "cat-file", kind, oid], cwd=tmp_path, capture_output=True, check=True).stdout
        assert shown == body and (objects / oid[:2] / oid[2:]).stat().st_mode & 0o222 == 0
    assert not list(objects.glob("tmp_obj_*")) and not list(objects.glob("*/tmp_obj_*"))


def staged_key(repo: Repo) -> list[str]:
    """The key of the staged ledger changes, from git's own raw diff."""
    lines = repo.git("diff", "--cached", "--raw", "--no-abbrev", "--", ".shift/runs").splitlines()
    return [f"{f[2]} {f[3]} {f[5]}" for f in (line.split() for line in lines) if f[5].endswith("/ledger.json")]


def test_post_commit_writes_the_prepared_text_only_when_its_key_is_the_commits(run_repo: Repo) -> None:
    checkpoint(run_repo, "one")
    key = staged_key(run_repo)
    quicknote.prepare(run_repo.path / ".git", key, "prepared note\n", '{"prepared":1}\n')
    assert run_repo.run(["git", "commit", "-q", "--no-verify", "-m", "one"]).returncode == 0
    assert read_note(run_repo.path, run_repo.head()) == "prepared note\n"  # the key matched: written as prepared
    checkpoint(run_repo, "two")  # another ledger change: the key left above is not this commit's
    quicknote.prepare(run_repo.path / ".git", key, "prepared note\n", '{"prepared":1}\n')
    assert run_repo.run(["git", "commit", "-q", "--no-verify", "-m", "two"]).returncode == 0
    head = run_repo.head()
    assert (read_note(run_repo.path, head), read_note(run_repo.path, head, DATA_REF)) == expected(run_repo, head)
    assert "two" in (read_note(run_repo.path, head) or "")
    checkpoint(run_repo, "three")  # SHIFT_SKIP: the note carries the reason, so a prepared one never serves
    quicknote.prepare(run_repo.path / ".git", staged_key(run_repo), "prepared note\n", '{"prepared":1}\n')
    assert run_repo.commit("three", env={"SHIFT_SKIP": "testing"}).returncode == 0
    assert "skip: commit gate skipped (SHIFT_SKIP): testing" in (read_note(run_repo.path, run_repo.head()) or "")


def test_flat_notes_go_the_general_way_which_rewrites_them_in_fanout(run_repo: Repo) -> None:
    first = run_repo.git("rev-list", "--max-parents=0", "HEAD").strip()
    run_repo.git("notes", "--ref=shift", "add", "-f", "-m", "by hand", first)  # git writes small notes trees flat
    checkpoint(run_repo, "after flat")
    assert run_repo.run(["git", "commit", "-q", "-m", "after flat"]).returncode == 0
    head = run_repo.head()
    assert "after flat" in (read_note(run_repo.path, head) or "") and read_note(run_repo.path, first) == "by hand\n"
    assert first not in run_repo.git("ls-tree", "--name-only", NOTES_REF).split()


def test_a_held_notes_lock_moves_neither_ref_and_leaves_it_to_the_general_way(run_repo: Repo) -> None:
    tips = run_repo.git("rev-parse", NOTES_REF, DATA_REF)
    checkpoint(run_repo, "locked")
    assert run_repo.run(["git", "commit", "-q", "-m", "locked"]).returncode == 0
    assert quicknote.read_prepared(str(run_repo.path / ".git")) is not None
    for ref, tip in zip((NOTES_REF, DATA_REF), tips.split(), strict=True):
        run_repo.git("update-ref", ref, tip)  # as if post-commit had not run yet
    lock = run_repo.path / ".git" / "refs" / "notes" / "shift-data.lock"
    lock.write_text("")
    diff = run_repo.git("diff-tree", "-r", "--root", "--no-renames", "HEAD", "--", ".shift/runs")
    cwd = os.getcwd()
    os.chdir(run_repo.path)
    try:
        assert quicknote.post_commit({**os.environ, quicknote.DIFF_VAR: diff}) is False
        lock.unlink()
        assert run_repo.git("rev-parse", NOTES_REF, DATA_REF) == tips  # all or nothing: no ref moved
        assert quicknote.post_commit({**os.environ, quicknote.DIFF_VAR: diff}) is True
    finally:
        os.chdir(cwd)
    head = run_repo.head()
    assert (read_note(run_repo.path, head), read_note(run_repo.path, head, DATA_REF)) == expected(run_repo, head)


def test_parse_diff_keys_only_valid_runs_ledgers_and_refuses_submodules() -> None:
    commit, old, new = "a" * 40, "b" * 40, "c" * 40
    text = (f"{commit}\n:100644 100644 {old} {new} M\t.shift/runs/demo/ledger.json\n"
            f":000000 100644 {'0' * 40} {new} A\t.shift/runs/demo/notes.txt\n"
            f":100644 100644 {old} {new} M\t.shift/runs/Bad Run/ledger.json\n"
            f":100644 100755 {old} {old} M\t.shift/runs/other/ledger.json\n")
    assert quicknote.parse_diff(text) == (commit, [f"{old} {new} .shift/runs/demo/ledger.json"])
    assert quicknote.key([(".shift/runs/demo/ledger.json", old, new)], 40) == quicknote.parse_diff(text)[1]
    assert quicknote.parse_diff(f"{commit}\n:160000 100644 {old} {new} M\t.shift/runs/x/ledger.json\n") is None
    assert quicknote.parse_diff("not a commit\n") is None


def hook_imports(repo: Repo, hook: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run a hook as the shim does (`python -S`, the package's folder on sys.path): the process, its imports."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-S", "-X", "importtime", "-c", ENTRY, PACKAGE, hook],
                          cwd=repo.path, env=env, capture_output=True, text=True)
    lines = proc.stderr.splitlines()
    return proc, {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}


def test_the_shims_python_runs_without_site_and_loads_it_for_jsonschema(run_repo: Repo) -> None:
    checkpoint(run_repo, "unvalidated")
    path = run_repo.ledger_path("demo")
    path.write_text(json.dumps(json.loads(path.read_text())))  # valid, but bytes shiftgit never wrote
    run_repo.git("add", "-A")
    proc, imported = hook_imports(run_repo, "pre-commit")
    assert proc.returncode == 0, proc.stderr[-2000:]  # validated (ledger/quickschema.py, else jsonschema)
    late = ("import sys\nsys.path.append(sys.argv[1])\nfrom shiftgit.__main__ import _LateSite\n"
            "sys.meta_path.append(_LateSite)\nimport jsonschema\nprint('site' in sys.modules)")
    found = subprocess.run([sys.executable, "-S", "-c", late, PACKAGE], capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert found.stdout == "True\n", found.stderr[-2000:]  # site loaded late, for what only site-packages has
    proc, imported = hook_imports(run_repo, "pre-commit")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not {"site", "jsonschema", "click"} & imported
    assert not {"typing", "pathlib", "hashlib", "_hashlib", "subprocess", "dataclasses"} & imported  # issue 17
    assert run_repo.run(["git", "commit", "-q", "-m", "unvalidated"]).returncode == 0
    _, imported = hook_imports(run_repo, "post-commit")  # the note is there: nothing to write
    assert not {"site", "subprocess", "json", "re", "pathlib", "typing", "hashlib"} & imported


def started_gits(repo: Repo, trace: Path) -> list[str]:
    """The git commands a traced commit started (trace2 events), the commit itself first."""
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    return [e["argv"][1] for e in events if e.get("event") == "start"]


def test_an_idle_commit_runs_one_git_process_and_an_amend_still_gets_its_note(run_repo: Repo) -> None:
    run_repo.ok("finish", "--status", "abandoned")  # no active run any more
    assert run_repo.commit("finished").returncode == 0  # a ledger changed: the general way writes its note
    finished = run_repo.head()
    assert read_note(run_repo.path, finished) is not None
    run_repo.write("README.md", "# idle\n")
    trace = run_repo.path.parent / "trace.json"
    run_repo.git("add", "README.md")
    proc = run_repo.run(["git", "commit", "-q", "-m", "idle"], env={"GIT_TRACE2_EVENT": str(trace)})
    assert proc.returncode == 0 and proc.stderr == ""
    assert started_gits(run_repo, trace) == ["commit", "diff", "maintenance"]  # no diff-tree, no Python
    assert read_note(run_repo.path, run_repo.head()) is None
    run_repo.git("reset", "-q", "--soft", "HEAD~1")
    run_repo.git("reset", "-q", "HEAD", "--", "README.md")
    # amend the ledger-changing commit with nothing staged: pre-commit sees no ledger against HEAD, but the
    # new commit changes one against its parent: post-rewrite gives it the note
    proc = run_repo.run(["git", "commit", "-q", "--amend", "-m", "finished, amended"])
    assert proc.returncode == 0, proc.stderr
    head = run_repo.head()
    assert head != finished
    assert (read_note(run_repo.path, head), read_note(run_repo.path, head, DATA_REF)) == expected(run_repo, head)


def test_the_key_read_from_the_trees_is_the_diff_trees(run_repo: Repo) -> None:
    checkpoint(run_repo, "keys")
    run_repo.write(".shift/runs/copy/ledger.json", run_repo.read(".shift/runs/demo/ledger.json"))
    run_repo.write(".shift/runs/Not A Run/ledger.json", "{}\n")
    run_repo.write(".shift/runs/demo/extra.txt", "not a ledger\n")
    run_repo.git("add", "-A")
    assert run_repo.run(["git", "commit", "-q", "--no-verify", "-m", "keys"]).returncode == 0
    diff = run_repo.git("diff-tree", "-r", "--root", "--no-renames", "HEAD", "--", ".shift/runs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_DIR")}
    cwd = os.getcwd()
    os.chdir(run_repo.path)
    try:
        with rawgit.CatFile(env) as cat:
            from_trees = quicknote._tree_key(cat, run_repo.head())
    finally:
        os.chdir(cwd)
    found = quicknote.parse_diff(diff)
    assert found is not None and from_trees == found[1] and len(from_trees) == 2


def test_the_gate_skips_the_secret_scan_only_for_bytes_a_write_scanned_clean(run_repo: Repo) -> None:
    """A checkpoint's write scans the ledger it writes and marks its bytes clean: the gate then loads neither json's
    regular expressions nor the secret rules. Bytes changed since (by hand) carry no mark and are scanned."""
    checkpoint(run_repo, "marked")
    data = run_repo.ledger_path("demo").read_bytes()
    listed = (run_repo.path / ".git" / "shift" / "validated").read_text().split()
    assert validated.clean_token(data) in listed
    proc, imported = parent_imports(run_repo)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not {"re", "json", "enum", "fnmatch", "shiftgit.ledger.secrets"} & imported
    assert not {"shiftgit.git.handoff", "shiftgit.git.quicknote"} & imported  # the child's: it renders the note
    document = run_repo.ledger("demo")
    document["contract"]["owner"] = "ghp" + "_" + "Zq7Xw2Lm9Pk4Rt6Yb1" + "Nc8Vd3Hs5Jf0Ga7Ue2"  # no token in this file
    run_repo.ledger_path("demo").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    run_repo.git("add", "-A")
    proc, imported = parent_imports(run_repo)
    assert proc.returncode == 1 and "github-token" in proc.stderr, proc.stderr[-2000:]
    assert "shiftgit.ledger.secrets" in imported


def parent_imports(repo: Repo) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """What the gate's own process imports (`hook_imports`), with the index named as git names it, so that what
    need not hold a commit back goes to the child it forks (git/waiter.py). A shell stands for `git commit`: it
    ends with the hook, and the child with it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["GIT_INDEX_FILE"] = str(repo.path / ".git" / "index")
    argv = [sys.executable, "-S", "-X", "importtime", "-c", ENTRY, PACKAGE, "pre-commit"]
    proc = subprocess.run(["sh", "-c", '"$@"; exit $?', "sh", *argv], cwd=repo.path, env=env, capture_output=True,
                          text=True)
    lines = proc.stderr.splitlines()
    return proc, {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}


def test_a_write_marks_clean_only_small_ledgers_with_no_secret() -> None:
    plain = b'{"contract": {"owner": "ada"}}\n'
    assert validated.scanned_clean(plain)
    assert not validated.scanned_clean(b'{"owner": "' + b"ghp_" + b"Zq7Xw2Lm9Pk4Rt6Yb1Nc8Vd3Hs5Jf0Ga7Ue2" + b'"}')
    assert not validated.scanned_clean(b'{"owner": "\\u0067hp_Zq7Xw2Lm9Pk4Rt6Yb1Nc8Vd3Hs5Jf0Ga7Ue2"}')
    assert not validated.scanned_clean(b'{"a": "' + b"x" * validated.CLEAN_SCAN_MAX + b'"}')  # the gate scans it
    assert not validated.scanned_clean(b'{"a": "\xff"}')


def test_a_clean_mark_from_another_version_of_the_secret_rules_is_not_trusted(run_repo: Repo) -> None:
    """A mark names the rules that scanned the bytes: after an upgrade that adds a rule, bytes an older shiftgit
    passed are scanned again. Here a hand-edited ledger holding a token is listed as validated and marked clean,
    once by an older version's mark (scanned: the token refused) and once by this version's (trusted: the gate skips
    the scan, which is all the mark is for)."""
    checkpoint(run_repo, "marked")
    document = run_repo.ledger("demo")
    document["contract"]["owner"] = "ghp" + "_" + "Zq7Xw2Lm9Pk4Rt6Yb1" + "Nc8Vd3Hs5Jf0Ga7Ue2"
    data = (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()
    run_repo.ledger_path("demo").write_bytes(data)
    run_repo.git("add", "-A")
    listed = run_repo.path / ".git" / "shift" / "validated"
    sha1, sha256 = validated.blob_ids(data)
    with listed.open("a") as handle:
        handle.write(f"{sha1} {sha256} clean:{sha1} clean-r0:{sha1}\n")
    proc, _ = parent_imports(run_repo)
    assert proc.returncode == 1 and "github-token" in proc.stderr, proc.stderr[-2000:]
    with listed.open("a") as handle:
        handle.write(f"{sha1} {sha256} {validated.clean_token(data)}\n")
    proc, imported = parent_imports(run_repo)  # refused still, by rule 5 (a contract field changed by hand)
    assert "github-token" not in proc.stderr and "shiftgit.ledger.secrets" not in imported, proc.stderr[-2000:]


def test_after_gc_packed_objects_are_read_by_cat_file_and_the_commit_gets_its_note(run_repo: Repo) -> None:
    """Everything packed (HEAD, its trees, the notes trees): git/looseread.py asks cat-file, started for the notes
    trees before the commit is made (git/waiter.py `_warm`); the note is the general way's."""
    run_repo.git("gc", "-q", "--prune=now")
    checkpoint(run_repo, "packed")
    noted_commit(run_repo, "packed")
    gits = started_gits(run_repo, run_repo.path / "t")
    assert "cat-file" in gits and "diff-tree" not in gits and "update-ref" not in gits
