"""Secret scanning: what must be found, what must never be, and what redaction leaves behind.

Fake secrets are built by concatenation so this file does not look like a leak to scanners.
"""

from __future__ import annotations

import base64
import json
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shiftgit.ledger.argvsecrets import argv_secret
from shiftgit.ledger.secrets import Finding, find_secrets, redact, redact_obj

B62 = string.ascii_letters + string.digits
GITHUB = "ghp_" + "Q7fK2xLm9Pz4Rt8Wv1Ny6Bc3Hd5Js0Ga2Ek7"
AWS_ID = "AKIA" + "Z3XQ7RT2LM4KP9WN"
AWS_SECRET = "6GsoLEhQzOq9UIxF/v2U6GpMjQNwDvJLp8SWY+Z9"
JWT = ".".join((
    base64.urlsafe_b64encode(b'{"alg": "HS256", "typ": "JWT"}').decode().rstrip("="),
    base64.urlsafe_b64encode(b'{"sub": "1234567890", "iat": 1516239022}').decode().rstrip("="),
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV" + "_adQssw5c",
))
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\nMzEfYyjiWA4R4/M2bS1GB4t7NXp9\n"
PRIVATE_KEY = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + PEM_BODY + "-----END RSA " + "PRIVATE KEY-----"

# (rule, text around the secret, the secret): "{}" in the text marks where the secret goes.
TRUE_POSITIVES = [
    ("github-token", "export GITHUB_TOKEN={}", GITHUB),
    ("github-token", "gho token {} in log", "gho_" + "hGnQXhpv5qTGOgN3S1YapVUtMaTONwbeub1b"),
    ("github-token", "{}", "ghu_" + "hGnQXhpv5qTGOgN3S1YapVUtMaTONwbeub1b"),
    ("github-token", "ghs: '{}'", "ghs_" + "hGnQXhpv5qTGOgN3S1YapVUtMaTONwbeub1b"),
    ("github-token", "({})", "ghr_" + "hGnQXhpv5qTGOgN3S1YapVUtMaTONwbeub1b"),
    ("github-token", "pat {}.", "github_pat_" + "11ABCDE2Y0" + "65i87OGSg1n6bMxvup1lye_"
     + "tWDOrJ7blxRwAPNocHs7pQdizF5edVibV5kFLWiuOPTbKoDUG1JtR3KVHAn"),
    ("gitlab-token", "git push with {}", "glpat-" + "M9vlTtjhtzB7nut06Mih"),
    ("aws-access-key", "aws_access_key_id = {}", AWS_ID),
    ("aws-access-key", "sts creds {} expire", "ASIA" + "Q2W3E4R5T6Y7U8I9"),
    ("aws-secret-key", 'aws_secret_access_key = "{}"', AWS_SECRET),
    ("slack-token", "SLACK_BOT={}", "xoxb-" + "2048123456-4096123456-" + "M9vlTtjhtzB7nut06MihJIw2"),
    ("slack-token", "user token {}", "xoxp-" + "2048123456-4096123456-" + "M9vlTtjhtzB7nut06MihJIw2"),
    ("slack-token", "app token {}", "xapp-" + "1-A0123456789-1234567890123-" + "bZ7k143pFJoZplowa7yH"),
    ("slack-webhook", "curl https://hooks.slack.com/services/{} -d x",
     "T0A1B2C3D/B4E5F6G7H/" + "Xy9Kq2Lm5Np8Rs1Tv4Wz7Ab3"),
    ("stripe-key", "STRIPE={}", "sk_live_" + "M9vlTtjhtzB7nut06MihJIw2"),
    ("stripe-key", "restricted {}", "rk_live_" + "M9vlTtjhtzB7nut06MihJIw2"),
    ("stripe-key", "test mode {}", "sk_test_" + "M9vlTtjhtzB7nut06MihJIw2"),
    ("openai-key", "OPENAI_API_KEY={}", "sk-" + "bZ7k143pFJoZplowa7yHEvTNxVsMfBZVR72380F8gJvZc3JY"),
    ("openai-key", "key {} set", "sk-proj-" + "qykn1cSgs2xG35Do6m81oRhwUDug2LfKD2fMHVWURUG9rw503"),
    ("anthropic-key", "ANTHROPIC_API_KEY={}", "sk-ant-api03-" + "UDRgvibCQYK0kowvvkAc9LbSOA33LYddhhJzEHBy"),
    ("google-api-key", "maps key {}", "AIza" + "Hly5SASfSYvu0gM6TIq4RfKEOmMa7AxvfYe"),
    ("huggingface-token", "HF_TOKEN={}", "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUi"),
    ("npm-token", "//registry.npmjs.org/:_authToken={}", "npm_" + "hGnQXhpv5qTGOgN3S1YapVUtMaTONwbeub1b"),
    ("pypi-token", "password = {}", "pypi-AgE" + "IcHlwaS5vcmcCJDY5ZDQ3YjM0LTkxNjUtNGU4My05ZTJhLWQ3ZTA0ZjE5"),
    ("sendgrid-key", "SG={}", "SG.65i87OGSg1n6bMxvup1lye." + "zkzYeKHnsPYVXoyKWQcY2SVSRuRNiLrz4AGkyAja2da"),
    ("private-key", "key file:\n{}\ntrailing text", PRIVATE_KEY),
    ("private-key", "truncated output tail:\n{}", "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + PEM_BODY),
    ("jwt", "cookie session={}; Path=/", JWT),
    ("url-credentials", "git clone https://deploy:{}@git.example.com/org/repo.git", "Xk9mQ2pL7v"),
    ("url-credentials", "DATABASE_URL=postgres://app:{}@db:5432/app", "s3cr3t-pw"),
    ("url-credentials", "REDIS_URL=rediss://:{}@cache.internal:6380", "hunter2hunter2"),
    ("cli-credentials", "curl -u ada:{} https://api.example.com", "s3cret-Pw"),
    ("secret-assignment", 'password = "{}"', "correct-H0rse"),
    ("secret-assignment", "DB_PASSWORD={} ./manage.py migrate", "letmein42"),
    ("secret-assignment", "mysql --password={} -u root", "letmein"),
    ("secret-assignment", '{{"api_key": "{}"}}', "a1b2c3d4e5f6g7h8"),
    ("secret-assignment", "client_secret: {}", "Zx81kQ_vT0"),
    ("secret-assignment", "password: {} ✓ done", "hünter2é"),
    ("secret-assignment", "https://api.example.com/v1?access_token={}&page=2", "aBc123dEf456"),
    ("secret-assignment", 'escaped in JSON: "{{\\"token\\": \\"{}\\"}}"', "Zx81kQvT0pw9"),
    ("auth-header", "curl -H 'Authorization: Bearer {}' https://api.example.com", "tok_4f9a2b7c1d8e3f60"),
    ("auth-header", "Authorization: Basic {}", "YWRhOnMzY3IzdC1wYXNzd29yZA=="),
    ("high-entropy", "blob {} end", "MLPZpwiBQV5bR3kzIngDZcnBfLqnqzvFUe1hkobc"),
    ("high-entropy", "signing_salt {}", "6GsoLEhQzOq9UIxFv2U6GpMjQNwDvJLp8SWYNHZ9"),
]

MUST_NOT_FLAG = [
    "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12\nAuthor: Ada Example <ada@example.com>",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "image@sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
    "run id 123e4567-e89b-12d3-a456-426614174000 and 123E4567-E89B-12D3-A456-426614174000",
    "0x7f3a2b1c4d90 <object at 0x00007F3A2B1C4D90>",
    "shiftgit/secrets.py tests/test_secrets.py /usr/lib/python3.11/site-packages/_pytest/python.py",
    "/home/ada/Projects/ShiftGit2/src/Components/UserProfile3/index.tsx",
    "C:\\Users\\Ada\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\site-packages",
    "tests/test_x.py::test_y[a-b]",
    "tests/test_store.py::TestStore::test_write_atomic[posix-utf8-Case2B] PASSED",
    "2024-05-01T12:34:56Z 2024-05-01T12:34:56.123456+00:00 20240501T123456Z",
    "the token budget was 80% used; tokens: 1500",
    '"tokens": 1500, "token_budget": 200000, "max_tokens": 4096',
    "test_checkpoint_records_changed_files test_redact_keeps_surrounding_text_intact",
    "handleUserAuthenticationCallback getHTTPResponseCode2XX AbstractSingletonProxyFactoryBean",
    "AmazonS3FilesReadOnlyAccess TestF77CommonBlockReader V1ValidatorWithValuesAndKwargs",
    "git describe: v1.2.3-14-g2414721 go: v0.0.0-20191109021931-daa7c04131f5",
    "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "pod web-7d4b9c8f6d-x2z9q restarted; node ip-10-0-3-17.ec2.internal",
    "aws-cli/2.15.0 Python/3.11.6 Linux/6.5.0-1014-aws exe/x86_64.ubuntu.22",
    "https://github.com/ada/shiftgit/pull/123#issuecomment-1234567890",
    "https://example.com:8443/api/v2/items?page=2&per_page=50",
    "ssh://git@github.com:22/ada/shiftgit.git and git@github.com:ada/shiftgit.git",
    "GITHUB_TOKEN=${GITHUB_TOKEN} token: ${{ secrets.GITHUB_TOKEN }} --env GITHUB_TOKEN",
    'api_key = os.environ["API_KEY"]; token = get_token(); secret = self._secret',
    "password: see the vault entry; auth: switched to OAuth; Token: expired after 1h",
    "password: ******** token=<your-token> secret: null api_key: '' auth=none",
    "def f(token: str = None, next_token=next_token, passphrase=passphrase): ...",
    "author: Ada Example; authors = 3; the key: value pairs",
    "docker run -u 1000:1000 img; docker run -u root:root img; docker run -u $(id -u):$(id -g) img",
    "python\0-u\0app.py:main\0--reload; pip install -U pip",
    "Bearer tokens are described in RFC 6750 and the Authorization header",
    "@seed(302934307671667531413257853548643485645) Ran 42 tests in 0.123s",
    "k-3fa9c2e1b7d0 c-0a1b2c3d4e5f run-2024-05-01",
    "The agent resumed from the last checkpoint, reran the failing tests and committed the fix "
    "to the parser after reviewing the changed files and the evidence recorded in the ledger.",
    "-----BEGIN CERTIFICATE-----\nMIIB",
    "ARN arn:aws:secretsmanager:us-east-1:123456789012:secret:AmazonDataZone-*",
    "naïve café — résumé ✓ … 日本語のテキスト İstanbul",
    "Downloading numpy (16.3MB) ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 16.3/16.3 MB 42.1 MB/s eta 0:00:00",
]

PYTEST_OUTPUT = """\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0
rootdir: /work/main
configfile: pyproject.toml
plugins: hypothesis-6.155.2
collected 57 items

tests/test_ledger.py ........                                            [ 14%]
tests/test_store.py ....F..                                              [ 26%]

=================================== FAILURES ===================================
______________ test_checkpoint_records_changed_files[posix-utf8] _______________

repo = Repo(path=PosixPath('/tmp/pytest-of-root/pytest-7/test_checkpoint_records_cha0/repo'))

    def test_checkpoint_records_changed_files(repo: Repo) -> None:
>       assert repo.git("rev-parse", "HEAD").strip() == "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"
E       AssertionError: assert 'da39a3ee5e6b4b0d3255bfef95601890afd80709' == '2fd4e1c67a2d28fced849ee1...'

tests/test_store.py:88: AssertionError
Traceback (most recent call last):
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/_pytest/python.py", line 159, in call
    result = testfunction(**testargs)
  File "/work/main/shiftgit/store.py", line 144, in write
    token = self._lock_token
KeyError: 'output_sha256'
=========================== short test summary info ============================
FAILED tests/test_store.py::test_checkpoint_records_changed_files[posix-utf8] - AssertionError
========================= 1 failed, 56 passed in 3.21s =========================
"""

LEDGER_SNIPPET = json.dumps({
    "schema_version": 1, "run": "fix-parser", "created_at": "2024-05-01T12:34:56Z", "status": "active",
    "contract": {"goal": "make the parser accept trailing commas", "stop_when": "tests pass",
                 "budgets": {"minutes": 30, "tokens": 1500, "cost": 2.5}},
    "pending_checks": [{"id": "k-3fa9c2e1b7d0", "argv": ["pytest", "-q", "tests/test_x.py::test_y[a-b]"],
                        "output_sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                        "content": "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12", "env": ["GITHUB_TOKEN"],
                        "output_tail": PYTEST_OUTPUT}],
    "checkpoint": {"base": "da39a3ee5e6b4b0d3255bfef95601890afd80709",
                   "files": [{"path": "shiftgit/secrets.py", "old": "0" * 40, "new": "f" * 40}],
                   "note": "token budget at 80%; digest sha256:" + "ab" * 32},
}, indent=2)


def embed(text: str, secret: str) -> tuple[str, int]:
    """The text with the secret in place of "{}", and where the secret starts."""
    before = text.split("{}")[0].replace("{{", "{")
    return text.format(secret), len(before)


@pytest.mark.parametrize(("rule", "text", "secret"), TRUE_POSITIVES, ids=[f"{r}-{i}" for i, (r, _, _) in
                                                                         enumerate(TRUE_POSITIVES)])
def test_each_rule_finds_its_secret(rule: str, text: str, secret: str) -> None:
    full, start = embed(text, secret)
    assert full[start:start + len(secret)] == secret
    assert find_secrets(full) == [Finding(rule, start, start + len(secret))]


@pytest.mark.parametrize(("rule", "text", "secret"), TRUE_POSITIVES, ids=[f"{r}-{i}" for i, (r, _, _) in
                                                                         enumerate(TRUE_POSITIVES)])
def test_redaction_removes_the_secret_and_keeps_the_rest(rule: str, text: str, secret: str) -> None:
    full, start = embed(text, secret)
    redacted = redact(full)
    assert redacted == full[:start] + f"[REDACTED:{rule}]" + full[start + len(secret):]
    assert secret not in redacted
    assert find_secrets(redacted) == []


@pytest.mark.parametrize("text", MUST_NOT_FLAG)
def test_ordinary_ledger_text_is_not_flagged(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == text


@pytest.mark.parametrize("text", [PYTEST_OUTPUT, LEDGER_SNIPPET], ids=["pytest-output", "ledger-json"])
def test_real_looking_output_and_ledgers_are_not_flagged(text: str) -> None:
    assert [f.preview(text) for f in find_secrets(text)] == []


def test_preview_names_the_rule_without_repeating_the_secret() -> None:
    text = "export GITHUB_TOKEN=" + GITHUB
    [finding] = find_secrets(text)
    assert finding.preview(text) == "github-token: ghp_…"
    assert GITHUB not in finding.preview(text)


def test_short_secret_previews_less() -> None:
    text = "mysql --password=letmein"
    [finding] = find_secrets(text)
    assert finding.preview(text) == "secret-assignment: le…"


def test_findings_are_sorted_and_do_not_overlap() -> None:
    text = f"token={GITHUB} url https://u:{AWS_ID}@h.example.com then {JWT} and {GITHUB}"
    findings = find_secrets(text)
    assert [f.rule for f in findings] == ["github-token", "aws-access-key", "jwt", "github-token"]
    assert all(a.end <= b.start for a, b in zip(findings, findings[1:], strict=False))


def test_overlapping_matches_merge_under_the_strongest_rule() -> None:
    text = "https://x-access-token:" + GITHUB + "@github.com/ada/shiftgit.git"
    assert find_secrets(text) == [Finding("github-token", 23, 23 + len(GITHUB))]


def test_command_lines_joined_by_nul_are_checked_argument_by_argument() -> None:
    clean = "\0".join(["pytest", "-q", "tests/test_x.py::test_y[a-b]", "--env", "GITHUB_TOKEN"])
    leaky = "\0".join(["deploy", "--token=Zx81kQvT0pw9", "--verbose"])
    assert find_secrets(clean) == []
    assert redact(leaky) == "deploy\0--token=[REDACTED:secret-assignment]\0--verbose"


def test_redact_obj_redacts_every_string_and_keeps_keys_and_other_values() -> None:
    secret_key = "GITHUB_TOKEN=" + GITHUB
    ledger = {
        "run": "fix-parser", "tokens": 1500, "ratio": 0.5, "done": True, "stop": None,
        "notes": ["first", "set GITHUB_TOKEN=" + GITHUB, ("tuple", "AWS " + AWS_ID)],
        "nested": {"deeper": [{"tail": "Authorization: Bearer tok_4f9a2b7c1d8e3f60"}]},
        secret_key: "the key stays as it is",
    }
    original = json.dumps(ledger, sort_keys=True)
    assert redact_obj(ledger) == {
        "run": "fix-parser", "tokens": 1500, "ratio": 0.5, "done": True, "stop": None,
        "notes": ["first", "set GITHUB_TOKEN=[REDACTED:github-token]",
                  ["tuple", "AWS [REDACTED:aws-access-key]"]],
        "nested": {"deeper": [{"tail": "Authorization: Bearer [REDACTED:auth-header]"}]},
        secret_key: "the key stays as it is",
    }
    assert json.dumps(ledger, sort_keys=True) == original  # a copy: the input is untouched


def test_redact_obj_redacts_a_string_under_a_key_that_names_a_secret() -> None:
    document = {"password": "hunter", "api_key": "a1b2c3d4e5f6", "nested": [{"client_secret": "x9"}],
                "token": "next_token", "auth": "none", "secret": "${SECRET}", "tokens": 1500,
                "key": "effect-abc123", "author": "Ada Example 2", "note": "password hunter"}
    assert redact_obj(document) == {
        "password": "[REDACTED:secret-assignment]", "api_key": "[REDACTED:secret-assignment]",
        "nested": [{"client_secret": "[REDACTED:secret-assignment]"}],
        "token": "next_token", "auth": "none", "secret": "${SECRET}", "tokens": 1500,
        "key": "effect-abc123", "author": "Ada Example 2", "note": "password hunter",
    }
    assert redact_obj(redact_obj(document)) == redact_obj(document)


def test_redact_obj_on_scalars_and_empty_containers() -> None:
    assert redact_obj("ghp token " + GITHUB) == "ghp token [REDACTED:github-token]"
    assert redact_obj(42) == 42
    assert redact_obj(None) is None
    assert redact_obj([]) == []
    assert redact_obj({}) == {}
    assert redact_obj(["", "a", {"k": ""}]) == ["", "a", {"k": ""}]


def test_redact_obj_matches_redact_on_each_string() -> None:
    strings = [text.format(secret) for _, text, secret in TRUE_POSITIVES] + MUST_NOT_FLAG + ["a\x00\nb"]
    assert redact_obj(strings) == [redact(text) for text in strings]


def test_a_private_key_left_open_does_not_swallow_the_next_string() -> None:
    opened = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + PEM_BODY
    assert redact_obj([opened, "next note"]) == ["[REDACTED:private-key]", "next note"]


# -- properties ------------------------------------------------------------------------------

FRAGMENTS = st.sampled_from([
    "token", "password", "secret", "api_key", "auth", "Authorization", "Bearer", "=", ":", ": ", " = ", '"',
    "'", "\\", " ", "\n", "\0", "/", "@", "://", "-----BEGIN RSA PRIVATE KEY-----\n",
    "\n-----END RSA PRIVATE KEY-----",
    "ghp_", "sk-", "xoxb-", "AKIA", "eyJ", "[REDACTED:jwt]", "*", "$", "&", "=", "==", "_", "-", ".",
    "Zx81kQvT0pw9", "AbCdEf", "0123456789", "abcdef", "Q7fK2xLm9Pz4Rt8Wv1Ny6Bc3Hd5Js0Ga2Ek7", "é", "İ", "ﬃ",
])
TEXTS = st.one_of(st.text(), st.text(alphabet=B62 + "+/=_-:@ \n\"'"), st.lists(FRAGMENTS).map("".join))


STANDALONE = {  # rules that need no context around the secret
    "github-token", "gitlab-token", "aws-access-key", "slack-token", "stripe-key", "openai-key",
    "anthropic-key", "google-api-key", "huggingface-token", "npm-token", "pypi-token", "sendgrid-key",
    "private-key", "jwt", "high-entropy",
}


def generated_secrets() -> st.SearchStrategy[str]:
    def chars(alphabet: str, n: int) -> st.SearchStrategy[str]:
        return st.text(alphabet=alphabet, min_size=n, max_size=n)

    upper_digits = string.ascii_uppercase + string.digits
    return st.one_of(
        chars(B62, 36).map(lambda s: "ghp_" + s),
        chars(upper_digits, 16).map(lambda s: "AKIA" + s),
        chars(B62, 24).map(lambda s: "sk_live_" + s),
        chars(string.digits, 10).map(lambda s: "xoxb-" + s + "-" + s + "-Ab3dE5fG7hJ9kL1m"),
        st.sampled_from([secret for rule, _, secret in TRUE_POSITIVES if rule in STANDALONE]),
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TEXTS)
def test_find_secrets_never_raises_and_returns_ordered_spans(text: str) -> None:
    findings = find_secrets(text)
    assert all(0 <= f.start < f.end <= len(text) for f in findings)
    assert all(a.end <= b.start for a, b in zip(findings, findings[1:], strict=False))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TEXTS)
def test_redact_is_idempotent_and_leaves_nothing_to_find(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
    assert find_secrets(once) == []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TEXTS, st.sampled_from([" ", "\n", "\t", " | "]), generated_secrets(), TEXTS)
def test_a_secret_embedded_in_any_text_is_found_and_redacted(before: str, sep: str, secret: str,
                                                              after: str) -> None:
    text = before + sep + secret + sep + after
    start = len(before) + len(sep)
    assert any(f.start <= start and start + len(secret) <= f.end for f in find_secrets(text))
    assert secret not in redact(text)


# -- many blobs scanned as one text (the checkpoint's snapshot of 1,000 files) ---------------------

BLOBS = ([text.format(secret).encode() for _, text, secret in TRUE_POSITIVES]
         + [text.encode() for text in MUST_NOT_FLAG]
         + [b'{"t": "\\u0067hp_' + GITHUB[4:].encode() + b'"}',  # a token spelled with a JSON escape
            b"\0binary " + GITHUB.encode() + b"\0", b"x" * 9000 + b"\0\n" + AWS_ID.encode(),  # NUL + newline inside
            b"password", b"=Zx81kQvT0pw9", b"-----BEGIN RSA " + b"PRIVATE KEY-----\n", PEM_BODY.encode(), b"", b"-u"])


def test_blobs_scanned_as_one_text_are_judged_each_as_alone() -> None:
    from shiftgit.git.secretscan import first_rule, first_rules

    alone = [first_rule(blob) for blob in BLOBS]
    assert first_rules(BLOBS) == alone
    assert first_rules(BLOBS[::-1]) == alone[::-1]
    assert {"github-token", "aws-access-key", "private-key"} <= set(alone) and None in alone
    assert first_rules([b"password", b"=Zx81kQvT0pw9"]) == [None, None]  # a key and a value in two files


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(TEXTS.map(lambda t: t.encode("utf-8", "surrogatepass")), st.sampled_from(BLOBS))))
def test_any_blobs_scanned_together_get_the_verdicts_they_get_alone(blobs: list[bytes]) -> None:
    from shiftgit.git.secretscan import first_rule, first_rules

    assert first_rules(blobs) == [first_rule(blob) for blob in blobs]


PW = "opense" + "same"
ARGV_SECRETS = [  # (argv, the index of the word holding the secret)
    (["mysql", "-p" + PW, "db"], 1), (["/usr/bin/mysqldump", "-uroot", "-p" + PW, "db"], 2),
    (["mysql", "--password", PW], 2), (["mysql", "--password=" + PW[:3]], 1), (["deploy", "--token", PW], 2),
    (["deploy", "--api-key", PW], 2), (["deploy", "--db-password", PW], 2), (["keytool", "-storepass", PW], 2),
    (["sshpass", "-p", PW, "ssh", "host"], 2), (["sshpass", "-p" + PW, "ssh"], 1), (["redis-cli", "-a", PW], 2),
    (["curl", "-u", f"ada:{PW}", "https://x"], 2), (["curl", f"--user=ada:{PW}"], 1), (["curl", f"-uada:{PW}"], 1),
    (["env", "PGPASSWORD=" + PW[:2], "psql"], 1), (["docker", "exec", "db", "mysql", "-p" + PW], 4),
    (["sh", "-c", f"cd /srv && PGPASSWORD={PW} psql -h db"], 2), (["bash", "-lc", f"mysql -p{PW} db"], 2),
    # a shell's own options before (or around) its -c: the script is still read
    (["sh", "-e", "-c", f"mysql -p{PW} db"], 3), (["bash", "-eu", "-c", f"sshpass -p {PW} true"], 3),
    (["bash", "-x", "-c", f"mysql -p{PW}"], 3), (["bash", "--norc", "-c", f"mysql -p{PW}"], 3),
    (["bash", "-o", "pipefail", "-c", f"mysql -p{PW}"], 4), (["/bin/bash", "-ce", f"redis-cli -a {PW}"], 2),
    (["sh", "-c", f"bash -e -c 'mysql -p{PW}'"], 2), (["sudo", "-u", "pg", "sh", "-e", "-c", f"mysql -p{PW}"], 6),
    # variables, programs, options and headers the first tables missed
    (["MYSQL_PWD=" + PW, "mysql"], 0), (["env", "DB_PW=" + PW, "app"], 1), (["MYSQL_PWD=1234", "mysql"], 0),
    (["docker", "login", "-u", "me", "-p", PW, "reg"], 5), (["podman", "login", "-p" + PW, "quay.io"], 2),
    (["helm", "registry", "login", "r", "-p", PW], 5), (["openssl", "rsa", "-in", "k", "-passin", "pass:" + PW], 5),
    (["openssl", "pkcs12", "-passout", "pass:" + PW], 3), (["tool", "--secret", PW + "7"], 2),
    (["tool", "--api-secret", PW], 2), (["tool", "--client-secret=" + PW], 1), (["plink", "-pw", PW, "host"], 2),
    (["tool", "--password", "1234"], 2), (["curl", "-H", f"Authorization: Bearer {PW[:6]}123456", "https://x"], 2),
    (["curl", "--header=X-API-Key: " + PW, "x"], 1), (["curl", "-H", "Private-Token: " + PW, "x"], 2),
    (["http", "x", f"Authorization:Bearer {PW}"], 2), (["vault", "login", PW + "9"], 2),
]
ARGV_CLEAN = [
    ["python", "-m", "http.server", "-p", "8080"], ["pytest", "-p", "no:cacheprovider"], ["mysql", "-p", "mydb"],
    ["mysql", "-uroot", "-p"], ["docker", "run", "-p", "8080:80", "img"], ["gh", "auth", "login", "--with-token"],
    ["docker", "login", "--password-stdin"], ["mysql", "--password", "$DB_PASSWORD"], ["deploy", "--token", "<token>"],
    ["aws", "s3api", "list-objects", "--starting-token", "eyJhbGciOi"], ["make", "MAX_TOKENS=4096"],
    ["curl", "-u", "ada", "https://x"], ["sh", "-c", "TOKEN=$(cat token.txt) ./deploy"], ["bash", "--norc", "x"],
    ["python", "-c", "import os; token = os.environ['TOKEN']", "--password"], ["hf", "--pad-token", "[PAD]"],
    # counts, flags, names and references where a secret option or variable would take a secret
    ["tool", "--token", "1500"], ["tool", "--include-token", "y"], ["llm", "--max-tokens", "100"], ["GH_TOKEN=0", "x"],
    ["BYPASS_CACHE=1", "make"], ["env", "PWD=/tmp", "OLDPWD=/srv", "ls"], ["tool", "--secret-file", "/run/s"],
    ["docker", "build", "--secret", "id=npmrc,src=.npmrc", "."], ["docker", "service", "create", "--secret", "db_pw"],
    ["docker", "login", "-u", "me", "--password-stdin", "reg"], ["docker", "login", "-u", "me", "-p", "$PW", "reg"],
    ["openssl", "rsa", "-passin", "env:PW"], ["openssl", "enc", "-pass", "file:/run/pw"],
    ["openssl", "enc", "-pass", "stdin"],
    ["bash", "-o", "pipefail", "-c", "make test"], ["bash", "script.sh", "-c", "x"], ["sh", "-ec", "mysql -p db"],
    ["curl", "-H", "Accept: application/json", "x"], ["curl", "-H", "Authorization: Bearer $TOKEN", "x"],
    ["grep", "-Hn", "token", "src"], ["git", "commit", "-m", "Authorization: use bearer tokens now"],
    ["vault", "login", "-method=userpass", "username=ada"], ["ssh", "-p", "2222", "host"],
    ["sshpass", "-e", "ssh", "h"],
]


@pytest.mark.parametrize(("argv", "index"), ARGV_SECRETS)
def test_a_secret_that_is_a_word_of_its_own_is_found_by_its_place(argv: list[str], index: int) -> None:
    said = argv_secret(argv)
    assert said is not None and said.startswith(f"argv[{index}]"), said
    assert PW not in said  # where it is, never what it is


@pytest.mark.parametrize("argv", ARGV_CLEAN)
def test_options_that_take_an_ordinary_word_are_no_secret(argv: list[str]) -> None:
    assert argv_secret(argv) is None
