"""agents/compaction.py makes only the newest stubs of superseded tool results, as many as the bound can show: the
compacted text must be, character for character, what making and scanning every stub gives (`whole`, below: the
way it was done before), through bounds, turn counts, secrets in arguments and outputs, and stubs in the
thousands."""

from __future__ import annotations

import random

import pytest

from shiftgit.agents import compaction
from shiftgit.agents.compaction import Settings, compact
from shiftgit.agents.transcripts import Entry, Transcript, tool_names
from shiftgit.digests import hasher
from shiftgit.ledger.secrets import redact

TOKEN = "ghp_" + "Zr8Qx2Lm4Pz9Rt1Wv7Ny3Bc6Hd0Js5Ga8Ek2"
RANDOMISH = "Zx81Qp0LmR7tY2vKw9BnC4dE6fG3hJ5s"


def whole(transcript: Transcript, summary: str, header: str, settings: Settings) -> str:
    """compaction.compact as it was: every stub made and scanned, then the newest that fit kept."""
    system, request, rest = compaction.opening(transcript.entries)
    turns = compaction.split_turns(rest)
    cut = max(len(turns) - settings.turns, 0)
    earlier, recent = turns[:cut], turns[cut:]
    names = tool_names(transcript.entries)
    fixed = [redact(header),
             compaction._section("System prompt", compaction._cap(redact(system), settings.limit // 6)),
             compaction._section("First request", compaction._cap(redact(request), settings.limit // 8)),
             compaction._section("Run summary (from the shiftgit ledger)", summary)]
    titles = (compaction.MESSAGES, compaction.STUBS, f"Last {len(recent)} turn(s), in full")
    room = settings.limit - compaction._size(fixed) - sum(len(t) + 60 for t in titles)
    said = compaction._redact_lines(redact, [f"- {compaction._one_line(e.text, compaction.MESSAGE_CAP)}"
                                             for t in earlier for e in t if e.kind in ("user", "summary")])
    calls = {e.call_id: e for t in earlier for e in t if e.kind == "call" and e.call_id}
    stubs = []
    for entry in (e for t in earlier for e in t if e.kind == "result"):
        call = calls.get(entry.call_id)
        args = call.args if call else ""
        digest = hasher(40)(args.encode("utf-8", "surrogateescape")).hexdigest()[:12]  # sha1
        tool = names.get(entry.call_id) or entry.tool or "tool"
        stubs.append(f"- {tool} args#{digest} {compaction._one_line(args, compaction.STUB_ARGS)} ->"
                     f"{compaction._status(entry)}: "
                     f"{compaction._one_line(compaction.last_line(entry.text), compaction.STUB_ARGS)}")
    stubs = compaction._redact_lines(redact, stubs)
    last = compaction._fit_recent(recent, names, redact,
                                  room - min(compaction._size(said) + compaction._size(stubs), room * 2 // 5))
    room -= len(last)
    messages = compaction._fit_lines(said, room, "earlier message(s)")
    room -= len(messages)
    parts = [*fixed, compaction._section(compaction.MESSAGES, messages),
             compaction._section(compaction.STUBS, compaction._fit_lines(stubs, room, "earlier tool result(s)")),
             compaction._section(titles[2], last)]
    text = "\n".join(p for p in parts if p)
    return text if len(text) <= settings.limit else text[: settings.limit - 40] + "\n[... cut to the bound ...]"


def transcript(turns: int, seed: int) -> Transcript:
    rng = random.Random(seed)
    entries = [Entry("system", "You are a coding agent. " * rng.randint(1, 40)),
               Entry("user", "Fix the parser; never touch vendor/. " * rng.randint(1, 30))]
    for n in range(turns):
        if rng.random() < 0.1:
            entries.append(Entry("user", f"Also: keep the API stable ({n}) " + (TOKEN if rng.random() < 0.2 else "")))
        entries.append(Entry("assistant", f"Turn {n}: looking at module {n % 7}." * rng.randint(1, 4)))
        for k in range(rng.randint(1, 3)):
            call = f"call_{n}_{k}"
            secret = rng.choice(["", f" --token {TOKEN}", f" password={RANDOMISH}", f" {RANDOMISH}"])
            entries.append(Entry("call", "", tool=rng.choice(["Bash", "Read", "Edit"]), call_id=call,
                                 args=f'{{"command":"pytest -q tests/test_m{n}.py{secret}"}}'))
            tail = rng.choice(["", f"\nexport KEY={TOKEN}", f"\n{RANDOMISH}", "\n</untrusted_context>"])
            output = "".join(f"line {i} of {n}\n" for i in range(rng.randint(0, 80))) + f"{n} passed{tail}"
            entries.append(Entry("result", output, call_id=call, exit_code=rng.choice([None, 0, 1]),
                                 error=rng.random() < 0.1))
    return Transcript("claude", "s", entries, 0)


@pytest.mark.parametrize(("turns", "limit", "keep"), [
    (0, 24_000, 6), (3, 24_000, 6), (40, 24_000, 6), (400, 24_000, 6), (2500, 24_000, 6),
    (400, 2_000, 6), (400, 6_000, 2), (400, 24_000, 0), (2500, 60_000, 12), (120, 200_000, 6),
])
def test_the_newest_stubs_give_what_every_stub_gives(turns: int, limit: int, keep: int) -> None:
    summary = "run r (status active)\nactive constraints (1):\n  - [c1] \"never touch vendor/\""
    settings = Settings(turns=keep, limit=limit)
    for seed in range(3):
        made = transcript(turns, seed)
        expected = whole(made, summary, "header", settings)
        assert compact(made, summary, "header", settings, redact) == expected
        if turns >= 400 and limit <= 24_000:
            assert "left out to stay within the bound" in expected  # the stubs did not all fit: a partial make


def test_a_long_session_makes_only_the_stubs_it_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    made = transcript(2500, 7)
    results = sum(e.kind == "result" for e in made.entries)
    calls = []
    real = compaction._stub

    def counted(*args: object) -> str:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(compaction, "_stub", counted)
    compact(made, "summary", "header", Settings(), redact)
    assert results > 4000 and 0 < len(calls) < 600


def fit_recent_one_by_one(turns: list[list[Entry]], names: dict[str, str], room: int) -> str:
    """compaction._fit_recent as it was: each recent text and argument scanned alone."""
    real = compaction._redact_texts
    compaction._redact_texts = lambda scan, texts: [scan(text) for text in texts]  # type: ignore[assignment]
    try:
        return compaction._fit_recent(turns, names, redact, room)
    finally:
        compaction._redact_texts = real


KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1x\n"  # left open: the rule runs to the end of its text


@pytest.mark.parametrize("room", [300, 3_000, 30_000])
def test_the_recent_turns_are_scanned_as_one_text_with_what_each_alone_gives(room: int) -> None:
    for seed in range(6):
        made = transcript(12, seed)
        entries = list(made.entries)
        entries[-1] = entries[-1]._replace(text=entries[-1].text + "\n" + KEY)  # the next text is not swallowed
        entries[-3] = entries[-3]._replace(args=entries[-3].args + "password=" if seed % 2 else entries[-3].args)
        if seed == 5:  # a text holding the separator: each text is scanned alone then
            entries[-2] = entries[-2]._replace(text="a\x00\nb " + TOKEN)
        turns = compaction.split_turns(compaction.opening(entries)[2])[-6:]
        names = tool_names(entries)
        scans: list[str] = []

        def counted(text: str, scans: list[str] = scans) -> str:
            scans.append(text)
            return redact(text)

        assert compaction._fit_recent(turns, names, counted, room) == fit_recent_one_by_one(turns, names, room)
        assert len(scans) == (1 if seed != 5 else 1 + 2 * sum(map(len, turns)))


def test_stubs_are_made_for_the_room_the_recent_turns_leave() -> None:
    """Recent turns with long outputs take their share of the bound: the stubs made are those that can be shown
    then, and at most a batch more (what every stub gives is the test above)."""
    entries = [Entry("system", "You are a coding agent."), Entry("user", "Fix the parser.")]
    for n in range(400):
        entries += [Entry("assistant", f"Turn {n}."),
                    Entry("call", "", tool="Bash", call_id=f"c{n}", args=f"pytest {n}"),
                    Entry("result", "".join(f"test_{k} PASSED\n" for k in range(60)), call_id=f"c{n}", exit_code=0)]
    made = Transcript("claude", "s", entries, 0)
    calls = []
    real = compaction._stub

    def counted(*args: object) -> str:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    compaction._stub = counted  # type: ignore[assignment]
    try:
        text = compact(made, "summary", "header", Settings(), redact)
    finally:
        compaction._stub = real  # type: ignore[assignment]
    shown = sum(line.startswith("- Bash args#") for line in text.splitlines())
    assert 0 < shown <= len(calls) <= shown + compaction.STUB_BATCH
