"""Find and redact secrets in text bound for git: ledgers, notes, command output tails.

Stdlib only and cheap: this runs on the commit path. Three kinds of evidence, strongest first:
token formats with a vendor prefix (``ghp_``, ``AKIA``, ``sk-ant-``...), context (a
``password=`` assignment, ``user:pass@`` in a URL, an ``Authorization`` header), and, for
anything else, a long run of base64-ish characters that looks random. Hex never looks random
here: git ids, sha256 digests and UUIDs fill ledgers and are not secrets.

Speed: every pattern starts with a literal, so the regex engine skips ahead instead of trying
each position; rules run on an ASCII-folded copy of the text (keys on its lowercased copy);
patterns compile on first use, and only for texts holding the rule's literal prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from shiftgit.ledger.secretrules import (
    CONTEXTS,
    KEY_OWNERS,
    OP_KEYS,
    TOKEN_CHARS,
    TOKENS,
    ContextRule,
    ascii_folded,
    compiled,
    is_assigned,
    names_secret,
    op_follows,
    random_spans,
)

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from shiftgit.tuples import NamedTuple

__all__ = ["SEPARATOR_TEXT", "Finding", "find_secrets", "find_secrets_in_json", "redact", "redact_obj"]


class Finding(NamedTuple):
    """One secret: the rule that matched and the span of the secret value in the scanned text."""

    rule: str
    start: int
    end: int

    def preview(self, text: str) -> str:
        """Say what was found without repeating it: the rule and at most the first 4 characters."""
        shown = min(4, (self.end - self.start) // 3)
        return f"{self.rule}: {text[self.start:self.start + shown]}…"


_NAMES = tuple(rule.name for rule in TOKENS) + tuple(rule.name for rule in CONTEXTS) + ("high-entropy",)
_SHORTEST = len("-u a:b")  # no rule matches less
_Candidate = tuple[int, int, int]  # start, end, index into _NAMES (lower is stronger)


def _token_candidates(text: str) -> list[_Candidate]:
    """Matches of the token rules; `text` is folded to ASCII (only ASCII characters make a token)."""
    found = []
    for index, rule in enumerate(TOKENS):
        if rule.direct:  # two long literals are found faster than their short common start (`sk_`)
            if not any(hint in text for hint in rule.hints):
                continue
        elif rule.hint not in text or (rule.hints and not any(hint in text for hint in rule.hints)):
            continue
        if rule.possible is not None and not rule.possible(text):
            continue
        pattern = compiled(rule.pattern)
        secret = "v" if "v" in pattern.groupindex else 0  # the span to redact
        checked = "body" if "body" in pattern.groupindex else secret  # what the check looks at
        for match in pattern.finditer(text):
            if rule.bounded and match.start() > 0 and text[match.start() - 1] in TOKEN_CHARS:
                continue
            if rule.check is None or rule.check(match.group(checked)):
                found.append((*match.span(secret), index))
    return found


def _key_ends(rule: ContextRule, lower: str) -> list[tuple[int, bool]]:
    """Where a value may start after one of the rule's keys, and whether the key was loose (`: `, ` = `)."""
    ends = []
    for hint, key in rule.keys:
        if hint not in lower or (hint in OP_KEYS and not op_follows(lower, hint)):
            continue
        for match in compiled(key).finditer(lower):
            if hint == "key" and not lower.endswith(KEY_OWNERS, 0, match.start()):
                continue
            op = match.groupdict().get("op") or ""
            ends.append((match.end(), ":" in op or op[:1].isspace()))
    return ends


def _context_candidates(text: str, folded: str) -> list[_Candidate]:
    """Keys are found in the folded, lowercased text; values are read from `text` itself."""
    found, lower = [], folded.lower()
    for index, rule in enumerate(CONTEXTS, start=len(TOKENS)):
        for end, loose_key in _key_ends(rule, lower):
            value = compiled(rule.value).match(text, end)
            if value is None:
                continue
            group = "u" if value.groupdict().get("u") is not None else "v"
            if rule.check(value.group(group), loose_key and group == "u"):
                found.append((*value.span(group), index))
    return found


def _overlap(a: _Candidate, b: _Candidate) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _merge(candidates: list[_Candidate]) -> list[Finding]:
    merged: list[list[int]] = []
    for start, end, index in sorted(candidates):
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1], last[2] = max(last[1], end), min(last[2], index)
        else:
            merged.append([start, end, index])
    return [Finding(_NAMES[index], start, end) for start, end, index in merged]


def find_secrets(text: str, *, entropy: bool = True) -> list[Finding]:
    """Every secret in `text`, sorted by start; overlapping matches merge under the strongest rule.

    A token format knows where a secret ends, so it beats an overlapping context match (which
    would take `@host/path` after `https://x-access-token:<token>` along with the token).
    `entropy=False` leaves random-looking text alone (files: lock files and checksums are full of it).
    """
    if len(text) < _SHORTEST:
        return []
    folded = ascii_folded(text)
    tokens = _token_candidates(folded)
    contexts = [c for c in _context_candidates(text, folded) if not any(_overlap(c, t) for t in tokens)]
    high_entropy = len(_NAMES) - 1
    spans = random_spans(folded) if entropy else []
    return _merge(tokens + contexts + [(start, end, high_entropy) for start, end in spans])


_JSON_ESCAPE = r"\\(?:u([0-9a-fA-F]{4})|(/)|(\\))"


def _unescaped(match: re.Match[str]) -> str:
    hex_code, slash, backslash = match.groups()
    return chr(int(hex_code, 16)) if hex_code else slash or backslash


def find_secrets_in_json(text: str, *, entropy: bool = True) -> list[Finding]:
    """Secrets in raw JSON text, also where `\\u` escapes (or `\\/`) spell them: `\\u0067hp_...` is a token.

    Findings in the unescaped view come after those of the raw text; their spans are in that view.
    """
    found = find_secrets(text, entropy=entropy)
    if "\\u" in text or "\\/" in text:
        plain = compiled(_JSON_ESCAPE).sub(_unescaped, text)
        if plain != text:
            found += [f for f in find_secrets(plain, entropy=entropy) if f.rule not in {g.rule for g in found}]
    return found


# -- redaction ---------------------------------------------------------------------------------

_MAX_PASSES = 8


def _replace(text: str, findings: list[Finding]) -> str:
    parts, last = [], 0
    for finding in findings:
        parts += [text[last:finding.start], f"[REDACTED:{finding.rule}]"]
        last = finding.end
    return "".join(parts) + text[last:]


def redact(text: str) -> str:
    """`text` with each secret replaced by `[REDACTED:<rule>]`, repeated until nothing more is found.

    A replacement can change what its neighbours look like (a path piece left on its own), so one
    pass is not always idempotent; repeating is. Every finding holds unredacted characters, so it ends.
    """
    for _ in range(_MAX_PASSES):
        findings = find_secrets(text)
        if not findings:
            break
        text = _replace(text, findings)
    return text


def redact_obj(obj: object) -> object:
    """A deep copy of a JSON-like value with every string redacted; dict keys are kept as they are.

    A string under a key that names a secret (`"password"`, `"api_key"`...) is redacted whole,
    as `password=<value>` would be. Tuples become lists, as `json.dumps` writes them; other values
    are returned unchanged. The strings are scanned as one text (no rule matches across the
    separator): one scan, not thousands.
    """
    strings: list[str] = []
    _collect(obj, strings)
    return _rebuild(obj, iter(_redact_all(strings)))


SEPARATOR_TEXT = "\x00\n"  # whitespace ends every value; the private-key rule stops at NUL: no rule crosses it


def _redact_all(strings: list[str]) -> list[str]:
    parts = redact(SEPARATOR_TEXT.join(strings)).split(SEPARATOR_TEXT)
    return parts if len(parts) == len(strings) else [redact(text) for text in strings]


def _collect(obj: object, strings: list[str]) -> None:
    if isinstance(obj, str):
        strings.append(obj)
    elif isinstance(obj, dict):
        for value in obj.values():
            if type(value) is str:  # most values: no call (a checkpoint holds thousands of file records)
                strings.append(value)
            else:
                _collect(value, strings)
    elif isinstance(obj, list | tuple):
        for item in obj:
            _collect(item, strings)


def _rebuild(obj: object, redacted: Iterator[str]) -> object:
    if isinstance(obj, str):
        return next(redacted)
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            copy = next(redacted) if type(value) is str else _rebuild(value, redacted)
            if isinstance(copy, str) and _names_secret(key):
                copy = "[REDACTED:secret-assignment]" if is_assigned(copy, loose=False) else copy
            out[key] = copy
        return out
    if isinstance(obj, list | tuple):
        return [_rebuild(item, redacted) for item in obj]
    return obj


_KEY_VERDICTS: dict[str, bool] = {}  # key -> it names a secret (a ledger has a few dozen distinct keys)


def _names_secret(key: object) -> bool:
    if not isinstance(key, str):
        return False
    known = _KEY_VERDICTS.get(key)
    if known is None:
        if len(_KEY_VERDICTS) > 4096:
            _KEY_VERDICTS.clear()
        known = _KEY_VERDICTS[key] = names_secret(key)
    return known
