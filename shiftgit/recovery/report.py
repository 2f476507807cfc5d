"""`shiftgit report`: a run's postmortem, from its ledger and every checkpoint this clone knows of.

The contract; the timeline of checkpoints (milestones marked, each with its checks' passed / failed /
stale counts and spend); every check's latest state; effects and approvals with their history;
amendments; constraints added and lifted; the stop reason; spend against budgets; the receipt.
`document` gathers it as JSON; `markdown` and `html` render it. The HTML is one self-contained file
(inline CSS and SVG, no script, nothing loaded from anywhere), every recorded text escaped.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from shiftgit import textsafe
from shiftgit.ledger.budgets import number
from shiftgit.ledger.checkstates import STATES, check_states
from shiftgit.ledger.store import Store
from shiftgit.recovery import steps

MAX_FAILING = 5


def document(store: Store, run: str) -> dict[str, Any]:
    ledger = store.read(run)
    points = steps.checkpoints(store, run)
    contract = ledger.contract.to_dict()
    return {
        "run": run, "status": ledger.status, "created_at": ledger.created_at, "updated_at": ledger.updated_at,
        "contract": {k: contract.get(k) for k in ("goal", "stop_when", "owner", "scope", "allow", "forbid", "accept",
                                                  "artifacts")},
        "timeline": [{"seq": p.seq, "at": p.at, "step": p.step or p.note or p.auto, "milestone": p.milestone,
                      "checks": _counts(check_states(ledger, p)),
                      "failing": [t for c in p.checks for t in c.failing][:MAX_FAILING],
                      "spend": p.spend.to_dict(), "files": len(p.files)} for p in points.values()],
        "checks": [_check(e) for e in check_states(ledger)],
        "effects": [{"key": e.key, "kind": e.kind, "state": e.state, "reversibility": e.reversibility,
                     "result": e.result, "created_at": e.created_at, "updated_at": e.updated_at,
                     "history": [dict(h) for h in e.history]} for e in ledger.effects],
        "approvals": [{"key": a.key, "state": a.state, "reason": a.reason, "requested_at": a.requested_at,
                       "decided_at": a.decided_at, "by": a.by, "history": [dict(h) for h in a.history]}
                      for a in ledger.approvals],
        "amendments": [a.to_dict() for a in ledger.amendments],
        "constraints": [c.to_dict() for c in ledger.constraints],
        "stop": ledger.stop.to_dict() if ledger.stop else None,
        "spend": ledger.spend.to_dict(),
        "budgets": {k: v for k, v in ledger.contract.budgets.to_dict().items() if v is not None},
        "receipt": ledger.receipt.to_dict() if ledger.receipt else None,
    }


def _counts(entries: list[dict[str, Any]]) -> dict[str, int]:
    return {state: sum(1 for e in entries if e["state"] == state) for state in STATES}


def _check(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A check's latest state (ledger/checkstates.py): passed, failed, stale or never_attempted."""
    keep = ("name", "state", "exit_code", "at", "failing", "argv", "acceptance", "checkpoint")
    return {k: (list(entry[k])[:MAX_FAILING] if k == "failing" else entry.get(k)) for k in keep}


# -- Markdown -------------------------------------------------------------------------------------

def _md(value: Any) -> str:
    return " ".join(str(value).split()).replace("|", "\\|") if value is not None else "—"


def markdown(doc: Mapping[str, Any]) -> str:
    c = doc["contract"]
    out = [f"# Postmortem: run {_md(doc['run'])} ({_md(doc['status'])})", "",
           f"- goal: {_md(c['goal'])}", f"- stop when: {_md(c['stop_when'])}",
           f"- started {_md(doc['created_at'])}, last change {_md(doc['updated_at'])}"]
    out += [f"- {key}: {', '.join(_md(v) for v in c[key])}" for key in ("scope", "allow", "forbid", "accept")
            if c.get(key)]
    out += ["", "## Timeline", "", "| # | at | step | checks | files |", "|---|---|---|---|---|"]
    for p in doc["timeline"]:
        counts = ", ".join(f"{n} {k}" for k, n in p["checks"].items() if n)
        step = _md(p["step"]) + (" **(milestone)**" if p["milestone"] else "")
        out.append(f"| {p['seq']} | {_md(p['at'])} | {step} | {counts or '—'} | {p['files']} |")
    out += ["", "## Checks (latest state)", ""]
    out += [f"- {_md(k['name'])}: {k['state']} (exit {_md(k['exit_code'])}, started {_md(k['at'])})"
            + (f"; failing {', '.join(_md(t) for t in k['failing'])}" if k["failing"] else "")
            for k in doc["checks"]] or ["- none recorded"]
    out += ["", "## Effects", ""]
    for e in doc["effects"]:
        out.append(f"- {_md(e['key'])} ({_md(e['kind'])}, {_md(e['reversibility'])}): {_md(e['state'])}"
                   + (f" — {_md(e['result'])}" if e["result"] else ""))
        out += [f"  - {_md(h.get('at'))}: {_md(h.get('state') or h.get('event'))}" for h in e["history"]]
    out += [] if doc["effects"] else ["- none"]
    out += ["", "## Approvals", ""]
    out += [f"- {_md(a['key'])}: {_md(a['state'])}" + (f" — {_md(a['reason'])}" if a["reason"] else "")
            + (f" (by {_md(a['by'])} at {_md(a['decided_at'])})" if a["decided_at"] else "")
            for a in doc["approvals"]] or ["- none"]
    out += ["", "## Amendments", ""]
    out += [f"- {_md(a.get('at'))}: {_md(a.get('field'))} {_md(a.get('old'))} → {_md(a.get('new'))} "
            f"because {_md(a.get('reason'))}" for a in doc["amendments"]] or ["- none"]
    out += ["", "## Constraints", ""]
    out += [f"- {_md(x['text'])}: added {_md(x.get('added_at'))}"
            + (f", lifted {_md(x.get('lifted_at'))} because {_md(x.get('reason'))}" if x.get("status") == "lifted"
               else ", active") for x in doc["constraints"]] or ["- none"]
    stop = doc["stop"]
    out += ["", "## Stop", "", f"- {_md(stop['reason'])} at {_md(stop['at'])}: {_md(stop.get('detail'))}" if stop
            else "- not stopped"]
    out += ["", "## Spend against budgets", ""]
    out += [f"- {line}" for line in spend_lines(doc)]
    receipt = doc["receipt"]
    out += ["", "## Receipt", ""]
    if receipt:
        out.append(f"- {_md(receipt.get('status'))} at {_md(receipt.get('at'))}")
        out += [f"- known failure: {_md(k)}" for k in receipt.get("known_failures") or []]
        out += [f"- artifact: {_md(a)}" for a in receipt.get("artifacts") or []]
    else:
        out.append("- none yet (`shiftgit finish` writes it)")
    return "\n".join(out) + "\n"


def spend_lines(doc: Mapping[str, Any]) -> list[str]:
    spend, budgets = doc["spend"], doc["budgets"]
    lines = []
    for key, unit in (("tokens", "tokens"), ("cost", "cost"), ("minutes", "minutes")):
        used = spend.get(key, 0)
        limit = budgets.get(key)
        lines.append(f"{unit}: {number(used)} of {number(limit)}" if limit else f"{unit}: {number(used)} (no budget)")
    return lines


# -- HTML -----------------------------------------------------------------------------------------

STYLE = """body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
.passed{color:#176b2c}.failed{color:#a11}.stale{color:#8a6d00}.milestone{font-weight:bold}
svg text{font:11px system-ui,sans-serif}"""


def _e(value: Any) -> str:
    """Recorded text for the page: one line, HTML-escaped, every control character (ESC, C1, bidi) shown as an
    escape: a page saved from a terminal or read with `cat` obeys none of them."""
    return html.escape(textsafe.visible("—" if value is None else " ".join(str(value).split())), quote=True)


def html_page(doc: Mapping[str, Any]) -> str:
    c = doc["contract"]
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Postmortem: {_e(doc['run'])}"
             f"</title><style>{STYLE}</style></head><body>",
             f"<h1>Postmortem: run {_e(doc['run'])} ({_e(doc['status'])})</h1>",
             f"<p><b>Goal:</b> {_e(c['goal'])}<br><b>Stop when:</b> {_e(c['stop_when'])}</p>",
             "<h2>Timeline</h2>", timeline_svg(doc["timeline"]),
             "<table><tr><th>#</th><th>at</th><th>step</th><th>checks</th><th>failing</th></tr>"]
    for p in doc["timeline"]:
        counts = " ".join(f"<span class=\"{k}\">{n} {k}</span>" for k, n in p["checks"].items() if n)
        mark = " class=\"milestone\"" if p["milestone"] else ""
        parts.append(f"<tr{mark}><td>{p['seq']}</td><td>{_e(p['at'])}</td><td>{_e(p['step'])}"
                     f"{' (milestone)' if p['milestone'] else ''}</td><td>{counts or '—'}</td>"
                     f"<td>{_e(', '.join(p['failing'])) if p['failing'] else ''}</td></tr>")
    parts.append("</table><h2>Checks (latest state)</h2><ul>")
    parts += [f"<li class=\"{k['state']}\">{_e(k['name'])}: {k['state']} (exit {_e(k['exit_code'])})</li>"
              for k in doc["checks"]] or ["<li>none recorded</li>"]
    parts.append("</ul><h2>Effects and approvals</h2><ul>")
    parts += [f"<li>{_e(e['key'])} ({_e(e['kind'])}): {_e(e['state'])}</li>" for e in doc["effects"]]
    parts += [f"<li>approval {_e(a['key'])}: {_e(a['state'])}</li>" for a in doc["approvals"]]
    parts.append("</ul><h2>Amendments and constraints</h2><ul>")
    parts += [f"<li>{_e(a.get('field'))}: {_e(a.get('new'))} — {_e(a.get('reason'))}</li>" for a in doc["amendments"]]
    parts += [f"<li>{_e(x['text'])}: {_e(x.get('status'))}" + (f" — {_e(x.get('reason'))}" if x.get("reason") else "")
              + "</li>" for x in doc["constraints"]]
    stop = doc["stop"]
    parts.append("</ul><h2>Stop</h2><p>" + (f"{_e(stop['reason'])}: {_e(stop.get('detail'))}" if stop else
                                             "not stopped") + "</p>")
    parts += ["<h2>Spend against budgets</h2>", spend_svg(doc), "<ul>"]
    parts += [f"<li>{_e(line)}</li>" for line in spend_lines(doc)]
    receipt = doc["receipt"]
    parts.append("</ul><h2>Receipt</h2><p>" + (f"{_e(receipt.get('status'))} at {_e(receipt.get('at'))}"
                                               if receipt else "none yet") + "</p></body></html>\n")
    return "".join(parts)


def timeline_svg(timeline: Sequence[Mapping[str, Any]]) -> str:
    """One dot per checkpoint: green all passed, red any failed, amber only stale, grey no checks."""
    width = max(200, 40 * len(timeline) + 40)
    dots = []
    for i, p in enumerate(timeline):
        counts = p["checks"]
        colour = ("#a11" if counts["failed"] else "#176b2c" if counts["passed"] else
                  "#d4a300" if counts["stale"] else "#999")
        x = 30 + 40 * i
        ring = " stroke=\"#000\" stroke-width=\"2\"" if p["milestone"] else ""
        dots.append(f"<circle cx=\"{x}\" cy=\"20\" r=\"8\" fill=\"{colour}\"{ring}><title>#{p['seq']} "
                    f"{_e(p['step'])}</title></circle>"
                    f"<text x=\"{x}\" y=\"45\" text-anchor=\"middle\">{p['seq']}</text>")
    line = f"<line x1=\"30\" y1=\"20\" x2=\"{30 + 40 * max(len(timeline) - 1, 0)}\" y2=\"20\" stroke=\"#bbb\"/>"
    return f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"55\">{line}{''.join(dots)}</svg>"


def spend_svg(doc: Mapping[str, Any]) -> str:
    """A bar per budget: the share spent (red past the budget)."""
    bars = []
    for i, key in enumerate(k for k in ("tokens", "cost", "minutes") if doc["budgets"].get(k)):
        share = float(doc["spend"].get(key, 0)) / float(doc["budgets"][key])
        width = int(min(share, 1.0) * 200)
        colour = "#a11" if share > 1 else "#176b2c"
        y = 5 + 22 * i
        bars.append(f"<text x=\"0\" y=\"{y + 12}\">{key}</text><rect x=\"60\" y=\"{y}\" width=\"200\" height=\"14\" "
                    f"fill=\"#eee\"/><rect x=\"60\" y=\"{y}\" width=\"{width}\" height=\"14\" fill=\"{colour}\"/>"
                    f"<text x=\"268\" y=\"{y + 12}\">{share:.0%}</text>")
    if not bars:
        return "<p>no budgets set</p>"
    height = 10 + 22 * len(bars)
    return f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"320\" height=\"{height}\">{''.join(bars)}</svg>"
