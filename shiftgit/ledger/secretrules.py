"""The secret scanner's rules: token formats, context keys, and what random-looking text is.

Stdlib only and cheap (the commit path): patterns compile on first use, and only for texts
holding the rule's literal prefix. `secrets` applies them.
"""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Callable
from itertools import compress

_COMPILED: dict[str, re.Pattern[str]] = {}


def compiled(pattern: str) -> re.Pattern[str]:
    """Compile on first use: import stays cheap, and a scan compiles only the rules it needs. (Cached in a dict:
    functools is one more module an agent hook's save would load, `__main__._import_pathlib`.)"""
    found = _COMPILED.get(pattern)
    if found is None:
        found = _COMPILED[pattern] = re.compile(pattern)
    return found


# -- value checks ----------------------------------------------------------------------------

LITERALS = frozenset(
    "true false null none nil undefined required optional redacted hidden masked secret secrets "
    "pass password passwd token tokens changeme string empty unset default example placeholder".split()
)
# `$VAR`, `%VAR%`, `<pw>`, `{{ x }}`, `[REDACTED:..]`, `@file`, `#fff`, globs and masks (`ab**`),
# `self.token`, `aaaaaa`, `1500`, versions and dates
_STAND_IN = r"[$%<{\[@#]|.*\*|(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*$|(.)\1*$|\d{1,9}$|\d+(?:[.:/-]\d+)+$"
# a name, not a value: `token=next_token` (Python kwargs), `"input_token": "NextToken"`, `session-token`
_NAME = (r"_*[A-Za-z]+(?:[_-][A-Za-z]+)+|_+[A-Za-z]+"
         r"|(?i:_*[a-z]*(?:token|secret|pass|key|auth|credential)[a-z]*)")
_CAMEL_WORDS = r"[a-z]*(?:[A-Z][a-z]+)*"


def _has_digit(value: str) -> bool:
    return compiled(r"\d").search(value) is not None


def _has_both_cases(value: str) -> bool:
    return value != value.lower() and value != value.upper()


def _is_stand_in(value: str) -> bool:
    """A reference, placeholder or literal where a secret would go."""
    return value.lower() in LITERALS or compiled(_STAND_IN).match(value) is not None


def _is_secret_like(value: str) -> bool:
    """Not a word, identifier or env var name: has a digit, or mixes case inside a word."""
    return _has_digit(value) or (_has_both_cases(value) and not compiled(_CAMEL_WORDS).fullmatch(value))


def _is_generated(value: str) -> bool:
    """Digits and both cases, as generated keys have (after a short, guessable prefix)."""
    return _has_digit(value) and _has_both_cases(value)


def is_assigned(value: str, loose: bool) -> bool:
    """`KEY=value` (env, CLI, query) and quoted values are trusted; `key: value`, `key = value` need more."""
    if _is_stand_in(value) or compiled(_NAME).fullmatch(value):
        return False
    return _is_secret_like(value) or not loose


def _is_real(value: str, loose: bool = False) -> bool:
    return not _is_stand_in(value)


def _is_loose_secret(value: str, loose: bool) -> bool:
    """`-u user:pass` (curl) but not `-u root:root` (docker user:group) or `python -u app.py:main`."""
    return is_assigned(value, loose=True)


def _is_opaque(value: str, loose: bool) -> bool:
    return _has_digit(value) and not _is_stand_in(value)


# -- rules -----------------------------------------------------------------------------------
# A rule runs only on texts that hold its hint (its pattern's literal prefix), and patterns start
# with a literal so the regex engine skips ahead instead of trying every position.


class _Token:
    """A secret with its own format, starting with a literal (the hint); `v` names a narrower span. `hints`: the
    literals one of which every match starts with (none: the hint alone), checked before the pattern compiles:
    `A` alone is in most English text, `AKIA` in none (an agent hook's save compiled four rules for nothing)."""

    __slots__ = ("name", "hint", "hints", "pattern", "check", "bounded", "direct", "possible")

    def __init__(self, name: str, hint: str, pattern: str, check: Callable[[str], bool] | None = None,
                 bounded: bool = True, hints: tuple[str, ...] = (),
                 possible: Callable[[str], bool] | None = None) -> None:
        self.name, self.hint, self.pattern, self.check, self.bounded = name, hint, pattern, check, bounded
        self.possible = possible  # False only where the pattern cannot match: no pattern compiled for the text
        self.hints = hints  # looked for only where the hint is (cheaper), but for two long ones (`direct`)
        self.direct = len(hint) > 1 and 0 < len(hints) <= 2 and min(map(len, hints)) >= 2 * len(hint)


class ContextRule:
    """A secret named by what precedes it: a key found in the lowercased text, then a value after it."""

    __slots__ = ("name", "keys", "value", "check")

    def __init__(self, name: str, keys: tuple[tuple[str, str], ...], value: str,
                 check: Callable[[str, bool], bool]) -> None:
        self.name, self.keys, self.value, self.check = name, keys, value, check


_AUTHORITY_ENDS = frozenset(" \t\n\r\f\v\x00/?#\"'<>[]\\")  # (url-credentials excludes each, and more)


def _userinfo_possible(text: str) -> bool:
    """Some `://` is followed, before one of _AUTHORITY_ENDS and within the pattern's reach, by a `:` and then a
    `@`: all url-credentials can match (most URLs have neither, and their text then needs no regular expression)."""
    start = text.find("://")
    while start >= 0:
        colon = False
        for char in text[start + 3:start + 3 + 64 + 1 + 128 + 1]:
            if char in _AUTHORITY_ENDS:
                break
            if char == ":":
                colon = True
            elif char == "@" and colon:
                return True
        start = text.find("://", start + 3)
    return False


TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_END = r"(?![A-Za-z0-9_-])"

TOKENS = (
    _Token("private-key", "-----BEGIN", r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----[^\x00]*?"
           r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|(?=\x00)|\Z)", bounded=False),
    _Token("github-token", "gh", r"gh[pousr]_[A-Za-z0-9]{36,251}" + _END,
           hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _Token("github-token", "github_pat_", r"github_pat_[A-Za-z0-9_]{40,251}" + _END),
    _Token("gitlab-token", "gl", r"gl(?:pat|dt|rt|ptt|cbt)-[A-Za-z0-9_-]{20,64}" + _END,
           hints=("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-")),
    _Token("aws-access-key", "A", r"A(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])",  # not AIDA/AROA: ids
           hints=("AKIA", "ASIA", "ABIA", "ACCA")),
    _Token("slack-webhook", "hooks.slack.com/", r"hooks\.slack\.com/(?:services|workflows|triggers)/"
           r"(?P<v>[A-Za-z0-9_/+-]{20,})", bounded=False),
    _Token("slack-token", "x", r"x(?:ox[abposre]|app-\d)-[A-Za-z0-9-]{10,250}" + _END, hints=("xox", "xapp-")),
    _Token("stripe-key", "sk_", r"sk_(?:live|test)_[A-Za-z0-9]{10,247}" + _END, hints=("sk_live_", "sk_test_")),
    _Token("stripe-key", "rk_", r"rk_(?:live|test)_[A-Za-z0-9]{10,247}" + _END, hints=("rk_live_", "rk_test_")),
    _Token("stripe-key", "whsec_", r"whsec_[A-Za-z0-9]{24,247}" + _END),
    _Token("anthropic-key", "sk-ant-", r"sk-ant-[A-Za-z0-9_-]{20,250}" + _END),
    _Token("openai-key", "sk-", r"sk-(?!ant-)(?P<body>(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,250}"
           r"|[A-Za-z0-9]{20,250})" + _END, _is_generated),
    _Token("google-api-key", "AIza", r"AIza[A-Za-z0-9_-]{35}" + _END),
    _Token("huggingface-token", "hf_", r"hf_(?P<body>[A-Za-z]{34})" + _END, _has_both_cases),
    _Token("npm-token", "npm_", r"npm_[A-Za-z0-9]{36}" + _END),
    _Token("pypi-token", "pypi-AgE", r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    _Token("sendgrid-key", "SG.", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _END),
    _Token("jwt", "eyJ", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    _Token("url-credentials", "://", r"://[^\s\x00:/?#@\"'<>\[\]\\]{0,64}:"
           r"(?P<v>[^\s\x00/?#@\"'<>\[\]\\]{1,128})@(?=[A-Za-z0-9])", _is_real, bounded=False,
           possible=_userinfo_possible),
)

_OP = r"\\?[\"']?(?P<op>[ \t]*(?::=|=>|=|:)[ \t]*)"
KEY_OWNERS = tuple(word + sep for word in ("api", "access", "secret", "private", "signing", "encryption")
                    for sep in ("", "_", "-"))  # `key` alone is too common: an effect's idempotency key
SECRET_KEY = r"(?i).*(?:passw(?:or)?d|passphrase|secret|token|auth|credentials?|(?:" + "|".join(KEY_OWNERS) + ")key)"
_SECRET_KEY_ENDS = ("passwd", "password", "passphrase", "secret", "token", "auth", "credential", "credentials",
                    *(owner + "key" for owner in KEY_OWNERS))  # what SECRET_KEY's alternatives spell


def names_secret(key: str) -> bool:
    """Whether SECRET_KEY matches the whole `key`: an ASCII key is judged without the pattern (`.*` stops at a line
    end; the case-blind match of ASCII letters is `lower`), any other by it (`ſ` matches `s` case-blind)."""
    if key.isascii():
        return "\n" not in key and key.lower().endswith(_SECRET_KEY_ENDS)
    return compiled(SECRET_KEY).fullmatch(key) is not None
_ASSIGNED = (r"\\?(?P<q>[\"'])(?P<v>[^\"'\s\x00\\]{6,256})\\?(?P=q)"
             r"|(?P<u>[^\s\x00\"'`,;&()\[\]{}<>\\]{6,256})(?![^\s\x00\"'`,;&\\])")

# The keys whose pattern is the hint, one of these endings, then _OP (or authorization's `[:=]`): a key is looked for
# with its pattern only where one of them is followed by what _OP starts with (`op_follows`).
OP_KEYS = {"passw": ("d", "ord"), "passphrase": ("",), "secret": ("",), "token": ("",), "auth": ("",),
           "credential": ("", "s"), "key": ("",), "authorization": ("",)}


def op_follows(lower: str, hint: str) -> bool:
    """Some HINT in LOWER, with one of its OP_KEYS endings, is followed by an optional backslash and quote, spaces or
    tabs, then `:` or `=`: all its key pattern can match (`tokens`, `secret of`, `keyboard` need no pattern)."""
    start = lower.find(hint)
    while start >= 0:
        after = start + len(hint)
        for ending in OP_KEYS[hint]:
            at = after + len(ending)
            if not lower.startswith(ending, after):
                continue
            at += lower[at:at + 1] == "\\"
            at += lower[at:at + 1] in ("\"", "'")
            while lower[at:at + 1] in (" ", "\t"):
                at += 1
            if lower[at:at + 1] in (":", "="):
                return True
        start = lower.find(hint, start + 1)
    return False


CONTEXTS = (
    ContextRule("aws-secret-key", (("aws", r"aws[\w.-]{0,30}?(?:secret|private)[\w.-]{0,30}?" + _OP
                                 + r"\\?[\"']?"),),
             r"(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", _is_real),
    ContextRule("auth-header", (("authorization", r"authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
                                               r"(?:bearer|basic|token)[ \t]+"),
                             ("bearer", r"bearer[ \t]+")),
             r"(?P<v>[A-Za-z0-9._~+/-]{16,}=*)", _is_opaque),
    ContextRule("cli-credentials", (("-u", r"-u(?:ser)?[ =\x00]+[\"']?[^\s\x00:@/\"']{1,64}:"),),
             r"(?P<v>[^\s\x00\"'@]{1,128})", _is_loose_secret),
    ContextRule("secret-assignment", (("passw", r"passw(?:or)?d" + _OP), ("passphrase", "passphrase" + _OP),
                                   ("secret", "secret" + _OP),
                                   ("token", "token" + _OP), ("auth", "auth" + _OP),
                                   ("credential", r"credentials?" + _OP), ("key", "key" + _OP)),
             _ASSIGNED, is_assigned),
)


# -- high entropy ----------------------------------------------------------------------------

_MIN_RANDOM_LENGTH = 20
_MAX_MEAN_SUBWORD = 2.5  # camelCase, snake_case and paths have longer subwords; random text ~1.9
_ENTROPY_FACTOR = 0.8  # random base62/64 text of length n: ~0.85-0.9 * log2(n) bits per character
_ENTROPY_CAP = 4.5


_BASE64ISH = "+/_-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_RUN_CHARS = {code: code if chr(code) in _BASE64ISH else 32 for code in range(128)}  # the rest: spaces
_RUN = f" [^ ]{{{_MIN_RANDOM_LENGTH},}}"  # in translated text, after a space: a run starts there
_SPLIT_MAX = 256 * 1024  # texts up to this size are split into runs first (above, the pattern's scan is faster)
_SEPARATOR = r"[/_-]"
_PIECE = f"[A-Za-z0-9+]{{{_MIN_RANDOM_LENGTH},}}"
_NOT_RANDOM = r"(?:0x)?[0-9a-fA-F-]+|sha\d+-.*"  # hex ids, digests, UUIDs; subresource integrity hashes
_WORD = r"[A-Z]?[a-z]{3,}"
_SUBWORD = r"[A-Z][a-z]+|[a-z]+|[A-Z]+(?![a-z])|[0-9]+"


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    from math import log2  # math loads only for a text with a random-looking run

    n = len(value)
    return -sum(k / n * log2(k / n) for k in (value.count(ch) for ch in set(value)))


def _mean_subword(value: str) -> float:
    parts = compiled(_SUBWORD).findall(value)
    return sum(map(len, parts)) / len(parts) if parts else float("inf")


def _looks_random(value: str) -> bool:
    """Long, not hex, upper + lower + digits, short subwords, and high entropy for its length."""
    n = len(value)
    if n < _MIN_RANDOM_LENGTH or compiled(_NOT_RANDOM).fullmatch(value) or not _is_generated(value):
        return False
    if _mean_subword(value) >= _MAX_MEAN_SUBWORD:
        return False
    from math import log2

    return _entropy(value) >= min(_ENTROPY_FACTOR * log2(n), _ENTROPY_CAP)


def _is_structured(run: str) -> bool:
    """A path or a long snake/kebab name: judge its separator-free pieces, not the whole."""
    parts = compiled(_SEPARATOR).split(run)
    if "/" in run and any(compiled(_WORD).fullmatch(part) for part in parts):
        return True
    return len(parts) >= 4 and len(parts) * 10 > len(run)


def _random_in_run(run: str) -> list[tuple[int, int]]:
    """Spans (within `run`) that look random: the whole run, or pieces of a structured one."""
    if _is_structured(run):
        return [piece.span() for piece in compiled(_PIECE).finditer(run) if _looks_random(piece.group())]
    return [(0, len(run))] if _looks_random(run) else []


def _judged_run(translated: str) -> bool:
    """Whether `translated` (base64-ish characters and spaces) holds a run of _MIN_RANDOM_LENGTH or more characters
    with both cases or none (what `random_spans` judges), the runs sifted by length in C (~0.1 ms for 24 KB of
    text: a Python loop over every word cost more than loading re). True, to let the pattern judge, where re is
    loaded already (its scan is faster)."""
    if type(sys.modules.get("re")) is type(sys):  # not the agent hook's stand-in (shiftgit/__main__.py)
        return True
    runs = translated.split()
    if max(map(len, runs), default=0) < _MIN_RANDOM_LENGTH:
        return False
    long_runs = compress(runs, map(_MIN_RANDOM_LENGTH.__le__, map(len, runs)))
    return any(not (run.islower() or run.isupper()) for run in long_runs)


def random_spans(text: str) -> list[tuple[int, int]]:
    """Random-looking runs in `text` (folded to ASCII), with their `=` padding."""
    spans: list[tuple[int, int]] = []
    translated = " " + text.translate(_RUN_CHARS)
    if len(text) <= _SPLIT_MAX and not _judged_run(translated):
        return spans  # no run the pattern below would judge: no regular expression to compile (an agent hook's save)
    runs = compiled(_RUN).finditer(translated)
    for run in [run for run in runs if not (run.group().islower() or run.group().isupper())]:
        # ^ nothing random lacks a case: the fast path for hex, paths and names
        offset = run.start()  # the leading space stands before the text: offsets shift by one
        for start, end in _random_in_run(run.group()[1:]):
            end += offset
            padding = len(text[end:end + 2]) - len(text[end:end + 2].lstrip("="))
            spans.append((start + offset, end + padding))
    return spans


# -- scanning ----------------------------------------------------------------------------------

# Rules run on `text` folded to ASCII, one character for one: the regex engine and str.translate
# are several times faster on ASCII strings, and lowercasing it keeps every position in place.
def _fold_error(error: UnicodeError) -> tuple[str, int]:
    assert isinstance(error, UnicodeEncodeError)
    return "\x7f" * (error.end - error.start), error.end


codecs.register_error("shiftgit-fold", _fold_error)


def ascii_folded(text: str) -> str:
    """`text` with every non-ASCII character replaced by DEL (no rule's token or key character)."""
    return text if text.isascii() else text.encode("ascii", "shiftgit-fold").decode("ascii")
