"""Retention, decided before storage grows: what `shiftgit gc` keeps (`.shift/config.json` "retention").

- an active (or stopped) run: its last `keep_last` snapshots (default 20);
- a finished run: its final checkpoint's snapshot always; the others for `finished_days` (14), or
  `failed_days` (90) when it ended blocked or abandoned, or stopped failing or out of budget;
- rescue refs (`rollback`'s keep-what-it-replaced): `rescue_days` (30);
- repository memory: entries past their expiry.
A snapshot a ledger (here or archived) names as its checkpoint's, or a note names, is always kept, and
nothing reachable from a branch or tag is ever dropped (git/retention.py). `--dry-run` changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from shiftgit.errors import UsageError
from shiftgit.git import retention as git_retention
from shiftgit.git.retention import Snap
from shiftgit.ledger.store import Store
from shiftgit.runs import memory
from shiftgit.runs.archive import documents

DEFAULTS = {"keep_last": 20, "finished_days": 14, "failed_days": 90, "rescue_days": 30}
SNAPSHOTS = "refs/shift/snapshots/"
RESCUE = "refs/shift/rescue/"
FAILED_STOPS = ("failed_after_retries", "budget_exhausted", "blocked_external", "crashed",
                "failed_after_retry_budget", "cancelled")  # the last two: schema 1 names
DAY = 86400


def policy(store: Store) -> dict[str, int]:
    config = store.read_config().get("retention") or {}
    merged = {**DEFAULTS, **{k: v for k, v in config.items() if k in DEFAULTS}}
    if merged["keep_last"] < 1:
        raise UsageError('.shift/config.json "retention": keep_last must be at least 1 (the latest checkpoint)')
    return merged


def _runs(store: Store) -> dict[str, tuple[Mapping[str, Any], bool]]:
    """run -> (ledger JSON, archived) for every run here and archived (here wins)."""
    found: dict[str, tuple[Mapping[str, Any], bool]] = {}
    for doc, archived in documents(store):
        run = doc.get("run")
        if isinstance(run, str) and run not in found:
            found[run] = (doc, archived)
    return found


def _kind(doc: Mapping[str, Any] | None) -> str:
    """active | finished | failed: which rule of the policy a run's snapshots follow."""
    if doc is None or doc.get("status") in (None, "active", "stopped"):
        return "active"
    found = doc.get("stop")
    stop: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    if doc.get("status") in ("blocked", "abandoned") or stop.get("reason") in FAILED_STOPS:
        return "failed"
    return "finished"


def _named(doc: Mapping[str, Any] | None) -> set[str]:
    point = doc.get("checkpoint") if doc else None
    snapshot = point.get("snapshot") if isinstance(point, Mapping) else None
    return {snapshot} if isinstance(snapshot, str) else set()


def keeper(rules: Mapping[str, int], kind: str, protected: set[str], now: float):  # type: ignore[no-untyped-def]
    """The policy for one run's chain: snapshots (newest first) -> the commits to keep."""
    def keep(snaps: list[Snap]) -> set[str]:
        if kind == "active":
            chosen = {s.commit for s in snaps[:rules["keep_last"]]}
        else:
            days = rules["failed_days" if kind == "failed" else "finished_days"]
            chosen = {s.commit for s in snaps[:1]} | {s.commit for s in snaps if s.time >= now - days * DAY}
        return chosen | {s.commit for s in snaps if s.commit in protected}
    return keep


def gc(store: Store, *, dry_run: bool = False, now: float | None = None) -> dict[str, Any]:
    repo = store.repo
    rules = policy(store)
    moment = time.time() if now is None else now
    started = time.time()
    bytes_before = git_retention.store_bytes(repo)
    refs_before = len(git_retention.refs_under(repo, "refs/shift/"))
    runs = _runs(store)
    named = set().union(*(_named(doc) for doc, _ in runs.values())) if runs else set()
    drop: list[str] = []
    keep: list[str] = []
    details: list[dict[str, Any]] = []
    old_tips: list[str] = []
    for ref in sorted(git_retention.refs_under(repo, SNAPSHOTS)):
        run = ref[len(SNAPSHOTS):]
        doc = runs.get(run, (None, False))[0]
        kind = _kind(doc)
        trim = _trim(repo, ref, rules, kind, named, moment, dry_run, old_tips)
        if trim is None:
            keep.append(ref)
            continue
        drop += [f"{ref}@{s.commit}" for s in trim.drop]
        keep += [f"{ref}@{s.commit}" for s in trim.keep]
        details += [{"ref": ref, "commit": s.commit, "seq": s.seq, "run": run, "rule": kind, "action": action}
                    for action, group in (("drop", trim.drop), ("keep", trim.keep)) for s in group]
    for ref, (oid, stamp) in sorted(git_retention.refs_under(repo, RESCUE).items()):
        if stamp >= moment - rules["rescue_days"] * DAY:
            keep.append(ref)
            continue
        if dry_run or git_retention.move(repo, ref, None, oid):
            drop.append(ref)
            old_tips.append(oid)
            details.append({"ref": ref, "commit": oid, "rule": "rescue", "action": "drop"})
    gone = memory.drop_expired(store, dry_run=dry_run)
    drop += [f"memory:{e['id']}" for e in gone]
    removed = 0 if dry_run else git_retention.prune_unreachable(repo, old_tips, started)
    return {"dry_run": dry_run, "policy": rules, "drop": drop, "keep": keep, "details": details,
            "bytes_before": bytes_before, "bytes_after": git_retention.store_bytes(repo),
            "refs_before": refs_before, "refs_after": len(git_retention.refs_under(repo, "refs/shift/")),
            "objects_removed": removed, "memory_dropped": gone}


def _trim(repo: Any, ref: str, rules: Mapping[str, int], kind: str, named: set[str], now: float,
          dry_run: bool, old_tips: list[str]) -> git_retention.Trim | None:
    """Plan and (unless dry_run) apply one chain's trim, again from the new tip whenever the ref moved."""
    for attempt in range(git_retention.RETRIES + 1):
        tip, snaps = git_retention.chain(repo, ref)
        protected = named | git_retention.named_in_notes(repo, (s.commit for s in snaps if s.is_snapshot))
        trim = git_retention.plan(repo, ref, keeper(rules, kind, protected, now), (tip, snaps))
        if trim is None or dry_run:
            return trim
        new = git_retention.rewrite(repo, trim)
        if git_retention.move(repo, ref, new, trim.tip):
            old_tips.append(trim.tip)
            return trim
        git_retention.retry_pause(attempt)
    raise UsageError(f"{ref} kept moving while gc ran (checkpoints in progress); run `shiftgit gc` again")


def text(report: Mapping[str, Any]) -> str:
    verb = "would drop" if report["dry_run"] else "dropped"
    lines = [f"{verb} {len(report['drop'])}:"] + [f"  {item}" for item in report["drop"]]
    lines.append(f"kept {len(report['keep'])} ref(s)/snapshot(s)")
    lines.append(f"object store: {report['bytes_before']} bytes before, {report['bytes_after']} after; refs under "
                 f"refs/shift/: {report['refs_before']} before, {report['refs_after']} after")
    if not report["dry_run"] and report["drop"]:
        lines.append("objects still packed are freed by git's own `git gc`")
    return "\n".join(lines)
