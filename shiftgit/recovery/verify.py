"""`verify`: rerun the latest checkpoint's checks exactly as recorded, compare, report drift.

A check is rerun with its recorded argv, cwd, timeout and shell flag (never a shell otherwise),
in the current environment (its recorded env *names* are checked for presence). Results are
compared by exit code and, for runners shiftgit parses, counts and failing test ids. When the
checkpoint holds the same command more than once, only its latest record is rerun.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, Protocol

from shiftgit.errors import ShiftError
from shiftgit.evidence import runner as evidence
from shiftgit.evidence.outcomes import parse_outcome
from shiftgit.git import record
from shiftgit.git.scope import in_scope
from shiftgit.ledger import trustdb
from shiftgit.ledger.model import Check, Checkpoint, Ledger
from shiftgit.ledger.store import Store
from shiftgit.recovery import trust

VERDICTS = ("reproduced", "regressed", "newly_passing", "changed", "flaky")
EXIT = {"reproduced": 0, "no_checks": 0, "mismatch": 1, "refused": 3}
LIST_CAP = 200


class Progress(Protocol):
    """Told about each rerun as it happens (the CLI shows a line per check on stderr); `echo` gets live output."""

    echo: BinaryIO | None

    def started(self, check: Check, index: int, total: int) -> None: ...

    def finished(self, check: Check, observation: Observation) -> None: ...


class Observation(NamedTuple):
    """One rerun of a check, now."""

    exit_code: int | None
    timed_out: bool
    duration_s: float
    outcome: Mapping[str, Any]
    error: str | None = None

    @property
    def failing(self) -> tuple[str, ...]:
        return tuple(self.outcome.get("failing") or ())

    def to_dict(self) -> dict[str, Any]:
        return {"exit_code": self.exit_code, "timed_out": self.timed_out, "duration_s": self.duration_s,
                "outcome": dict(self.outcome), "failing": list(self.failing), "error": self.error}


def recorded_dict(check: Check) -> dict[str, Any]:
    return {"exit_code": check.exit_code, "timed_out": check.timed_out, "duration_s": check.duration_s,
            "outcome": dict(check.outcome), "failing": list(check.failing), "started_at": check.started_at,
            "fresh": check.fresh}


def _known_runner(check: Check) -> bool:
    return check.outcome.get("runner") not in (None, "exit_code")


def signature(exit_code: int | None, outcome: Mapping[str, Any], known: bool) -> tuple[Any, ...]:
    """What must match: the exit code, and for a parsed runner its counts and failing ids."""
    if not known:
        return (exit_code,)
    return (exit_code, outcome.get("runner"), outcome.get("passed"), outcome.get("failed"),
            outcome.get("skipped"), tuple(sorted(outcome.get("failing") or ())))


def classify(recorded: Check, observations: Sequence[Observation]) -> str:
    known = _known_runner(recorded)
    seen = {signature(o.exit_code, o.outcome, known) for o in observations}
    if len(seen) > 1:
        return "flaky"
    now = observations[0]
    if seen == {signature(recorded.exit_code, recorded.outcome, known)}:
        return "reproduced"
    was_ok, is_ok = recorded.exit_code == 0, now.exit_code == 0
    if was_ok != is_ok:
        return "newly_passing" if is_ok else "regressed"
    if known:
        before, after = set(recorded.failing), set(now.failing)
        if after - before:
            return "regressed"
        if before - after:
            return "newly_passing"
    return "changed"


def rerun(root: Path, check: Check, echo: BinaryIO | None = None) -> Observation:
    """Run one recorded check again, the way it was recorded (its output also to `echo`, live)."""
    workdir = (root / (check.cwd or ".")).resolve()
    if not workdir.is_relative_to(root.resolve()) or not workdir.is_dir():
        return Observation(None, False, 0.0, {"runner": "exit_code"}, f"cwd {check.cwd!r} is not a directory here")
    argv = list(check.argv)
    if check.shell:
        argv = ["/bin/sh", "-c", argv[0] if len(argv) == 1 else " ".join(argv)]
    started = time.time()
    try:
        result = evidence.run(argv, cwd=str(workdir), timeout=check.timeout, echo=echo)
    except ShiftError as exc:
        return Observation(None, False, 0.0, {"runner": "exit_code"}, str(exc))
    junit = _fresh_junit(root, workdir, check.junit, started)
    outcome = parse_outcome(check.argv, result.output, result.exit_code, junit)
    return Observation(result.exit_code, result.timed_out, result.duration_s, outcome.to_dict())


def _fresh_junit(root: Path, workdir: Path, junit: str | None, since: float) -> str | None:
    """The JUnit file the rerun wrote (inside the work tree); an older one left from before is not its evidence."""
    if not junit:
        return None
    path = (workdir / junit).resolve()
    if not path.is_relative_to(root.resolve()):
        return None
    try:
        if path.stat().st_mtime < since - 1:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def drift(store: Store, ledger: Ledger, point: Checkpoint, worktree: str) -> dict[str, Any]:
    """Commits since the checkpoint, files changed since its content, changed files no check covers."""
    repo = store.repo
    rel = store.rel(store.ledger_path(ledger.run))
    state = record.head_state(repo, point, rel)
    files = record.edits_since(repo, point, worktree)
    covers = [glob for check in point.checks for glob in check.covers]
    changed = [f.path for f in files or ()]
    uncovered = [p for p in changed if not (covers and in_scope(p, covers))]
    return {
        "head_matches": state.matches, "head": state.head, "base": state.base,
        "commits": record.describe_commits(repo, state.commits),
        "content_known": files is not None,
        "files": [{"path": f.path, "status": f.status} for f in (files or ())][:LIST_CAP],
        "uncovered": uncovered[:LIST_CAP],
    }


def untrusted_report(store: Store, run: str, commands: Sequence[trustdb.Command]) -> list[dict[str, Any]]:
    prov = record.ledger_provenance(store.repo, store.rel(store.ledger_path(run)))
    return [{**c.to_dict(), "provenance": prov.to_dict(), "recorded_by": prov.describe()} for c in commands]


def verify(store: Store, run: str, *, repeat: int = 1, pinned: Sequence[str] = (),
           environ: Mapping[str, str] | None = None, ledger: Ledger | None = None,
           worktree: str | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Rerun, compare, report. Runs nothing this clone has not trusted (or `pinned` does not name)."""
    env = os.environ if environ is None else environ
    ledger = ledger or store.read(run)
    point = ledger.checkpoint
    report: dict[str, Any] = {"run": run, "checkpoint": point.seq if point else None, "result": "no_checks",
                              "checks": [], "drift": {}, "untrusted": []}
    if point is None:
        return report
    worktree = worktree or store.repo.worktree_build().result()  # begun before verify's code loaded (__main__)
    report["drift"] = drift(store, ledger, point, worktree)
    checks = trust.latest_per_command(point.checks)
    if not checks:
        return report
    refused = trustdb.untrusted(store.repo, [trustdb.command_of(c) for c in checks], pinned, env)
    if refused:
        report.update(result="refused", untrusted=untrusted_report(store, run, refused))
        return report
    report["checks"] = [_verify_one(store.repo.root, check, repeat, env, progress, (n, len(checks)))
                        for n, check in enumerate(checks, 1)]
    verdicts = {c["verdict"] for c in report["checks"]}
    report["result"] = "reproduced" if verdicts == {"reproduced"} else "mismatch"
    return report


def _verify_one(root: Path, check: Check, repeat: int, environ: Mapping[str, str], progress: Progress | None = None,
                place: tuple[int, int] = (1, 1)) -> dict[str, Any]:
    observations = []
    for _ in range(max(1, repeat)):
        if progress is not None:
            progress.started(check, *place)
        observations.append(rerun(root, check, progress.echo if progress is not None else None))
        if progress is not None:
            progress.finished(check, observations[-1])
    entry: dict[str, Any] = {
        "name": check.name, "argv": list(check.argv), "cwd": check.cwd,
        "sha256": trustdb.command_of(check).digest, "verdict": classify(check, observations),
        "recorded": recorded_dict(check), "now": observations[0].to_dict(),
        "missing_env": [name for name in check.env if name not in environ],
    }
    if len(observations) > 1:
        entry["runs"] = [o.to_dict() for o in observations]
    return entry


def exit_code(report: Mapping[str, Any]) -> int:
    return EXIT[report["result"]]


def _counts(data: Mapping[str, Any]) -> str:
    outcome = data.get("outcome") or {}
    counts = ", ".join(f"{outcome[k]} {k}" for k in ("passed", "failed", "skipped") if outcome.get(k) is not None)
    code = "timed out" if data.get("timed_out") else f"exit {data.get('exit_code')}"
    return code + (f", {counts}" if counts else "")


def text(report: Mapping[str, Any]) -> str:
    """Short plain text for people."""
    lines = [f"verify {report['run']}: {report['result']}"
             + (f" (checkpoint #{report['checkpoint']})" if report.get("checkpoint") else "")]
    for entry in report["untrusted"]:
        lines.append(f"  not trusted here: {' '.join(entry['argv'])}  (cwd {entry['cwd']}, sha256 {entry['sha256']})")
        lines.append(f"    recorded by {entry['recorded_by']}")
    if report["untrusted"]:
        lines.append(f"  nothing was run; after reading them, trust them with `shiftgit trust {report['run']}` "
                     "(or pin them in CI with --expect-sha256 HEX)")
    for entry in report["checks"]:
        lines.append(f"  {entry['verdict']:<13} {entry['name']}: recorded {_counts(entry['recorded'])}; "
                     f"now {_counts(entry['now'])}")
        for test in sorted(set(entry["now"]["failing"]) ^ set(entry["recorded"]["failing"]))[:10]:
            lines.append(f"    {'now failing' if test in entry['now']['failing'] else 'now passing'}: {test}")
        if entry["now"].get("error"):
            lines.append(f"    {entry['now']['error']}")
    lines += drift_lines(report.get("drift") or {})
    return "\n".join(lines)


def drift_lines(drift_report: Mapping[str, Any]) -> list[str]:
    if not drift_report:
        return []
    lines = []
    if not drift_report["head_matches"]:
        lines.append(f"  HEAD moved: {len(drift_report['commits'])} commit(s) since the checkpoint without its handoff")
        lines += [f"    {c['commit'][:12]} {c['author']}: {c['subject']}" for c in drift_report["commits"][:5]]
    if not drift_report["content_known"]:
        lines.append("  the checkpoint's content is not in this clone; file drift unknown")
    files = drift_report["files"]
    if files:
        lines.append(f"  {len(files)} file(s) changed since the checkpoint: "
                     + ", ".join(f["path"] for f in files[:10]) + (" ..." if len(files) > 10 else ""))
    if drift_report["uncovered"]:
        lines.append("  changed, covered by no check (--covers): " + ", ".join(drift_report["uncovered"][:10]))
    return lines
