"""The commit gate (SPEC §5): pure rules over what a commit stages -> every problem, each with its fix.

No I/O here: `githooks` reads the index git hands the hook and builds a `Staging`. Ledgers are
judged as raw JSON: jsonschema (and the ledger model) load only for a ledger blob shiftgit has not
validated before (see `shiftgit.validated`).
"""

from __future__ import annotations

from _collections_abc import Mapping  # = collections.abc's, without the collections package

from shiftgit.git import rawledger
from shiftgit.git.scope import SETUP_FILES, in_scope
from shiftgit.ledger import diff as ledgerdiff

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, NamedTuple
else:
    from shiftgit.tuples import NamedTuple

STEP = '--step "<the step just done>"'
SKIP = 'SHIFT_SKIP="<reason>" git commit ...'


class Ledger(NamedTuple):
    """One run's ledger as the commit would record it, beside HEAD's."""

    run: str
    path: str
    staged: bytes | None  # the index's version; None: absent (deleted, or never added)
    blob: str | None  # its blob id
    head: bytes | None  # HEAD's version
    changed: bool  # the index's version differs from HEAD's
    archived: bytes | None = None  # deleted: the run's ledger as refs/shift/archive keeps it (finish, archive)


class Staging(NamedTuple):
    """What the gate judges: the active run and the index git is about to commit."""

    run: str
    head: str | None
    paths: Mapping[str, str | None]  # staged path outside .shift/ -> staged blob id (None: deleted)
    ledgers: Mapping[str, Ledger]  # every run whose ledger changed, and the active run
    config: Mapping[str, Any]  # .shift/config.json as staged
    validated: frozenset[str] = frozenset()  # ledger blob ids shiftgit already schema-checked
    clean: frozenset[str] = frozenset()  # ledger blob ids whose whole text shiftgit scanned and found free of secrets
    written: frozenset[str] = frozenset()  # ledger blob ids shiftgit wrote: their recorded commands judged, no secret
    worktree_ledger: bytes | None = None  # the active run's ledger file as it is on disk
    newest_claim: Any = None  # git/fence.Claim: the newest owner epoch the active run's ledger refs carry
    published: bytes | None = None  # the active run's ledger as its checkpoint committed it (refs/shift/ledgers/)


class Problem(NamedTuple):
    rule: int
    what: str
    details: tuple[str, ...] = ()
    fix: tuple[str, ...] = ()


def judge(staging: Staging) -> list[Problem]:
    """Every rule the commit breaks (empty: it may pass), in rule order."""
    if not staging.paths:  # only .shift/ staged: the gate passes, but no secret lands in git
        return secret_problems(staging.ledgers.values())
    docs: dict[str, Any] = {}
    problems = []
    for run, ledger in sorted(staging.ledgers.items()):
        document, found = _sound(ledger, staging.validated, staging.clean, staging.written)
        problems += found
        docs[run] = document
    active = staging.ledgers[staging.run]
    document = docs.get(staging.run)
    point = document.get("checkpoint") if isinstance(document, Mapping) else None
    point = point if isinstance(point, Mapping) else None
    problems += _ledger_staged(staging, active)
    if isinstance(document, Mapping):  # rules 2, 3, 6, 7 need a sound ledger; rule 1 or 4 said why not
        problems += _on_head(staging, point)
        problems += _files_match(staging, point)
        problems += _in_scope(staging, document)
        if staging.config.get("require_fresh_checks") and point is not None:
            problems += _fresh_checks(staging, point)
    for run, ledger in sorted(staging.ledgers.items()):
        head = parsed_ledger(ledger.head) if ledger.changed else None  # parsed once for both rules
        problems += _nothing_dropped(ledger, docs.get(run), head)
        problems += _chain_kept(ledger, docs.get(run), head, staging.published if run == staging.run else None)
    if isinstance(document, Mapping):
        problems += _not_fenced(staging, document)
    return sorted(problems, key=lambda p: p.rule)


def secret_problems(ledgers: Iterable[Ledger], written: frozenset[str] = frozenset()) -> list[Problem]:
    """Rule 4's secret check alone, on every changed staged ledger: what the gate asks with no active run. WRITTEN:
    blobs shiftgit wrote, their commands judged then (`Staging.written`)."""
    return [p for ledger in ledgers if ledger.changed and ledger.staged is not None
            for p in _secret_problems(ledger, ledger.staged.decode("utf-8", "replace"),
                                      None if ledger.blob in written else parsed_ledger(ledger.staged) or {})]


def render_secrets(problems: list[Problem]) -> str:
    """The refusal of a commit made with no active run: a staged ledger holds a secret."""
    lines = ["shiftgit: commit refused: a staged ledger holds what looks like a secret (commit gate rule 4)"]
    for problem in problems:
        lines += [f"  {problem.what}"] + [f"    fix: {fix}" for fix in problem.fix]
    lines.append(f"  to commit anyway, the reason kept in this commit's note: {SKIP}")
    return "\n".join(lines)


def render(staging: Staging, problems: list[Problem]) -> str:
    """The refusal: every broken rule, its paths and its fix, then how to commit anyway."""
    rules = sorted({p.rule for p in problems})
    lines = [f"shiftgit: commit refused (run {staging.run}): {len(rules)} rule(s) of the commit gate broken"]
    for problem in problems:
        lines.append(f"  [rule {problem.rule}] {problem.what}")
        lines += [f"      {detail}" for detail in problem.details]
        lines += [f"    fix: {fix}" for fix in problem.fix]
    lines.append(f"  to commit anyway, the reason kept in this commit's note: {SKIP}")
    return "\n".join(lines)


def checkpoint_fix(run: str) -> str:
    return f"shiftgit checkpoint --run {run} {STEP} && git add {ledger_path(run)}"


def ledger_path(run: str) -> str:
    return f".shift/runs/{run}/ledger.json"


# -- rule 1: the run's ledger is staged with the change ---------------------------------------------

def _ledger_staged(staging: Staging, ledger: Ledger) -> list[Problem]:
    if ledger.changed and ledger.staged is not None:
        return []
    if ledger.staged is None:
        what = f"run {ledger.run}'s ledger is not in the index"
        fix = f"git add {ledger.path}" if staging.worktree_ledger is not None else checkpoint_fix(ledger.run)
    elif staging.worktree_ledger is not None and staging.worktree_ledger != ledger.staged:
        what, fix = f"run {ledger.run}'s ledger changed on disk but is not staged", f"git add {ledger.path}"
    else:
        what, fix = f"run {ledger.run}'s ledger is not staged with the change (no checkpoint since HEAD)", \
            checkpoint_fix(ledger.run)
    return [Problem(1, what, (ledger.path,), (fix,))]


# -- rule 2: the latest checkpoint was made on HEAD -------------------------------------------------

def _on_head(staging: Staging, point: Mapping[str, Any] | None) -> list[Problem]:
    if point is None:
        return [Problem(2, f"run {staging.run} has no checkpoint", (), (checkpoint_fix(staging.run),))]
    if point.get("base") == staging.head:
        return []
    base = str(point.get("base") or "no commit")[:12]
    head = (staging.head or "no commit")[:12]
    return [Problem(2, f"the latest checkpoint (#{point.get('seq')}) was made on {base}, not on HEAD ({head})",
                    (), (checkpoint_fix(staging.run),))]


# -- rule 3: every staged path is in the checkpoint, with the content it recorded -------------------

def _files_match(staging: Staging, point: Mapping[str, Any] | None) -> list[Problem]:
    recorded = _recorded(point)
    missing = [p for p in sorted(staging.paths) if p not in recorded]
    edited = [p for p in sorted(staging.paths) if p in recorded and recorded[p] != staging.paths[p]]
    seq = f"#{point.get('seq')}" if point else "none yet"
    problems = []
    if missing:
        problems.append(Problem(3, f"staged path(s) missing from the checkpoint's changed files ({seq})",
                                tuple(missing), (checkpoint_fix(staging.run),)))
    if edited:
        import shlex  # here, a refusal only. A checkpoint records whole files: part of one staged never matches

        whole = " ".join(shlex.quote(p) for p in edited)
        problems.append(Problem(3, f"staged content differs from what the checkpoint ({seq}) recorded: edited after "
                                "the checkpoint, or only part of the file staged", tuple(edited), (
            checkpoint_fix(staging.run), f"part of a file staged (git add -p): stage it whole (git add -- {whole}), or "
            "set the rest aside (git stash push --keep-index), then checkpoint as above")))
    return problems


def _recorded(point: Mapping[str, Any] | None) -> dict[str, str | None]:
    files = point.get("files") if point else None
    if not isinstance(files, list):
        return {}
    return {f["path"]: f.get("id") for f in files if isinstance(f, Mapping) and isinstance(f.get("path"), str)}


# -- rule 4: a sound ledger: JSON, a schema this shiftgit knows, valid, no secret -------------------

def _sound(ledger: Ledger, validated: frozenset[str], clean: frozenset[str] = frozenset(),
           written: frozenset[str] = frozenset()) -> tuple[Any, list[Problem]]:
    """The parsed staged ledger (None if unusable: not JSON, invalid, newer) and its rule-4 problems."""
    if ledger.staged is None:
        return None, []
    restore = f"fix it by hand, or restore it: git checkout HEAD -- {ledger.path}"
    try:
        text = ledger.staged.decode("utf-8")
        document = rawledger.document(ledger.staged, text)
    except ValueError as exc:
        return None, [Problem(4, f"{ledger.path} is not valid JSON ({exc})", (ledger.path,), (restore,))]
    invalid = [] if ledger.blob in validated else _schema_problems(ledger, document, restore)
    judged = ledger.blob in written  # its commands were judged when shiftgit wrote it
    secrets = [] if ledger.blob in clean else _secret_problems(ledger, text, None if judged else document)
    return (None if invalid else document), invalid + secrets


def _schema_problems(ledger: Ledger, document: Any, restore: str) -> list[Problem]:
    from shiftgit.errors import LedgerError
    from shiftgit.ledger.schema import check_version, schema_errors

    try:
        check_version(document, ledger.path)
    except LedgerError as exc:
        if not isinstance(document, Mapping):
            return [Problem(4, str(exc), (ledger.path,), (restore,))]
        return [Problem(4, f"{ledger.path} has schema_version {document.get('schema_version')}, newer than this "
                        "shiftgit knows", (ledger.path,), ("upgrade shiftgit: pip install -U shiftgit",))]
    errors = schema_errors(document)
    if not errors:
        return []
    shown = tuple(errors[:5]) + ((f"... and {len(errors) - 5} more",) if len(errors) > 5 else ())
    return [Problem(4, f"{ledger.path} is not a valid ledger", shown, (f"shiftgit validate {ledger.run}", restore))]


def _secret_problems(ledger: Ledger, text: str, document: Any) -> list[Problem]:
    """A secret in the text, or as a word of its own in a recorded command (ledger/commandsecrets.py)."""
    from shiftgit.ledger.commandsecrets import command_secret
    from shiftgit.ledger.secrets import find_secrets_in_json

    kinds = sorted({f.rule for f in find_secrets_in_json(text)}) + [
        f"in a recorded command, {where}" for where in [command_secret(document)] if where is not None]
    if not kinds:
        return []
    return [Problem(4, f"{ledger.path} contains what looks like a secret ({', '.join(kinds)})", (ledger.path,),
                    (f"remove it from {ledger.path} (shiftgit redacts what it writes: pass secrets through "
                     f"`--env NAME`, a command's through an environment variable), then git add {ledger.path}",))]


# -- rule 5: nothing dropped or rewritten since HEAD ------------------------------------------------

def _nothing_dropped(ledger: Ledger, document: Any, old: Mapping[str, Any] | None) -> list[Problem]:
    """OLD: HEAD's ledger, None when absent or broken (nothing trustworthy to compare with)."""
    if not ledger.changed or old is None or (ledger.staged is not None and not isinstance(document, Mapping)):
        return []
    if ledger.staged is None and ledger.archived is not None:  # archived: the record lives on there
        document = parsed_ledger(ledger.archived) or None  # unusable: a plain deletion
    found = ledgerdiff.findings(old, document, ledger.run)
    if not found:
        return []
    fixes = [f"put the record(s) back as HEAD has them (`git show HEAD:{ledger.path}`), then git add {ledger.path}"]
    fixes += list(dict.fromkeys(f.fix for f in found))
    return [Problem(5, f"{ledger.path} drops or rewrites, compared with HEAD, what only a recorded "
                       "amendment or lift may change", tuple(f.what for f in found), tuple(fixes))]


def _chain_kept(ledger: Ledger, document: Any, head: Mapping[str, Any] | None, published: bytes | None,
                ) -> list[Problem]:
    """The staged ledger's chain holds and extends HEAD's (HEAD: parsed), and its checkpoint is the one `checkpoint`
    committed to the run's ledger ref (ledger/chain.py: the same bytes staged hold the same one); nothing is
    rewritten here."""
    from shiftgit.ledger.chain import extends, same_as_published

    if not ledger.changed or not isinstance(document, Mapping):
        return []
    breaks = extends(head or {}, document)
    if published != ledger.staged:
        breaks += same_as_published(parsed_ledger(published) or {}, document)
    if not breaks:
        return []
    return [Problem(5, f"{ledger.path}: the checkpoint chain is broken (a rewritten, dropped or inserted "
                       "checkpoint, or a forged owner epoch)", tuple(b.line() for b in breaks),
                    (f"put the ledger back as shiftgit wrote it (`git show HEAD:{ledger.path}`, or the run's "
                     f"`refs/shift/ledgers/{ledger.run}`), then git add {ledger.path}",
                     f"shiftgit verify --chain {ledger.run} names every break"))]


def parsed_ledger(data: bytes | None) -> Mapping[str, Any] | None:
    """A ledger's JSON object; None when absent, not JSON or not an object (parsed once: git/rawledger.document)."""
    try:
        document = rawledger.document(data) if data is not None else None
    except ValueError:
        return None
    return document if isinstance(document, Mapping) else None


def _not_fenced(staging: Staging, document: Mapping[str, Any]) -> list[Problem]:
    """Rule 9: a holder of an older owner epoch commits nothing once it can see the newer one."""
    return _fenced(staging.run, document, staging.newest_claim)


def fenced_ledger(ledger: Ledger, claim: Any) -> list[Problem]:
    """Rule 9 for a staged ledger of a run that is not active here (the hook has no active run)."""
    if claim is None or not ledger.changed or ledger.staged is None:
        return []
    return _fenced(ledger.run, parsed_ledger(ledger.staged) or {}, claim)


def _fenced(run: str, document: Mapping[str, Any], claim: Any) -> list[Problem]:
    lease = document.get("lease")
    epoch = lease.get("epoch") if isinstance(lease, Mapping) else None
    mine = epoch if isinstance(epoch, int) else 0
    if claim is None or claim.epoch <= mine or mine == 0:
        return []
    return [Problem(9, f"run {run} was taken over: {claim.describe()}; this ledger holds owner epoch {mine}",
                    (run,), (f"stop writing to run {run} here; `shiftgit resume {run}` shows the newer record",))]


# -- rule 6: every staged path lies in the run's scope ----------------------------------------------

def _in_scope(staging: Staging, document: Mapping[str, Any]) -> list[Problem]:
    contract = document.get("contract")
    scope = contract.get("scope") if isinstance(contract, Mapping) else None
    globs = [g for g in scope if isinstance(g, str)] if isinstance(scope, list) else []
    outside = [p for p in sorted(staging.paths) if not in_scope(p, globs) and p not in SETUP_FILES]
    if not outside:
        return []
    import shlex

    quoted = " ".join(shlex.quote(p) for p in outside)
    widen = " ".join(f"--scope {shlex.quote(g)}" for g in [*globs, *outside])
    return [Problem(6, f"staged path(s) outside run {staging.run}'s scope ({', '.join(globs)})", tuple(outside),
                    (f"unstage them: git restore --staged -- {quoted}",
                     f"or widen the scope: shiftgit amend --run {staging.run} {widen} --reason \"...\""))]


# -- rule 7 (config require_fresh_checks): the checks ran against the staged content ----------------

def _fresh_checks(staging: Staging, point: Mapping[str, Any]) -> list[Problem]:
    import shlex

    checks = [c for c in point.get("checks") or [] if isinstance(c, Mapping)]
    run = staging.run
    if not checks:
        return [Problem(7, f"checkpoint #{point.get('seq')} has no checks (require_fresh_checks is on)", (),
                        (f"shiftgit check --run {run} -- <your test command> && {checkpoint_fix(run)}",))]
    problems = []
    stale = [c for c in checks if c.get("content") != point.get("tree")]
    if stale:
        fixes = tuple(f"shiftgit check --run {run} --name {shlex.quote(str(c.get('name')))} -- "
                      f"{shlex.join(str(a) for a in c.get('argv') or [])}" for c in stale)
        retire = f"shiftgit check --run {run} --retire NAME --reason R   (a check that no longer applies)"
        problems.append(Problem(7, "check(s) did not run against the checkpointed content",
                                tuple(str(c.get("name")) for c in stale), (*fixes, retire, checkpoint_fix(run))))
    unstaged = [p for p, blob in _recorded(point).items() if staging.paths.get(p, "absent") != blob]
    if unstaged:
        paths = tuple(sorted(unstaged))
        problems.append(Problem(7, "the checked content is not what is staged: checkpointed changes left out",
                                paths, (f"git add -A -- {' '.join(map(shlex.quote, paths))}",)))
    return problems

