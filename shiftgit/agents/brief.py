"""The text an agent receives at session start: the run's briefing, as data with its provenance.

At session start the briefing is a summary built here from the ledger's JSON (`Store.document`):
goal, stop condition, every active constraint, the latest step, next action, open items, failing
checks, effects whose outcome is open, and whether the tree still matches the record. An agent hook
must cost at most 3 Python start-ups, and importing the ledger model alone costs about 1.4, `resume`
about 2.7: the hook never imports them. `resume=True` (the MCP `briefing` tool) asks
`resume.build_report(store, run, run_checks=False)` first and falls back to the summary when it fails.
Nothing here runs a recorded command. Ledger text is quoted (JSON string syntax, every control
character escaped), never phrased as instructions, and sits in one fenced block that no recorded text
can close (`textsafe`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence

from shiftgit import __version__, rawjson, textsafe
from shiftgit.agents.origin import provenance
from shiftgit.ledger.store import Store

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from typing import Any

    from shiftgit.recovery.freshness import Freshness


CONTEXT_LIMIT = 10_000  # Claude Code caps additionalContext at 10,000 characters
# Codex moves hook output of more than ~2,500 tokens, counted as bytes / 4, to a file and shows the model
# only its head and tail (codex-rs hooks/src/output_spill.rs): its briefing is kept under 10,000 bytes.
BYTE_LIMITS = {"codex": 9_900}
CUT_MARK = "\n[... cut to fit 10,000 characters; the full record: `shiftgit show RUN --markdown`]"
TEXT_CAP = 400
CONSTRAINTS_BUDGET = 5_000
ITEMS_SHOWN = 10
OPEN_EFFECTS = ("planned", "attempted", "unknown", "failed")

Logger = Callable[[str], None]


def session_context(store: Store, run: str, *, agent: str | None = None, log: Logger | None = None,
                    limit: int = CONTEXT_LIMIT, resume: bool = False, shiftgit: str = "shiftgit",
                    picked: str | None = None, made_for: str | None = None) -> str:
    """Provenance header + briefing, at most `limit` characters (and the agent's byte limit, if it has one).

    `shiftgit`: how the reader's shell runs shiftgit (agents/shell.py); `picked`: how discovery chose the run;
    `made_for`: the agent and version the briefing is produced for (agents/versions.py)."""
    from shiftgit.agents.published import newer_is_none

    document = _readable(store, run)
    if document is not None and newer_is_none(store, run, document):  # the git dir's files settle it: no git
        ahead = None
    else:  # its git processes run beside the freshness check
        ahead = _Ahead(lambda: _newer_published(store, run))
    tree, head = (None, None) if resume or document is None else _local_tree(store, run, document, shiftgit)
    newer = ahead.get() if ahead is not None else None  # another machine's (or worktree's) newer checkpoint is told
    header = provenance(store, run, newer, head)
    header += "".join(f"\n{line}" for line in _elsewhere(store, run, newer, document, shiftgit))
    if picked:
        header += f"\nshiftgit {picked}."
    if made_for:
        header += f"\nProduced for {made_for} by shiftgit {__version__}."
    if resume:
        body = briefing(store, run, log=log, shiftgit=shiftgit)
    else:
        body = ledger_summary(store, run, shiftgit, _document(newer.data) if newer is not None else document,
                              tree=tree if newer is None else None)
        if newer is not None:
            body += _local_problem(store, run)
    return fit(f"{header}\n\n{body}", limit, BYTE_LIMITS.get(agent or ""))


def _elsewhere(store: Store, run: str, newer: Any, document: Mapping[str, Any] | None, shiftgit: str) -> list[str]:
    """A fresh clone's missing sync, and another place's lease on the run (agents/published.py)."""
    from shiftgit.agents.published import owner_line, unsynced_hint

    record = _document(newer.data) if newer is not None else document
    lines = [unsynced_hint(store, shiftgit), owner_line(store, run, record, shiftgit) if record else None]
    return [line for line in lines if line]


class _Ahead:
    """A call in a thread, started at once (its git processes run while this thread starts its own)."""

    def __init__(self, call: Callable[[], Any]) -> None:
        import threading

        self.call = call
        self.result: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.result = self.call()
        except BaseException as exc:  # raised in the caller's thread
            self.error = exc

    def get(self) -> Any:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.result


def _newer_published(store: Store, run: str) -> Any:
    from shiftgit.git.sources import newer_published

    return newer_published(store, run)


def _readable(store: Store, run: str) -> dict[str, Any] | None:
    """This work tree's ledger as JSON; None when it cannot be read (the summary then says what it says)."""
    from shiftgit.errors import ShiftError

    try:
        return store.document(run)
    except (ShiftError, OSError, ValueError):
        return None


def _local_tree(store: Store, run: str, document: Mapping[str, Any],
                shiftgit: str) -> tuple[list[str] | None, str | None]:
    """The freshness lines for this work tree's ledger (DOCUMENT), ahead of knowing whether a newer published record
    is the one told (rarely), and HEAD's commit as that check read it; None when that check fails."""
    from shiftgit.errors import ShiftError
    from shiftgit.recovery.freshness import assess_document

    try:
        state = assess_document(store, run, document)
    except (ShiftError, OSError, ValueError):
        return None, None
    return _state_lines(state, shiftgit), state.head


def _local_problem(store: Store, run: str) -> str:
    """When the briefing tells a published record, whether this work tree's own file can be read at all."""
    from shiftgit.errors import ShiftError

    try:
        store.document(run)
    except ShiftError as exc:
        return f"\nthis work tree's ledger cannot be read: {exc}"
    return ""


def _document(data: bytes) -> dict[str, Any] | None:
    try:
        document = rawjson.loads(data)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def briefing(store: Store, run: str, *, log: Logger | None = None, shiftgit: str = "shiftgit") -> str:
    """The resume briefing (record only, no command rerun); the ledger summary when that fails."""
    try:
        return resume_briefing(store, run)
    except Exception as exc:  # fail open: the summary still tells the agent the essentials
        if log is not None and not isinstance(exc, ImportError):
            log(f"resume briefing failed, using the ledger summary: {exc!r}")
    return ledger_summary(store, run, shiftgit)


def resume_briefing(store: Store, run: str) -> str:
    resume = importlib.import_module("shiftgit.recovery.resume")
    report: dict[str, Any] = resume.build_report(store, run, run_checks=False)
    return str(report["briefing"]).rstrip("\n")  # it states the decision and its reasons itself


# -- the summary from the ledger's JSON ---------------------------------------------------------

def ledger_summary(store: Store, run: str, shiftgit: str = "shiftgit",
                   document: Mapping[str, Any] | None = None, tree: list[str] | None = None) -> str:
    """The summary of the ledger's JSON (`document`: a newer published record's, else this work tree's; `tree`:
    the freshness lines for this work tree's, computed already)."""
    document = document if document is not None else store.document(run)
    lines = _contract_lines(document)
    lines += _checkpoint_lines(document)
    lines += _effect_lines(document)
    lines += _feedback_lines(store, document)
    lines += tree if tree is not None else _tree_lines(store, run, document, shiftgit)
    fenced = textsafe.fence(lines, "shiftgit-record")
    fenced.append(f"commands: `{shiftgit} resume` (re-verify and decide), `{shiftgit} status`, "
                  f"`{shiftgit} checkpoint`")
    return "\n".join([*verify_first(document, run, shiftgit), *fenced])


def verify_first(document: Mapping[str, Any], run: str, shiftgit: str = "shiftgit") -> list[str]:
    """Said plainly before the record: no check was rerun for this briefing; a session built on an unverified one."""
    lines = []
    point = _map(document.get("checkpoint"))
    if _maps(point.get("checks")):
        lines.append(f"Evidence rerun: no, nothing was rerun for this briefing. First instruction: run "
                     f"`{shiftgit} verify {textsafe.one_line(run)}` before building on the record.")
    unverified = [s for s in _maps(document.get("sessions")) if s.get("verified_first") is False]
    if unverified:
        names = ", ".join(textsafe.one_line(f"{s.get('agent')} {s.get('id')}", 80) for s in unverified[-3:])
        lines.append(f"Warning: earlier work was built on an unverified handoff (session(s) {names} checkpointed "
                     "before any verify).")
    return lines


fallback_summary = ledger_summary  # the name tests and older callers use


def _contract_lines(ledger: Mapping[str, Any]) -> list[str]:
    contract = _map(ledger.get("contract"))
    lines = [f"run {textsafe.one_line(str(ledger.get('run')))} (status {_q(ledger.get('status'))})",
             f"goal: {_q(contract.get('goal'))}", f"stop condition: {_q(contract.get('stop_when'))}"]
    active = [c for c in _maps(ledger.get("constraints")) if c.get("status") == "active"]
    cap = min(TEXT_CAP, max(60, CONSTRAINTS_BUDGET // max(1, len(active))))  # every constraint, shortened if many
    shown = active if len(active) * 60 <= CONSTRAINTS_BUDGET else active[:CONSTRAINTS_BUDGET // 60 - 1]
    lines.append(f"active constraints ({len(active)}):")
    lines += [f"  - [{textsafe.one_line(str(c.get('id')))}] {_q(c.get('text'), cap)}" for c in shown]
    if len(shown) < len(active):  # past ~80 the rest would push the checkpoint and next action out of the bound
        lines.append(f"  - (+{len(active) - len(shown)} more active constraint(s) not shown: the briefing is bounded; "
                     f"`shiftgit show {textsafe.one_line(str(ledger.get('run')))} --json` lists every one)")
    if contract.get("scope"):
        lines.append(f"scope: {', '.join(_q(s) for s in contract['scope'])}")
    stop = _map(ledger.get("stop"))
    if stop:
        detail = _q(stop.get("detail")) if stop.get("detail") else ""
        lines.append(f"stopped: {_q(stop.get('reason'))} {detail}".rstrip())
    return lines


def _feedback_lines(store: Store, ledger: Mapping[str, Any]) -> list[str]:
    """Open reviews, milestones awaiting confirmation, and the repository's standing rules (plain JSON: the hook
    path loads no schema; `shiftgit memory list` checks the file)."""
    lines = [f"open review [{textsafe.one_line(str(r.get('id')))}]: {_q(r.get('text'))}"
             for r in _maps(ledger.get("reviews")) if r.get("status") == "open"]
    lines += [f"milestone #{c.get('seq')} awaits its owner's confirmation (`shiftgit confirm --by WHO`)"
              for c in _maps(ledger.get("confirmations")) if c.get("state") == "awaiting"]
    try:
        memory = rawjson.loads(store.inside("memory.json").read_bytes())
    except (OSError, ValueError):
        return lines
    import time

    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rules = [e for e in _maps(_map(memory).get("entries"))
             if not (isinstance(e.get("expires_at"), str) and e["expires_at"] <= now)]
    if rules:
        lines.append(f"standing rules ({len(rules)}, repository memory):")
        lines += [f"  - {_q(e.get('text'))} (approved by {_q(e.get('approved_by'), 80)})" for e in rules]
    return lines


def _checkpoint_lines(ledger: Mapping[str, Any]) -> list[str]:
    point = _map(ledger.get("checkpoint"))
    if not point:
        return ["no checkpoint recorded yet"]
    by = f" (recorded by shiftgit itself at {_q(point['auto'])}, no step described)" if point.get("auto") else ""
    base = textsafe.one_line(str(point.get("base") or "none")[:12])
    lines = [f"latest checkpoint #{point.get('seq')} at {_q(point.get('at'))} on commit {base}: "
             f"step {_q(point.get('step'))}{by}"]
    nxt = _map(point.get("next"))
    if nxt.get("action"):
        done_when = f", done when {_q(nxt.get('done_when'))}" if nxt.get("done_when") else ""
        lines.append(f"next action: {_q(nxt.get('action'))}{done_when}")
    for label, key in (("in progress", "doing"), ("blocked", "blocked"), ("open questions", "questions"),
                       ("done", "done")):
        lines += _items(label, _maps(point.get(key)))
    checks = _maps(point.get("checks"))
    failing = [c for c in checks if c.get("exit_code") != 0]
    lines.append(f"checks at that checkpoint: {len(checks)}, failing: {len(failing)}")
    lines += [_check_line(c) for c in failing[:ITEMS_SHOWN]]
    ran = {c.get("name") for c in checks} | {c.get("name") for c in _maps(ledger.get("pending_checks"))}
    never = [a for a in _maps(_map(ledger.get("contract")).get("accept")) if a.get("name") not in ran]
    lines += [f"  - acceptance check {_q(a.get('name'))}: never attempted" for a in never[:ITEMS_SHOWN]]
    pending = _maps(ledger.get("pending_checks"))
    if pending:
        lines.append(f"checks recorded since that checkpoint: {len(pending)}")
    return lines


def _items(label: str, items: Sequence[Mapping[str, Any]]) -> list[str]:
    if not items:
        return []
    shown = items[-ITEMS_SHOWN:]
    more = f" (latest {len(shown)} of {len(items)})" if len(items) > len(shown) else ""
    return [f"{label}{more}: " + "; ".join(_q(i.get("text")) for i in shown)]


def _check_line(check: Mapping[str, Any]) -> str:
    status = "timed out" if check.get("timed_out") else f"exit {check.get('exit_code')}"
    failing = ", ".join(_q(t) for t in (check.get("failing") or [])[:ITEMS_SHOWN]) or "no test ids parsed"
    fresh = "" if check.get("fresh") else " (ran against other content than the checkpoint's)"
    return f"  - {_q(check.get('name'))}: {status}, failing: {failing}{fresh}"


def _effect_lines(ledger: Mapping[str, Any]) -> list[str]:
    """Effects whose outcome is still open (the ones a fresh session must not repeat blindly)."""
    effects = [e for e in _maps(ledger.get("effects")) if e.get("state") in OPEN_EFFECTS]
    return [f"effect {_q(e.get('key'))} ({_q(e.get('kind'))}): {e.get('state')}" for e in effects[-ITEMS_SHOWN:]]


def _tree_lines(store: Store, run: str, ledger: Mapping[str, Any], shiftgit: str) -> list[str]:
    from shiftgit.recovery.freshness import assess_document

    return _state_lines(assess_document(store, run, ledger), shiftgit)


def _state_lines(state: Freshness, shiftgit: str) -> list[str]:
    if state.stale:
        return [textsafe.one_line(state.describe(shiftgit))]
    if state.unrecorded:  # fresh only thanks to a checkpoint shiftgit made by itself (pre-compact, session end)
        return [textsafe.one_line(f"working tree and HEAD match the latest checkpoint, which shiftgit recorded by "
                                  f"itself at {state.auto}; no step describes these files yet: "
                                  f"{', '.join(state.unrecorded[:20])} "
                                  f"(`{shiftgit} checkpoint --step TEXT --next TEXT` records one)")]
    return ["working tree and HEAD match the latest checkpoint"]


def _q(text: Any, cap: int = TEXT_CAP) -> str:
    """Ledger text as a quoted, one-line data value."""
    if text is None:
        return "(none)"
    return textsafe.quote(str(text), cap)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _maps(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def fit(text: str, limit: int, byte_limit: int | None = None) -> str:
    """At most `limit` characters and, when given, `byte_limit` bytes of UTF-8; the tail is cut."""
    if len(text) > limit:
        text = text[: limit - len(CUT_MARK)] + CUT_MARK
    if byte_limit is None or len(text.encode()) <= byte_limit:
        return text
    room = byte_limit - len(CUT_MARK.encode())
    return text.encode()[:room].decode("utf-8", "ignore") + CUT_MARK
