"""The secret scanner's cheap checks before a pattern: each is implied by the pattern, so skipping the pattern when the
check fails never misses a secret. A rule's `hints` (one starts every match), the ASCII judgment of a key that names
a secret, and the split that finds no run the entropy rule would judge. With them, an agent hook's conversation save
of a transcript holding nothing secret-like loads no regular expressions at all (`re` with enum: ~2 ms)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import transcript_fixtures as tf
from conftest import Repo
from hypothesis import given, settings
from hypothesis import strategies as st

from shiftgit.ledger import secretrules
from shiftgit.ledger.secretrules import SECRET_KEY, TOKENS, compiled, names_secret, random_spans

# pieces the token patterns are made of, so generated texts hit every rule's pattern often
PIECES = ["gh", "p_", "o_", "u_", "s_", "r_", "x_", "gl", "pat-", "dt-", "cbt-", "A", "KIA", "SIA", "BIA", "CCA",
          "AIDA", "x", "ox", "oxb-", "app-", "1-", "sk", "_live_", "_test_", "rk", "whsec_", "sk-", "ant-", "proj-",
          "AIza", "hf_", "npm_", "pypi-AgE", "SG.", "eyJ", ".", "://", "u:", "@", "h", "-----BEGIN ", "RSA ",
          "PRIVATE KEY-----", "hooks.slack.com/", "services/", " ", "\n", "Ab9", "0123456789abcdefghij",
          "ABCDEFGHIJKLMNOPQRST", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9", "-", "_"]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_every_token_match_starts_with_one_of_its_rules_hints(text: str) -> None:
    for rule in TOKENS:
        for match in compiled(rule.pattern).finditer(text):
            hints = rule.hints or (rule.hint,)
            assert any(match.group().startswith(hint) for hint in hints), (rule.name, match.group())


KEY_CHARS = st.sampled_from(["pass", "w", "or", "d", "phrase", "secret", "token", "auth", "credential", "s", "api",
                             "access", "private", "signing", "encryption", "_", "-", "key", "KEY", "Key", "\n",
                             "ſ", "ı", "K", "x", " ", "é"])


@settings(max_examples=500, deadline=None)
@given(st.lists(KEY_CHARS, max_size=6).map("".join))
def test_a_key_names_a_secret_exactly_when_the_pattern_says_so(key: str) -> None:
    assert names_secret(key) == (compiled(SECRET_KEY).fullmatch(key) is not None)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a" * 25, "A" * 25, "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9", "src/pkg/module_name.py", " ",
                                 "\n", "x=", "1234567890" * 3, "é", "Zz9/+", "==", "path/To/someThing_9X",
                                 "Xq7Lm2Vp9Rk4Tn8Ws3Yb6"]),
                max_size=12).map("".join))
def test_the_split_finds_what_the_pattern_finds(text: str) -> None:
    real = sys.modules["re"]
    sys.modules["re"] = object()  # type: ignore[assignment]  # as in an agent hook: re not loaded (yet)
    try:
        split = random_spans(text)
    finally:
        sys.modules["re"] = real
    assert split == random_spans(text)  # re loaded: the pattern judges every text
    old = secretrules._SPLIT_MAX
    secretrules._SPLIT_MAX = -1  # every text goes to the pattern
    try:
        assert split == random_spans(text)
    finally:
        secretrules._SPLIT_MAX = old


PRE_COMPACT = """
import os, sys
import shiftgit.__main__ as main

def leave(code):
    print(type(sys.modules["re"]).__name__, type(sys.modules["collections"]).__name__, file=sys.stderr)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(code)

main._leave = leave
main._main(["hook", "claude", "pre-compact"], True)
"""


@pytest.mark.parametrize("secret", [None, "ghp_" + "a1B2" * 9])
def test_a_conversation_save_loads_regular_expressions_only_for_text_that_may_hold_a_secret(
        run_repo: Repo, tmp_path: Path, secret: str | None) -> None:
    transcript = tmp_path / "t.jsonl"
    tf.claude(transcript, turns=40, secret_at=None if secret is None else 39, secret=secret)
    body = json.dumps({"session_id": "s1", "cwd": str(run_repo.path), "hook_event_name": "PreCompact",
                       "transcript_path": str(transcript), "trigger": "auto"})
    proc = subprocess.run([sys.executable, "-S", "-c", PRE_COMPACT], cwd=run_repo.path, input=body, text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})

    assert proc.returncode == 0 and "saved the compacted conversation" in proc.stdout, proc.stderr
    assert proc.stderr.splitlines() == [("_DeferredModule" if secret is None else "module") + " _DeferredModule"]
    saved = run_repo.git("show", "refs/shift/context/demo:context.md")
    assert "TURN-MARK-040" in saved and "RESULT-MARK-039" in saved
    if secret is not None:
        assert secret not in saved and "[REDACTED:github-token]" in saved


URL_PIECES = st.sampled_from(["://", "http", "user", ":", "@", "host", "/", "?", "#", " ", "\n", "\t", "pa55word", "[",
                              "\\", "'", '"', "<", ">", "x" * 70, "é", "\u2003", "."])


@settings(max_examples=600, deadline=None)
@given(st.lists(URL_PIECES, max_size=16).map("".join))
def test_url_credentials_never_match_where_its_check_says_they_cannot(text: str) -> None:
    """The check before url-credentials' pattern (a `:` then an `@` after some `://`) is implied by the pattern."""
    rule = next(rule for rule in TOKENS if rule.name == "url-credentials")
    assert rule.possible is not None
    if compiled(rule.pattern).search(text):
        assert rule.possible(text), text


OP_PIECES = st.sampled_from(["passw", "or", "d", "passphrase", "secret", "token", "auth", "credential", "s", "key",
                             "authorization", "\\", '"', "'", " ", "\t", ":", "=", ":=", "=>", "\n", "x", "tokens",
                             "keyboard", "é"])


@settings(max_examples=800, deadline=None)
@given(st.lists(OP_PIECES, max_size=10).map("".join))
def test_a_key_pattern_never_matches_where_no_operator_follows_its_hint(text: str) -> None:
    """`op_follows` (the check before a context rule's key pattern) is implied by each key pattern it guards."""
    for rule in secretrules.CONTEXTS:
        for hint, key in rule.keys:
            if hint in secretrules.OP_KEYS and compiled(key).search(text):
                assert secretrules.op_follows(text, hint), (hint, text)


def test_prose_with_urls_and_words_that_hold_key_names_compiles_no_key_or_url_pattern() -> None:
    """Claude Code's own system prompt has URLs, "tokens", "keyboard", "secret of": none of them can be a secret."""
    text = ("See https://docs.example.com/en/docs and http://localhost:8080/path?q=1. Count your tokens; "
            "the keyboard shortcut is the secret of speed; authentication is out of scope.")
    assert not secretrules._userinfo_possible(text)
    assert not any(secretrules.op_follows(text.lower(), hint) for hint in secretrules.OP_KEYS)
    assert secretrules._userinfo_possible("fetch https://bob:hunter2@db.example.com/x")
    assert secretrules.op_follows("api_token = 'x'", "token") and secretrules.op_follows('"password": 1', "passw")
