"""Secrets given as words of their own on a command line, told by their place: `--password S`, `PGPASSWORD=S psql`.

`find_secrets` knows a secret by its format or by a `key=value` around it. On a command line a secret can also be a
plain word: the value of an option named for one (`--api-secret S`, openssl's `-passin pass:S`), a variable named for
one (`MYSQL_PWD=S mysql`), `-pS` after mysql and its kin, `-p S` after sshpass or `docker login`, the password in
`curl -u user:S`, the credentials in an `Authorization` header, vault's `login S`. A shell's `-c` script (`sh -e -c
SCRIPT`, `bash --norc -xc SCRIPT`, nested ones too) is split like the shell would and read the same way.

The commands that record a command line (check, effect run, service start, --accept/--inspect/--escalate-when) refuse
one that holds a secret: it would land in the ledger, in commits and in the published ledger ref.
"""

from __future__ import annotations

from shiftgit.ledger.secretrules import LITERALS, SECRET_KEY, compiled, is_assigned
from shiftgit.ledger.secrets import find_secrets

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["argv_secret", "argv_secrets"]

# Options named for a secret take it as their value; only the END of the name counts (`--secret-file P` names a
# file). Passwords are secrets whatever they hold (a PIN is one); a token or key that is a plain number is a count
# (`--token 1500`). Not the options below, which name something else (`--no-password`, `--with-token`, `--max-token`,
# tokenizer tokens, `--include-token y`).
_PASSWORD_ENDS = ("password", "passwd", "passphrase", "-pass", "_pass", "storepass", "keypass", "passin", "passout",
                  "-pw", "_pw", "-pwd", "_pwd")
_PASSWORD_NAMES = ("pass", "pw")
_KEY_ENDS = ("token", "apikey", "api-key", "api_key", "secret-key", "secret_key", "secretkey", *(
    f"{owner}{sep}secret" for owner in "client app api consumer shared webhook signing access".split()
    for sep in ("-", "_", "")))
# `--secret` alone (and `--tls-secret`...) also takes the NAME of a secret (docker, podman, kubernetes) or a spec
# (`id=npm,src=.npmrc`): only a value that looks generated (a digit, or mixed case) counts.
_NAMED_END = "secret"
_NOT_SECRET_OPTIONS = tuple(f"{word}-" for word in (
    "no ask prompt with use read show print skip reset change generate forget max min num include exclude "
    "starting next continuation page pad eos bos sep unk cls mask").split())
# Programs whose short option takes a password: (option, whether the password may be the next word; else only
# attached, `-pS`: mysql's `-p DB` asks for the password and names a database). Keys of two or three words are a
# program and its subcommand (`docker run -p 8080:80` publishes a port).
PASSWORD_OPTIONS: dict[str, tuple[str, bool]] = {
    **{tool: ("-p", False) for tool in (
        "mysql mysqldump mysqladmin mysqlimport mysqlcheck mysqlshow mysqlslap mysqlpump mysqlbinlog "
        "mariadb mariadb-dump mariadb-admin mariadb-import mariadb-check mariadb-show mariadb-binlog "
        "7z 7za 7zr").split()},
    **{tool: ("-p", True) for tool in "sshpass mongo mongosh mongodump mongorestore mongoexport mongoimport".split()},
    **{f"{tool} login": ("-p", True) for tool in "docker podman buildah nerdctl skopeo oras".split()},
    "helm registry login": ("-p", True), "redis-cli": ("-a", True), "zip": ("-P", True), "unzip": ("-P", True),
}
USER_OPTIONS = {"curl": ("-u", "--user", "-U", "--proxy-user")}  # `user:password`
POSITIONAL = {"vault login": "the token vault login takes"}  # its first plain word
_TOOLS = frozenset(" ".join(key.split()[:n]) for key in (*PASSWORD_OPTIONS, *USER_OPTIONS, *POSITIONAL)
                   for n in range(1, len(key.split()) + 1))
SHELLS = frozenset("sh bash dash zsh ksh mksh ash fish".split())  # `sh -c SCRIPT`: the script's words are read too
_SHELL_OPTION_ARGS = ("--rcfile", "--init-file")  # long options that take the next word (short: a cluster with o/O)
_MAX_DEPTH = 4  # `sh -c "bash -c '...'"`
COMMAND_ENDS = frozenset((";", "&&", "||", "|", "&"))
_HEADER_OPTIONS = ("-H", "--header", "--proxy-header")
_AUTHORIZATION = (r"(?i)(?:.*extraheader=)?(?:proxy-)?authorization[ \t]*:[ \t]*(?:bearer|basic|token)[ \t]+"
                  r"(?P<v>\S+)[ \t]*")  # a word of its own, or git's `-c http.extraHeader=...`
_REFERENCE = r"\$|%\w+%$|<[^>]*>$|\{\{|\[REDACTED:|\*+$|(?:env|file|fd):|stdin$"  # `$PW`, `<pw>`, openssl's `env:PW`
_FLAGS = frozenset("y n yes no on off".split())
_COUNT_DIGITS = 9
_ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


def argv_secret(argv: Sequence[str]) -> str | None:
    """Where a command line holds a secret, said without repeating it (`argv[2], the word after --password`);
    None when it holds none."""
    joined = "\0".join(argv)
    found = find_secrets(joined)
    if found:
        return f"argv[{joined.count(chr(0), 0, found[0].start)}], {found[0].rule}"
    return _placed(argv)


def argv_secrets(argvs: Sequence[Sequence[str]]) -> list[str | None]:
    """`argv_secret` of each command line, their texts scanned as one (a ledger records hundreds)."""
    from shiftgit.ledger.secrets import SEPARATOR_TEXT

    texts = ["\0".join(argv) for argv in argvs]
    if find_secrets(SEPARATOR_TEXT.join(texts)):  # no rule matches across the separator: which one, said alone
        return [argv_secret(argv) for argv in argvs]
    return [_placed(argv) for argv in argvs]


def _placed(argv: Sequence[str]) -> str | None:
    """`argv_secret`'s finding by a word's place alone."""
    said = _scan(argv, 0)
    if said is None:
        return None
    index, why, scripted = said
    return f"argv[{index}]{' (a shell script)' if scripted else ''}, {why}"


def _scan(words: Sequence[str], depth: int) -> tuple[int, str, bool] | None:
    """(the index of the word, why, whether it is in a shell's script) of the first secret in `words`; None."""
    said = _in_words(words)
    if said is not None:
        return said[0], said[1], False
    if depth >= _MAX_DEPTH:
        return None
    for index, word in enumerate(words):
        if word.rsplit("/", 1)[-1] in SHELLS:
            at = script_index(words, index)
            inner = None if at is None else _scan(_shell_words(words[at]), depth + 1)
            if at is not None and inner is not None:
                return at, inner[1], True
    return None


def script_index(words: Sequence[str], shell: int) -> int | None:
    """The index of the script the shell at `words[shell]` runs with `-c` (after any of its options: `-e -c`,
    `-xc`, `--norc -c`, `-o pipefail -c`); None when it runs none (a script file, or no `-c`)."""
    given, at = False, shell + 1
    while at < len(words):
        word = words[at]
        if word == "--":
            return at + 1 if given and at + 1 < len(words) else None
        if len(word) < 2 or word[0] not in "-+":
            return at if given else None
        if word.startswith("--"):
            at += 2 if word in _SHELL_OPTION_ARGS else 1
            continue
        given = given or (word[0] == "-" and "c" in word)
        at += 2 if "o" in word or "O" in word else 1  # `-o pipefail`, `-eo pipefail`, `+O extglob`
    return None


def _shell_words(script: str) -> list[str]:
    import shlex  # here: only a shell script is split

    try:
        return shlex.split(script)
    except ValueError:
        return script.split()


def _in_words(words: Sequence[str]) -> tuple[int, str] | None:
    """The first word that is a secret by its place among the words, and why; None when there is none."""
    tool = ""  # the program (and subcommand) a password option belongs to, as far as the words tell
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else ""
        name = word.rsplit("/", 1)[-1]
        if word in COMMAND_ENDS:
            tool = ""
        elif tool and f"{tool} {word}" in _TOOLS:
            tool = f"{tool} {word}"
        elif name in _TOOLS:
            tool = name
        elif is_secret_env(word):
            return index, f"a value of {word.partition('=')[0]}"
        elif ":" in word and _is_value(_auth_value(word), count=True):
            return index, "the credentials of an Authorization header"
        elif word.startswith("-"):
            said = _option_secret(word, following, tool)
            if said is not None:
                return index + said[0], said[1]
        elif tool in POSITIONAL and "=" not in word and ":" not in word and "/" not in word:
            if _is_value(word, count=True):
                return index, POSITIONAL[tool]
            tool = ""
    return None


def _auth_value(word: str) -> str:
    """The credentials of `Authorization: Bearer S` as a word of its own; "" for any other word."""
    match = compiled(_AUTHORIZATION).fullmatch(word) if "uthorization" in word.lower() else None
    return match.group("v") if match else ""


def _option_secret(word: str, following: str, tool: str) -> tuple[int, str] | None:
    """(0 for this word, 1 for the next, why) when option `word` (after program `tool`) gives a secret."""
    header = _header(word, following)
    if header is not None and _is_secret_header(header[1]):
        return header[0], "the credentials in an HTTP header"
    option, eq, value = word.partition("=")
    kind = option_kind(option)
    if kind is not None:
        if eq:
            return (0, f"the value of {option}") if _is_option_value(kind, value) else None
        if following[:1] != "-" and _is_option_value(kind, following):
            return 1, f"the word after {option}"
    short, separate = PASSWORD_OPTIONS.get(tool, ("", False))
    if short and word.startswith(short) and len(word) > len(short) and _is_value(word[len(short):]):
        return 0, f"a password attached to {tool}'s {short}"
    if short and separate and word == short and _is_value(following):
        return 1, f"the word after {tool}'s {short}"
    for user in USER_OPTIONS.get(tool, ()):
        given = value if eq and option == user else following if word == user else \
            word[len(user):] if not user.startswith("--") and word.startswith(user) else ""
        if _is_value(given.partition(":")[2]):
            return (1 if word == user else 0), f"the password in {tool}'s {user} user:password"
    return None


def option_kind(word: str) -> str | None:
    """How option `word` takes a secret: "password" (any value), "key" (a token, key or client secret: not a plain
    number), "named" (`--secret`: only a value that looks generated); None when it takes none."""
    name = word.lstrip("-").lower()
    if not word.startswith("-") or len(name) < 2 or name.startswith(_NOT_SECRET_OPTIONS):
        return None
    if name in _PASSWORD_NAMES or name.endswith(_PASSWORD_ENDS):
        return "password"
    if name.endswith(_KEY_ENDS):
        return "key"
    return "named" if name.endswith(_NAMED_END) else None


def _is_option_value(kind: str, value: str) -> bool:
    value = value[len("pass:"):] if value.startswith("pass:") else value  # openssl's `-passin pass:S`
    if kind == "named":
        return "=" not in value and _is_value(value, count=True) and is_assigned(value, loose=True)
    return _is_value(value, count=kind == "key")


def _is_value(value: str, count: bool = False) -> bool:
    """What follows a secret option is the secret, unless it is a reference or a stand-in (`$PW`, `<pw>`,
    `env:PW`), a flag's yes or no, or, where `count`, a plain number (`--token 1500`, `MAX_TOKEN=4096`)."""
    lower = value.lower()
    if not value or lower in LITERALS or lower in _FLAGS or compiled(_REFERENCE).match(value) is not None:
        return False
    return not (count and len(value) <= _COUNT_DIGITS and value.isascii() and value.isdigit())


def _header(word: str, following: str) -> tuple[int, str] | None:
    """(0 or 1, the header) when `word` gives an HTTP header: `-H 'X: v'`, `-H'X: v'`, `--header=X: v`."""
    if word in _HEADER_OPTIONS:
        return 1, following
    if word.startswith(("--header=", "--proxy-header=")):
        return 0, word.partition("=")[2]
    return (0, word[2:]) if word.startswith("-H") else None


def _is_secret_header(header: str) -> bool:
    """`Authorization: Bearer S` (or `Basic`, or bare), `X-API-Key: S`, `Private-Token: S`."""
    name, colon, value = header.partition(":")
    name, words = name.strip().lower(), value.split()
    if not colon or not words or len(words) > 2:
        return False
    if name in ("authorization", "proxy-authorization"):
        return _is_value(words[-1], count=True)
    return len(words) == 1 and compiled(SECRET_KEY).fullmatch(name) is not None and _is_value(words[0], count=True)


def is_secret_env(word: str) -> bool:
    """`PGPASSWORD=S`, `MYSQL_PWD=S` (before a command, after `env`, in `--build-arg`): a variable named for a secret,
    set. A token or key that is a plain number is a count (`MAX_TOKEN=4096`), a password never is."""
    name, eq, value = word.partition("=")
    if not eq or compiled(_ENV_NAME).fullmatch(name) is None or len(word.split()) != 1:
        return False
    upper, named = name.upper(), compiled(SECRET_KEY).fullmatch(name) is not None
    password = upper.endswith(("_PWD", "_PW")) or (named and "PASS" in upper)
    if not (named or password):
        return False
    return _is_value(value, count=not password)
