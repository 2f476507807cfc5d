"""Fitting the briefing into its bound in time linear in its length.

The briefing is shiftgit's own lines, then the record in one fence (`textsafe.fence`, whose label
carries a digest of the whole body). Rendering and hashing it again for every line dropped made a
run with thousands of constraints quadratic (5,000: 4,726 renders of ~170 KB, 3 s). Here the sizes
are added up instead: the fence adds the same characters whatever the body holds (its run of
backticks only shortens as lines go, so the size counted with the full body's run is never short),
and the text is rendered once, at the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from shiftgit import textsafe

LABEL = "shiftgit-record"
MORE = "(+{n} more not shown; `shiftgit show {run} --markdown` has them)"
CUT = "…"


@dataclass
class Section:
    title: str
    lines: list[str]
    keep: int = 0           # lines kept in the first trimming pass
    empty: str = "none"     # shown when the section has nothing
    omitted: int = field(default=0)
    more: str = MORE        # what the "+N more" line says

    def render(self, run: str) -> list[str]:
        body = [f"- {line}" for line in self.lines]
        if self.omitted:
            body.append("- " + self.more.format(n=self.omitted, run=run))
        return [f"{self.title}:", *body] if body else [f"{self.title}: {self.empty}"]

    def size(self, run: str) -> int:
        return sum(len(line) + 1 for line in self.render(run))


def _split(head: Sequence[str]) -> int:
    """Where shiftgit's own lines end: after the `Source:` line (the rest of the head is record)."""
    return next((i + 1 for i, line in enumerate(head) if line.startswith("Source: ")), 0)


def _overhead(lines: Sequence[str]) -> int:
    """The characters the fence adds around LINES (two fence lines, the final line break)."""
    text = "\n".join(lines)
    opening, *_ = textsafe.fence([text], LABEL)  # the label's digest has a fixed length: hashing this once is enough
    return len(opening) + 1 + (len(opening) - len(opening.lstrip("`"))) + 1


def render(head: Sequence[str], sections: Mapping[str, Section], order: Sequence[str], run: str,
           limit: int | None = None) -> str:
    """shiftgit's own lines (title, decision, provenance), then the record in one fence, within `limit` (the record
    cut at the last line that fits, marked `…`)."""
    split = _split(head)
    body = list(head[split:])
    for name in order:
        body += sections[name].render(run)
    own = list(head[:split])
    if limit is not None:
        fixed = sum(len(line) + 1 for line in own) + _overhead(body)
        sizes = [len(line) + 1 for line in body]
        if fixed + sum(sizes) > limit:
            room, kept = limit - fixed - (len(CUT) + 1), 0
            while kept < len(body) - 1 and sizes[kept] <= room:
                room -= sizes[kept]
                kept += 1
            body = body[:kept] + [CUT]
    return fenced(own, body)


def fenced(own: Sequence[str], body: Sequence[str]) -> str:
    return "\n".join([*own, *textsafe.fence(body, LABEL)]) + "\n"


def trim(head: Sequence[str], sections: Mapping[str, Section], order: Sequence[str], trim_order: Sequence[str],
         run: str, limit: int, floor: bool) -> str:
    """Drop the oldest line of each section in turn (least important first) until the text fits: sizes counted,
    each section rendered again only when it loses a line, the whole text rendered once."""
    split = _split(head)
    full = [*head[split:], *(line for name in order for line in sections[name].render(run))]
    fixed = sum(len(line) + 1 for line in head) + _overhead(full)
    sizes = {name: sections[name].size(run) for name in order}
    total = fixed + sum(sizes.values())
    while total > limit:
        trimmed = False
        for name in trim_order:
            section = sections[name]
            if total > limit and len(section.lines) > (section.keep if floor else 0):
                section.lines.pop()
                section.omitted += 1
                trimmed = True
                total += section.size(run) - sizes[name]
                sizes[name] = section.size(run)
        if not trimmed:
            break
    return render(head, sections, order, run)
