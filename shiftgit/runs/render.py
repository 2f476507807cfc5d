"""Reports and human text built from ledgers: status, show, validate."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from shiftgit import textsafe
from shiftgit.errors import LedgerError, ShiftError
from shiftgit.ledger.budgets import number
from shiftgit.ledger.store import Store

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any

    from shiftgit.ledger.model import Ledger

TEXT_CAP = 200  # characters of recorded text per status line


def status_report(store: Store) -> dict[str, Any]:
    """Every run; one whose ledger cannot be read is listed with its `error`, the others as usual."""
    from shiftgit.git import ledgerref
    from shiftgit.git.notes import NOTES_REF
    from shiftgit.git.sources import collect, pick
    from shiftgit.ledger.store import ARCHIVE_REF
    from shiftgit.runs.overview import row

    runs: list[dict[str, Any]] = []
    working = store.ledger_files()  # every run's file: one directory listing, one open each
    run_ids = list(working)
    listing = ledgerref.listing(store.repo, ARCHIVE_REF, NOTES_REF)  # one git process: ledger refs, archive, notes
    refs = ledgerref.names(listing)
    records = collect(store, run_ids, listing, working)  # the newest record of each run (git/sources.py)
    for run in run_ids:
        found = records.get(run, [])
        here = next((source for source in found if source.kind != "published"), None)  # the file, read there
        try:  # read-only: the checked JSON, no model (runs/overview.py)
            document = store.document(run, migrate=True, data=here.data if here else None,
                                      parsed=here.document if here else None)
        except ShiftError as exc:
            runs.append({"id": run, "status": "error", "goal": None, "stop": None,
                         "error": textsafe.one_line(str(exc), 600)})
            continue
        runs.append({**row(document), **_newest(run, found, pick)})
    runs += _archived(store, {r["id"] for r in runs}) if ARCHIVE_REF in refs else []
    runs += _published_only(store, listing, frozenset(r["id"] for r in runs), pick)
    noted = NOTES_REF in refs
    skipped = {"skipped": store.skipped_runs()}  # run directories under names no run may have: named, not read
    try:
        store.active_run()  # an unreadable pointer is reported, never taken for "no active run"
    except ShiftError as exc:
        return {"active": None, "active_error": textsafe.one_line(str(exc), 600), "runs": runs,
                **_takeover(store, noted), **skipped}
    return {"active": _active(store), "runs": runs, **_takeover(store, noted), **skipped}


def _archived(store: Store, here: set[str]) -> list[dict[str, Any]]:
    """The archived runs (refs/shift/archive) not in the work tree: `"archived": true`, read-only."""
    from shiftgit import rawjson
    from shiftgit.git.archive import read_ledgers

    rows = []
    for run, data in sorted(read_ledgers(store.repo).items()):
        if run in here:
            continue
        try:
            doc = rawjson.loads(data)
        except ValueError:
            continue
        if isinstance(doc, dict):
            found, terms = doc.get("checkpoint"), doc.get("contract")
            point: dict[str, Any] = found if isinstance(found, dict) else {}
            contract: dict[str, Any] = terms if isinstance(terms, dict) else {}
            rows.append({"id": run, "status": doc.get("status"), "goal": contract.get("goal"),
                         "stop": doc.get("stop"), "checkpoint": point.get("seq"), "updated_at": doc.get("updated_at"),
                         "archived": True})
    return rows


def _published_only(store: Store, listing: str, here: frozenset[str], pick: Callable[[list[Any]], Any]) -> list[Any]:
    """Runs another clone published whose ledger is not in this work tree (never pushed to this branch), when the
    newest record says `active`: the run to take over, with the command that restores it here."""
    from shiftgit.git.sources import lost_runs
    from shiftgit.runs.overview import row

    rows = []
    for run, source in lost_runs(store, listing, here).items():  # (a run on another branch here is not lost)
        try:
            document = store.document(run, migrate=True, data=source.data, parsed=source.document)
        except ShiftError:
            continue  # a record the schema refuses: `resume RUN` names it
        rows.append({**row(document), **_newest(run, [source], pick), "published_only": True})
    return rows


def errors(report: dict[str, Any]) -> list[str]:
    """One line per thing status could not read: a run's ledger (`RUN: why`), the active-run pointer."""
    found = [f"{run['id']}: {run['error']}" for run in report["runs"] if run.get("error")]
    return found + ([report["active_error"]] if report.get("active_error") else []) + list(report.get("skipped") or [])


def exit_code(report: dict[str, Any]) -> int:
    """0 all read; 1 some run unreadable, listed beside the healthy ones; 2 not one run could be read."""
    runs = [run for run in report["runs"] if not run.get("archived")]  # archived ones are read from git, never broken
    if runs and all(run.get("error") for run in runs):
        return 2
    return 1 if errors(report) else 0


def _active(store: Store) -> str | None:
    """The run discovery picks (ledger/discovery.py), as every command without --run would."""
    from shiftgit.ledger.discovery import try_discover

    pick = try_discover(store)
    return pick.run if pick else None


def _newest(run: str, records: list[Any], pick: Callable[[list[Any]], Any]) -> dict[str, Any]:
    """The newest record of the run (git/sources.pick, imported once by the caller: not once per run), and the
    command that adopts it when it is not here."""
    source = pick(records)
    if source is None:
        return {"source": None}
    entry: dict[str, Any] = {"source": {**source.to_dict(), "describe": source.describe()}}
    if source.kind == "published":
        entry["adopt"] = f"shiftgit resume {run} --adopt"
    return entry


def _takeover(store: Store, noted: bool) -> dict[str, Any]:
    """The last background publish, and a hint when this clone never fetched what remotes published (`noted`:
    refs/notes/shift is here, so there is no hint to give)."""
    from shiftgit.git import fetchstate, publish

    return {"publish": publish.last_result(store.repo), "hint": fetchstate.sync_hint(store.repo, noted)}


def status_text(report: dict[str, Any]) -> str:
    from shiftgit.git.publish import describe

    tail = [line for line in (describe(report.get("publish")), report.get("hint")) if line]
    if not report["runs"]:
        return "\n".join(["no runs yet; start one with `shiftgit start ID --goal ... --stop-when ...`", *tail])
    lines = [f"! active-run pointer: {report['active_error']}"] if report.get("active_error") else []
    archived = [run for run in report["runs"] if run.get("archived")]
    for run in report["runs"]:
        if run.get("archived"):
            continue
        if run.get("error"):
            lines.append(f"! {run['id']:<20} {'UNREADABLE':<9} {run['error']}")
            continue
        mark = "*" if run["id"] == report["active"] else " "
        step = textsafe.one_line(run["step"] or "", TEXT_CAP)
        where = f"#{run['checkpoint']} {step}".strip() if run["checkpoint"] else "no checkpoint"
        stop = f" [stopped: {textsafe.one_line(str(run['stop']['reason']))}]" if run["stop"] else ""
        lines.append(f"{mark} {run['id']:<20} {textsafe.one_line(str(run['status'])):<9} {where}{stop}")
        if run["next"]:
            lines.append(f"    next: {textsafe.one_line(run['next'], TEXT_CAP)}")
        lines += [f"    {textsafe.one_line(line, TEXT_CAP)}" for line in _attention_lines(run)]
        if run.get("adopt"):
            what = "not in this work tree, published" if run.get("published_only") else "newer record"
            lines.append(f"    {what}: {textsafe.one_line(run['source']['describe'])}; adopt it: `{run['adopt']}`")
    if archived:
        lines.append(f"  ({len(archived)} archived run(s): `shiftgit runs --archived`)")
    return "\n".join([*lines, *tail])


def _attention_lines(run: dict[str, Any]) -> list[str]:
    spend = run["spend"]
    out = []
    if run["budgets"] or any(spend.values()):
        out.append(f"spent: {number(spend['tokens'])} tokens, {number(spend['cost'])} cost, "
                   f"{number(spend['minutes'])} minutes"
                   + (f" of {', '.join(f'{number(v)} {k}' for k, v in sorted(run['budgets'].items()))}"
                      if run["budgets"] else ""))
    out += [f"BUDGET EXHAUSTED: {b}" for b in run["budget_exhausted"]]
    out += [f"effect outcome unknown: {k} (shiftgit effect reconcile {k} --state ...)" for k in run["unknown_effects"]]
    out += [f"approval pending: {k}" for k in run["pending_approvals"]]
    return out


def summary(document: Mapping[str, Any]) -> str:
    """`show`'s text from the ledger's checked JSON (`Store.document`), as runs/overview.py reads it for `status`:
    what a record leaves out is the model's default; the model is built only to judge effects and approvals."""
    contract, point = document["contract"], document.get("checkpoint")
    lines = [f"run {document['run']} ({document.get('status', 'active')})", f"  goal: {contract['goal']}",
             f"  stop when: {contract['stop_when']}"]
    lines += [f"  constraint {c['id']}: {c['text']}" for c in document.get("constraints") or ()
              if c.get("status", "active") == "active"]
    if point:
        lines.append(f"  checkpoint #{point['seq']} on {(point.get('base') or 'no commit')[:12]}: "
                     f"{point.get('step') or ''}")
        then = point.get("next") or {}
        if then.get("action"):
            lines.append(f"  next: {then['action']}" + (f" (done when {then['done_when']})"
                                                         if then.get("done_when") else ""))
        for check in point.get("checks") or ():
            lines.append(f"  check {check['name']}: exit {check.get('exit_code')}"
                         + ("" if check.get("fresh") else " (stale)"))
    if document.get("pending_checks"):
        lines.append(f"  {len(document['pending_checks'])} check(s) since the last checkpoint")
    stop = document.get("stop")
    if stop:
        lines.append(f"  stopped: {stop['reason']} {stop.get('detail') or ''}".rstrip())
    lines += _effect_lines(document)
    return "\n".join(lines)


def _effect_lines(document: Mapping[str, Any]) -> list[str]:
    from shiftgit.runs import overview

    out = []
    if document.get("effects"):  # imported only when there is something to say (show is run often)
        from shiftgit.effects import runner as effects
        from shiftgit.ledger.model import Effect

        out += [f"  effect {e.key} ({e.kind}, {e.reversibility}): {effects.state_of(e)}"
                for e in map(Effect.from_dict, document["effects"])]
    if document.get("approvals"):
        from shiftgit.effects import approvals
        from shiftgit.ledger.model import Approval

        out += [f"  approval {a.key}: {approvals.state_of(a)}" for a in map(Approval.from_dict, document["approvals"])]
    out += [f"  {line}" for line in _attention_lines(overview.row(dict(document)))
            if not line.startswith("effect outcome")]
    return out


def markdown(ledger: Ledger) -> str:
    c = ledger.contract
    out = [f"# Run `{ledger.run}` — {ledger.status}", "", f"**Goal:** {c.goal}  ", f"**Stop when:** {c.stop_when}"]
    if c.owner:
        out.append(f"**Owner:** {c.owner}")
    budgets = {k: v for k, v in c.budgets.to_dict().items() if v is not None}
    if budgets:
        out.append(f"**Budgets:** {', '.join(f'{k} {v}' for k, v in sorted(budgets.items()))}; spent "
                   f"{ledger.spend.tokens} tokens, {ledger.spend.cost} cost, {ledger.spend.minutes} minutes")
    for title, values in (("Scope", c.scope), ("Allowed effects", c.allow), ("Forbidden effects", c.forbid)):
        if values:
            out.append(f"**{title}:** {', '.join(values)}")
    if c.accept:
        accept = ", ".join(f"{a.name} (`{' '.join(a.argv) or a.text}`)" for a in c.accept)
        out.append(f"**Acceptance checks:** {accept}")
    out += ["", "## Constraints", ""]
    out += [f"- {'~~' + x.text + '~~ (lifted: ' + str(x.reason) + ')' if x.status == 'lifted' else x.text}"
            f" `{x.id}`" for x in ledger.constraints] or ["- none"]
    point = ledger.checkpoint
    if point:
        out += ["", f"## Checkpoint {point.seq}: {point.step or ''}", "",
                f"- base `{point.base}` on {point.branch or 'detached HEAD'}, {point.at}"]
        if point.next.action:
            out.append(f"- next: {point.next.action}" + (f" — done when {point.next.done_when}"
                                                          if point.next.done_when else ""))
        for title, items in (("done", point.done), ("doing", point.doing), ("blocked", point.blocked),
                             ("open question", point.questions)):
            out += [f"- {title}: {i.text}" for i in items]
        out += [f"- decision: {d.text}" + (f" — {d.rationale}" if d.rationale else "") for d in point.decisions]
        out += [f"- changed: `{f.path}` ({f.status})" for f in point.files[:50]]
        out += [f"- check `{k.name}`: `{' '.join(k.argv)}` → exit {k.exit_code}"
                + (f", failing {', '.join(k.failing)}" if k.failing else "") + ("" if k.fresh else " (stale)")
                for k in point.checks]
    if ledger.history:
        out += ["", "## Earlier checkpoints", ""]
        out += [f"- {h.seq}: {h.step or ''}" for h in reversed(ledger.history[-20:])]
    if ledger.receipt:
        r = ledger.receipt
        out += ["", f"## Receipt: {r.status}", "", f"- reviewer: {r.reviewer_action or '—'}"]
        out += [f"- assumption: {a}" for a in r.assumptions] + [f"- known failure: {k}" for k in r.known_failures]
        out += [f"- check `{k.get('name')}`: {k.get('state', 'exit ' + str(k.get('exit_code')))}" for k in r.checks]
        out += [f"- artifact {a.get('name')}: {a.get('state')}" + (f" ({a['evidence']})" if a.get("evidence") else "")
                if isinstance(a, Mapping) else f"- commit `{a}`" for a in r.artifacts]
        if r.extra.get("override"):
            out.append(f"- finished over unmet acceptance checks: {r.extra['override']}")
    if ledger.reviews or ledger.confirmations:
        out += ["", "## Reviews and confirmations", ""]
        out += [f"- review `{v.id}` ({v.status}{', by ' + v.by if v.by else ''}): {v.text}"
                + (f" — `{v.file}`" + (f":{v.line}" if v.line else "") if v.file else "")
                + (f" — resolved: {v.reason}" if v.status == "resolved" else "") for v in ledger.reviews]
        out += [f"- milestone #{c.seq} ({c.step or ''}): {c.state}" + (f" by {c.by}" if c.by else "")
                + (f" — correction: {c.correction}" if c.correction else "") for c in ledger.confirmations]
    return "\n".join(out) + "\n"


def validation_report(store: Store, runs: Sequence[str]) -> dict[str, Any]:
    """Validate ledgers without raising: every file, every error with its JSON path."""
    from shiftgit import rawjson

    files = []
    for run in runs or store.run_ids():
        path = store.ledger_path(run)
        rel = store.rel(path)
        errors: list[str] = []
        try:
            data = path.read_bytes()
            document = rawjson.loads(data)  # json's own message for corrupt JSON; one line for JSON nested too deep
            from shiftgit.ledger.schema import check_version, parse_ledger, schema_errors

            check_version(document, rel)
            errors = schema_errors(document)
            if not errors:
                parse_ledger(data, rel)  # what the schema allows and a record cannot hold (LedgerError)
        except FileNotFoundError:
            errors = [f"no such run {run!r}"]
        except ValueError as exc:
            errors = [f"corrupt JSON: {exc}"]
        except LedgerError as exc:
            errors = [str(exc)]
        files.append({"path": rel, "run": run, "valid": not errors, "errors": errors})
    return {"valid": all(f["valid"] for f in files), "files": files}
