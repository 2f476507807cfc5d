"""Recorded text made inert: quoted data that cannot end its quotes, fences it cannot close, no terminal codes.

A ledger is written by whoever ran the run, and a clone brings ledgers, notes and commands written
by others. Whatever shows that text — the briefing an agent reads, `trust`, `log`, `status` —
shows it as data: inside quotes, with every quote, backslash, line break and control character
escaped, so it can neither start a line of its own nor close the quotes or the fence around it;
and on a terminal, no escape sequence (colour, cursor moves, OSC titles, `\\r` overwrites) ever
reaches it: each control character is shown, never obeyed. Stdlib only: the hooks use it too.
"""

from __future__ import annotations

from shiftgit.digests import hasher

TYPE_CHECKING = False  # typing costs ~4 ms to import on the commit path: annotations only
if TYPE_CHECKING:
    import re
    from collections.abc import Iterable, Sequence

ELLIPSIS = "…"
# C0 controls, DEL, C1 controls (8-bit CSI/OSC), line/paragraph separators, bidi overrides and
# isolates (text that reads in another order than it runs), and the byte-order mark.
_CONTROL = "\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff"
_QUOTED = f'{_CONTROL}"\\\\'
_TERMINAL = _CONTROL.replace("\x00-\x1f", "\x00-\x08\x0b-\x1f")  # tab and newline stay
_UNESCAPED_BY_JSON = _CONTROL.replace(chr(0) + "-" + chr(31), "")  # json.dumps leaves these
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "\\": "\\\\"}
_COMPILED: dict[str, re.Pattern[str]] = {}


def _chars(chars: str) -> re.Pattern[str]:
    """`[chars]`, compiled on first use: these classes cost ~3 ms to compile, and the git hooks import this
    module for `path_text` alone."""
    pattern = _COMPILED.get(chars)
    if pattern is None:
        import re  # here: the git hooks import this module for `path_text` alone, and re costs them ~15 ms

        pattern = _COMPILED[chars] = re.compile(f"[{chars}]")
    return pattern


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT.get(char) or f"\\u{ord(char):04x}"


def has_control(text: str) -> bool:
    """Whether `text` holds a character a terminal or a reader would not show as itself."""
    return not text.isprintable() and _chars(_CONTROL).search(text) is not None


def escape(text: str) -> str:
    """`text` with quotes, backslashes and every control character escaped (JSON string syntax)."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return text  # the common case, without the regex (every character escaped here is not printable)
    return _chars(_QUOTED).sub(_escaped, text)


def visible(text: str) -> str:
    """`text` with every control character shown as an escape; quotes and backslashes stay as they are."""
    return text if text.isprintable() else _chars(_CONTROL).sub(_escaped, text)


def json_text(text: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) with DEL, C1, separators and bidi controls
    escaped too: they can only stand inside strings there, so the JSON stays the same value."""
    return _chars(_UNESCAPED_BY_JSON).sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def path_text(path: str) -> str:
    """A path git printed (decoded with surrogateescape) as text JSON can hold: a byte that is not UTF-8
    becomes `\\xNN`, the same way on every side (ledger, gate, reports)."""
    if path.isascii():
        return path
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def cut(text: str, cap: int) -> str:
    """At most `cap` characters, an ellipsis marking a cut."""
    return text if len(text) <= cap else text[: max(cap - 1, 0)] + ELLIPSIS


def quote(text: str | None, cap: int | None = None) -> str:
    """Recorded text as one quoted value: `"..."`, escaped, at most `cap` characters inside the quotes.

    A cut never splits an escape: a lone backslash left before the closing quote would escape it.
    """
    body = escape(text or "")
    if cap is None or len(body) <= cap:
        return f'"{body}"'
    if body is text:  # nothing escaped: each character shown as itself (the briefing cuts long steps so)
        return '"' + text[:max(cap - 1, 0)] + ELLIPSIS + '"'
    kept: list[str] = []
    size = 0
    for char in text or "":
        shown = escape(char)
        if size + len(shown) > cap - 1:
            break
        kept.append(shown)
        size += len(shown)
    return '"' + "".join(kept) + ELLIPSIS + '"'


def quote_argv(argv: Iterable[str], cap: int | None = None) -> str:
    """A recorded command as a list of quoted arguments: `["sh", "-c", "..."]`; nothing in it is ambiguous."""
    text = "[" + ", ".join(quote(arg) for arg in argv) + "]"
    return cut(text, cap) if cap is not None else text


def one_line(text: str, cap: int | None = None) -> str:
    """Text for one line of terminal output: line breaks and control characters shown as escapes."""
    shown = visible(text)
    return cut(shown, cap) if cap is not None else shown


def for_terminal(text: str) -> str:
    """Text for a terminal: line breaks and tabs stay; every other control character is shown, never obeyed."""
    if text.replace("\n", "").replace("\t", "").isprintable():
        return text  # the common case, without the regex (every character escaped here is not printable): `show`
    return _chars(_TERMINAL).sub(_escaped, text)


def fence(lines: Sequence[str], label: str) -> list[str]:
    """`lines` between an opening and a closing fence that no line inside can close or imitate.

    The fence is a run of backticks longer than any run inside (CommonMark: only a run at least as
    long closes it), and its label carries a digest of the content, so a forged closing line would
    have to contain the digest of the text that contains it. The closing fence is bare backticks.
    """
    text = "\n".join(lines)
    longest = 0  # the longest run of backticks inside (without re: an agent hook's process does not import it)
    while "`" * (longest + 1) in text:
        longest += 1
    ticks = "`" * max(3, longest + 1)
    digest = hasher(64)(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    tag = f"{label}-{digest}"
    return [f"{ticks}{tag}", *lines, ticks]


