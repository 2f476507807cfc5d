"""`shiftgit ci check` and the pre-push gate: the commit gate, judged again over commits already made.

The commit gate is a local hook: `--no-verify`, cherry-pick and merges pass it by. Here each commit
of a range is judged from git alone (works in a fresh CI clone): a commit that changes a path
outside `.shift/` while a run was active on it (its committed ledger, or its parent's, says
`"status": "active"`) must carry that run's ledger with a checkpoint made on its parent that records
exactly the committed content, drop nothing, hold no secret and stay in scope (gate rules 1-6, and 7
when the config asks), and a commit that changes a ledger must have its handoff note (rule 8). A
commit whose note carries a SHIFT_SKIP reason passes, its reason listed. Merge commits are judged
only for their note (their sides are judged commit by commit).

Stdlib only: the pre-push hook runs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from shiftgit.errors import GitError, UsageError
from shiftgit.git import gate, handoff
from shiftgit.git import view as gitview
from shiftgit.git.view import Objects

RULE_NOTE = 8
NOTE_FIX = "shiftgit notes repair {commit} && shiftgit sync"
REWRITE_FIX = ("a commit already made changes only by rewriting it: `git rebase -i {commit}^`, mark it `edit`, "
               "`shiftgit checkpoint --step ...`, `git add -A && git commit --amend`; or keep it and say why: "
               'SHIFT_SKIP="<reason>" git push (the reason goes into its note)')


class Verdict(NamedTuple):
    """One commit's judgement: the runs it was judged for, what it broke, a skip reason from its note."""

    commit: str
    subject: str
    runs: tuple[str, ...]
    problems: tuple[gate.Problem, ...]
    skip: str | None = None

    @property
    def status(self) -> str:
        if self.skip:
            return "skipped"
        if self.problems:
            return "failed"
        return "passed" if self.runs else "no_run"

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "subject": self.subject, "runs": list(self.runs), "status": self.status,
                "skip": self.skip, "problems": [{"rule": p.rule, "what": p.what, "details": list(p.details),
                                                 "fix": list(p.fix)} for p in self.problems]}


# -- the range ---------------------------------------------------------------------------------------

def default_range(root: Path, env: Mapping[str, str]) -> str:
    """The commits not on origin's default branch, else those not on the upstream."""
    if _ok(root, env, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/HEAD"):
        return "origin/HEAD..HEAD"
    if _ok(root, env, "rev-parse", "--verify", "--quiet", "@{upstream}"):
        return "@{upstream}..HEAD"
    raise UsageError("no default range here (no origin/HEAD, no upstream): name one, e.g. "
                     "`shiftgit ci check main..HEAD`, or run `git remote set-head origin --auto`")


def commits_in(root: Path, env: Mapping[str, str], spec: str, *extra: str) -> list[str]:
    """The range's commits, oldest first; bad input and a too-shallow clone are one clear line each."""
    argv = ["rev-list", "--reverse", "--topo-order", *spec.split(), *extra, "--"]
    try:
        commits = gitview.git(root, env, *argv).split()
    except GitError as exc:
        first = (exc.stderr.strip().splitlines() or ["no output"])[0]
        hint = _shallow_hint(root, env)
        raise UsageError(f"unknown range {spec!r} ({first}); give A..B of commits that exist here"
                         + (f"; {hint}" if hint else " (git fetch them first?)")) from None
    boundary = _shallow_commits(root, env) & set(commits)
    if boundary:
        raise UsageError(f"range {spec!r} reaches past the history this shallow clone has "
                         f"({min(boundary)[:12]} has no parents here); {_shallow_hint(root, env)}")
    return commits


def _shallow_commits(root: Path, env: Mapping[str, str]) -> set[str]:
    path = gitview.git(root, env, "rev-parse", "--git-path", "shallow").strip()
    try:
        return set((root / path).read_text().split())
    except FileNotFoundError:
        return set()


def _shallow_hint(root: Path, env: Mapping[str, str]) -> str:
    if not _shallow_commits(root, env):
        return ""
    return "fetch more history: `git fetch --deepen=100` (or `git fetch --unshallow`; in GitHub Actions, " \
           "actions/checkout with `fetch-depth: 0`)"


def _ok(root: Path, env: Mapping[str, str], *argv: str) -> bool:
    try:
        gitview.git(root, env, *argv)
    except GitError:
        return False
    return True


# -- judging -----------------------------------------------------------------------------------------

def judge(root: Path, env: Mapping[str, str], commits: list[str]) -> list[Verdict]:
    """Every commit's verdict, oldest first."""
    notes = note_documents(root, env, commits)
    with Objects(root, env) as objects:
        empty = gitview.empty_tree(root, env)
        return [_judge_one(root, env, objects, commit, notes.get(commit), empty) for commit in commits]


def _judge_one(root: Path, env: Mapping[str, str], objects: Objects, commit: str,
               note: Mapping[str, Any] | None, empty: str) -> Verdict:
    tree, parents = objects.commit(commit)
    parent = parents[0] if parents else None
    parent_tree = objects.commit(parent)[0] if parent else None
    subject = _subject(objects, commit)
    touched = objects.changed_ledgers(tree, parent_tree)
    skip = handoff.skip_reason(note)
    needs_note = bool(touched) and note is None
    note_problem = (gate.Problem(RULE_NOTE, "the commit changes a ledger but has no handoff note", (),
                                 (NOTE_FIX.format(commit=commit[:12]),)),) if needs_note else ()
    if len(parents) > 1:  # a merge: its sides are judged commit by commit
        return Verdict(commit, subject, tuple(sorted(touched)), note_problem, skip)
    ledgers = _ledgers(objects, tree, parent_tree, touched)
    archived = _archived(root, env, objects, [r for r, (old, new) in ledgers.items() if old and new is None])
    active = sorted(run for run, (old, new) in ledgers.items()
                    if (_is_active(old) or _is_active(new)) and run not in archived)  # archived: it ended
    changes = gitview.committed(root, env, parent or empty, commit)
    paths = {c.path: c.new for c in changes if not gitview.is_shift_path(c.path)}
    runs = [r for r in active if r in touched] or active
    if not runs and not touched:
        return Verdict(commit, subject, (), note_problem, skip)
    config = gitview.parse_config(objects.read([f"{commit}:{gitview.CONFIG}"])[0])
    problems: list[gate.Problem] = []
    for run in runs or sorted(touched)[:1]:
        staging = gate.Staging(run=run, head=parent, paths=paths if runs else {}, config=config,
                               ledgers=_staged(ledgers, touched, run, archived))
        problems += [p for p in gate.judge(staging) if p not in problems]
    return Verdict(commit, subject, tuple(runs), tuple(sorted(problems, key=lambda p: p.rule)) + note_problem,
                   skip)


def _ledgers(objects: Objects, tree: str, parent_tree: str | None,
             touched: Mapping[str, tuple[str | None, str | None]]) -> dict[str, tuple[bytes | None, bytes | None]]:
    """run -> (parent's ledger bytes, the commit's), for every run either tree holds."""
    trees = [tree, parent_tree] if parent_tree else [tree]
    found = objects.ledger_blobs(trees)
    new, old = found[0], (found[1] if parent_tree else {})
    runs = sorted(new.keys() | old.keys())
    names = [b for run in runs for b in (old.get(run), new.get(run)) if b]
    data = dict(zip(names, objects.read(names), strict=True)) if names else {}
    return {run: (data.get(old[run]) if run in old else None, data.get(new[run]) if run in new else None)
            for run in runs}


def _staged(ledgers: Mapping[str, tuple[bytes | None, bytes | None]],
            touched: Mapping[str, tuple[str | None, str | None]], run: str,
            archived: Mapping[str, bytes] | None = None) -> dict[str, gate.Ledger]:
    """The gate's view of the commit: its ledgers as if staged, against its parent's as HEAD's."""
    out = {}
    for name in sorted({*touched, run}):
        old, new = ledgers.get(name, (None, None))
        blob = touched[name][1] if name in touched else None
        out[name] = gate.Ledger(name, gitview.ledger_path(name), new, blob, old, name in touched,
                                (archived or {}).get(name) if new is None else None)
    return out


def _archived(root: Path, env: Mapping[str, str], objects: Objects, runs: list[str]) -> dict[str, bytes]:
    """Deleted ledgers the archive holds (here, or a remote's fetched copy): the gate accepts their removal."""
    if not runs:
        return {}
    out = gitview.git(root, env, "for-each-ref", "--format=%(refname)", "refs/shift/archive", "refs/shift-remote/")
    refs = [r for r in out.split() if r == "refs/shift/archive" or r.endswith("/shift/archive")]
    found: dict[str, bytes] = {}
    for ref in refs:
        wanted = [run for run in runs if run not in found]
        for run, data in zip(wanted, objects.read([f"{ref}:{run}/ledger.json" for run in wanted]), strict=True):
            if data is not None:
                found[run] = data
    return found


def _is_active(data: bytes | None) -> bool:
    document = gitview.parse_json(data)
    return isinstance(document, Mapping) and document.get("status") == "active"


def _subject(objects: Objects, commit: str) -> str:
    body = objects.read([commit])[0] or b""
    message = body.split(b"\n\n", 1)[1] if b"\n\n" in body else b""
    return message.decode("utf-8", "replace").split("\n", 1)[0].strip()


# -- notes -------------------------------------------------------------------------------------------

def note_documents(root: Path, env: Mapping[str, str], commits: Iterable[str]) -> dict[str, dict[str, Any]]:
    """commit -> its handoff note document, merged over our notes ref and every fetched remote copy."""
    from shiftgit.git.notes import read_notes

    wanted = list(commits)
    found: dict[str, list[dict[str, Any]]] = {}
    for ref in notes_refs(root, env):
        for commit, text in read_notes(root, wanted, ref).items():
            document = handoff.parse_note(text)
            if document is not None:
                found.setdefault(commit, []).append(document)
    return {commit: handoff.merged(docs) for commit, docs in found.items()}


def notes_refs(root: Path, env: Mapping[str, str]) -> list[str]:
    """The machine records (refs/notes/shift-data, each remote's copy), then the human notes, whose notes
    written before the split still carry their JSON."""
    out = gitview.git(root, env, "for-each-ref", "--format=%(refname)", "refs/notes/shift", "refs/notes/shift-data",
                      "refs/shift-remote/")
    refs = [r for r in out.split() if r in ("refs/notes/shift", "refs/notes/shift-data")
            or r.endswith(("/notes/shift", "/notes/shift-data"))]
    return sorted(refs, key=lambda r: (not r.endswith("-data"), r))


def record_skip(root: Path, commits: Iterable[str], reason: str) -> list[str]:
    """Keep a push-time SHIFT_SKIP reason in each commit's note (its handoff, if any, kept)."""
    from shiftgit.git.notes import write_handoff

    env = gitview.hook_env()
    wanted = list(commits)
    notes = note_documents(root, env, wanted)
    updates = {}
    for commit in wanted:
        document = dict(notes.get(commit) or {"shift_note": handoff.NOTE_VERSION, "checkpoints": [], "runs": []})
        document["skip"] = f"pre-push: {reason}"
        updates[commit] = handoff.pair(handoff.redacted(document))
    if updates:
        write_handoff(root, updates, "shiftgit: SHIFT_SKIP at push")
    return list(updates)


# -- reports -----------------------------------------------------------------------------------------

def render(spec: str, verdicts: list[Verdict], title: str = "shiftgit ci check") -> str:
    failed = [v for v in verdicts if v.status == "failed"]
    judged = [v for v in verdicts if v.status != "no_run"]
    head = (f"{title} {spec}: {len(failed)} of {len(judged)} commit(s) with a run break the gate"
            if failed else f"{title} {spec}: {len(judged)} commit(s) with a run, all pass "
                           f"({len(verdicts) - len(judged)} without one)")
    lines = [head]
    for verdict in verdicts:
        where = f"{verdict.commit[:12]} {verdict.subject!r}" + (f" (run {', '.join(verdict.runs)})"
                                                                  if verdict.runs else "")
        if verdict.status == "skipped":
            lines.append(f"  {where}: passed with SHIFT_SKIP: {verdict.skip}")
        elif verdict.status == "failed":
            lines.append(f"  {where}:")
            for problem in verdict.problems:
                lines.append(f"    [rule {problem.rule}] {problem.what}")
                lines += [f"        {detail}" for detail in problem.details]
                lines += [f"      fix: {fix}" for fix in problem.fix]
    if failed:
        lines.append("  " + REWRITE_FIX.format(commit=failed[0].commit[:12]))
    return "\n".join(lines)


def to_json(spec: str, verdicts: list[Verdict], fetched: Mapping[str, Any]) -> dict[str, Any]:
    return {"range": spec, "ok": not any(v.status == "failed" for v in verdicts), "notes": dict(fetched),
            "commits": [v.to_dict() for v in verdicts]}


def github_annotations(verdicts: list[Verdict]) -> list[str]:
    """GitHub Actions workflow commands: one error per broken rule of each failing commit."""
    out = []
    for verdict in verdicts:
        for problem in verdict.problems if verdict.status == "failed" else ():
            title = f"shiftgit rule {problem.rule} in {verdict.commit[:12]}"
            text = " — ".join([problem.what, *problem.details[:3], *(f"fix: {f}" for f in problem.fix[:1])])
            out.append(f"::error title={_escape(title, True)}::{_escape(text, False)}")
    return out


def _escape(text: str, prop: bool) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)


def fetch_notes(root: Path, env: Mapping[str, str], spec: str) -> dict[str, Any]:
    """Fetch the notes of the range's remote into private refs (never over local notes), if there is one."""
    from shiftgit.git.sync import notes_refspec

    remotes = gitview.git(root, env, "remote").split()
    named = spec.split("/", 1)[0] if "/" in spec.split("..", 1)[0] else ""
    remote = named if named in remotes else ("origin" if "origin" in remotes else (remotes[0] if remotes else None))
    if remote is None:
        return {"remote": None, "fetched": False, "error": "no remote: judged with the notes here"}
    try:
        gitview.git(root, env, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote,
                    notes_refspec(remote))
    except GitError as exc:
        first = (exc.stderr.strip().splitlines() or ["no output"])[0]
        return {"remote": remote, "fetched": False, "error": f"{first}: judged with the notes here"}
    return {"remote": remote, "fetched": True, "error": None}
