"""checkpoint, check and effect run without click (cli/plain.py) do and print what the click commands do.

Each form runs in two repositories built the same way, one through `python -m shiftgit` (the plain route
for a plain form) and one through the click command line; outputs are compared with the ids, times and
commit ids that differ between any two runs masked, and so are the ledgers written.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, make_repo

from shiftgit.cli import plain, writes

CLICK = "import sys; from shiftgit.cli.main import cli; sys.exit(cli.main(args=sys.argv[1:], prog_name='shiftgit'))"
VOLATILE = re.compile(r"\b[0-9a-f]{12,64}\b|\d{4}-\d\d-\d\dT[\d:.]+Z|\"duration_s\": [\d.e-]+|"
                      r"\"\w*(minutes|pid|start|started|host|until|holder|_at)\": [^,\n]+")


def setup(path: Path) -> Repo:
    repo = make_repo(path)
    repo.ok("init", "--hooks", "git")
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s", "--allow", "job")
    assert repo.commit("start").returncode == 0
    repo.write("calc.py", "X = 1\n")
    return repo


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Repo, Repo]:
    return setup(tmp_path / "plain" / "work"), setup(tmp_path / "click" / "work")


def masked(text: str) -> str:
    return VOLATILE.sub("<v>", re.sub(r"/[^\s\"]*/(plain|click)/work", "<repo>", text))


FORMS: list[tuple[str, ...]] = [
    ("checkpoint", "--step", "one", "--next", "two", "--done", "a", "--done", "b", "--decision", "x -- y"),
    ("checkpoint", "--step", "s", "--milestone", "--json", "--tokens", "12", "--cost", "0.5", "--turn", "3"),
    ("checkpoint", "--resolve", "nothing open", "--reason", "r"),  # a usage error, nothing written
    ("checkpoint", "--run", "nope", "--step", "s"),  # an unknown run
    ("checkpoint", "--confirm"),
    ("check", "--name", "unit", "-q", "--", sys.executable, "-c", "print('hi')"),
    ("check", "--name", "bad", "--", sys.executable, "-c", "import sys; print('out'); sys.exit(3)"),
    ("check", "--json", "-q", "--timeout", "30", "--", sys.executable, "-c", "pass"),
    ("check", "--", "--bogus"),
    ("check", "--run", "nope", "--", "true"),
    ("effect", "run", "--key", "k1", "--kind", "job", "--repeatable", "--", sys.executable, "-c", "print(7)"),
    ("effect", "run", "--key", "k2", "--kind", "job", "--json", "--reversible", "-q", "--", "true"),
    ("effect", "run", "--key", "k3", "--kind", "job", "--", "true"),  # irreversible without an approval
    ("effect", "run", "--key", "k4", "--kind", "forbidden-kind", "--repeatable", "--", "true"),
]


@pytest.mark.parametrize("args", FORMS, ids=" ".join)
def test_the_plain_route_does_what_click_does(pair: tuple[Repo, Repo], args: tuple[str, ...]) -> None:
    fast, slow = pair
    quick = fast.run([sys.executable, "-m", "shiftgit", *args])
    full = slow.run([sys.executable, "-c", CLICK, *args])
    assert "Traceback" not in quick.stderr + full.stderr
    assert (quick.returncode, masked(quick.stdout), masked(quick.stderr)) == \
        (full.returncode, masked(full.stdout), masked(full.stderr))
    assert masked(fast.read(".shift/runs/demo/ledger.json")) == masked(slow.read(".shift/runs/demo/ledger.json"))


def test_a_replayed_effect_and_a_second_checkpoint_read_the_same(pair: tuple[Repo, Repo]) -> None:
    effect = ("effect", "run", "--key", "k", "--kind", "job", "--repeatable", "--", sys.executable, "-c", "print(1)")
    runs = [effect, effect]
    runs += [("checkpoint", "--step", "a"), ("checkpoint", "--step", "b", "--resolve", "x", "--reason", "y")]
    for args in runs:
        quick = pair[0].run([sys.executable, "-m", "shiftgit", *args])
        full = pair[1].run([sys.executable, "-c", CLICK, *args])
        assert (quick.returncode, masked(quick.stdout), masked(quick.stderr)) == \
            (full.returncode, masked(full.stdout), masked(full.stderr))


def parsed(args: list[str], table: Any = writes.CHECKPOINT, runs_command: bool = False) -> dict[str, Any] | None:
    return plain.parse(table, args, runs_command)


def test_only_the_plainest_forms_are_parsed_without_click() -> None:
    values = parsed(["--step", "s", "--done", "a", "--done", "b", "--milestone", "--tokens", "4"])
    assert values is not None
    assert (values["step"], values["done"], values["milestone"], values["tokens"], values["cost"], values["run"]) \
        == ("s", ("a", "b"), True, 4, 0.0, None)
    for args in (["--help"], ["-h"], ["--step=s"], ["--step"], ["--step", "-x"], ["--step", "a", "--step", "b"],
                 ["--bogus"], ["word"], ["--tokens", "-1"], ["--tokens", "1.5"], ["--cost", "nan"], ["--cost", "inf"],
                 ["--turn", "x"], ["--", "x"]):
        assert parsed(args) is None, args
    run = writes.EFFECT_RUN
    assert parsed(["--key", "k", "--kind", "j", "--"], run, True) == {
        "key": "k", "kind": "j", "reversibility": None, "probe": None, "compensate": None, "cwd": ".",
        "timeout": None, "capture_id": None, "quiet": False, "run": None, "as_json": False, "command": ()}
    assert parsed(["--key", "k", "--kind", "j", "--reversible", "--repeatable", "--", "x", "--y"], run, True) \
        == {**parsed(["--key", "k", "--kind", "j", "--"], run, True),  # type: ignore[dict-item]
            "reversibility": "repeatable", "command": ("x", "--y")}
    for args in (["--kind", "j", "--", "x"], ["--key", "k", "--kind", "j", "x"], ["--key", "k", "--kind", "j"],
                 ["--key", "k", "--kind", "j", "--timeout", "0.01", "--", "x"]):
        assert parsed(args, run, True) is None, args


def test_the_plain_forms_never_import_click(pair: tuple[Repo, Repo]) -> None:
    code = ("import sys; from shiftgit.__main__ import main; "
            "codes = [main(a) for a in (['checkpoint', '--step', 's'], ['check', '-q', '--', 'true'], "
            "['effect', 'run', '--key', 'k', '--kind', 'job', '--repeatable', '-q', '--', 'true'])]; "
            "print(codes, 'click' in sys.modules, file=sys.stderr)")
    proc = pair[0].run([sys.executable, "-c", code])
    assert proc.stderr.strip().endswith("[0, 0, 0] False"), proc.stderr


def test_a_plain_form_run_as_the_process_defers_url_parsing_and_the_collector(pair: tuple[Repo, Repo]) -> None:
    """pathlib's urllib.parse (and its ipaddress) is a stand-in in `python -m shiftgit effect run`'s process, as in an
    agent hook's, and a use imports the real module; the cycle collector is off there (a called `main` leaves it)."""
    code = ("import atexit, runpy, sys\n"
            f"sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"  # -S: no site, no editable install
            "sys.argv = ['shiftgit', 'effect', 'run', '--key', 'u', '--kind', 'job', '--repeatable', '-q', '--',\n"
            "            'true']\n"
            "def done():\n    import gc\n"  # the process leaves from __main__._done, its exit handlers run
            "    print('ipaddress' in sys.modules, gc.isenabled(), file=sys.stderr)\n"
            "    from urllib.parse import urlsplit\n    print(urlsplit('http://h/p').netloc, file=sys.stderr)\n"
            "atexit.register(done)\n"
            "runpy.run_module('shiftgit', run_name='__main__')")
    proc = pair[0].run([sys.executable, "-S", "-c", code])  # -S: no site, which may import pathlib's urllib.parse
    assert proc.returncode == 0 and proc.stderr.strip().splitlines()[-2:] == ["False False", "h"], proc.stderr
    code = ("import gc, sys; from shiftgit.__main__ import main\n"
            "main(['effect', 'run', '--key', 'v', '--kind', 'job', '--repeatable', '-q', '--', 'true'])\n"
            "print(gc.isenabled(), file=sys.stderr)")
    assert pair[0].run([sys.executable, "-c", code]).stderr.strip().endswith("True")


def test_a_plain_form_run_as_the_process_leaves_without_tearing_down(pair: tuple[Repo, Repo]) -> None:
    """Its exit handlers run (the checkpoint's tree build is closed: no private index left), its output and exit code
    are the command's, and the interpreter's teardown (freeing what the command built, object by object) is skipped."""
    repo = pair[0]
    code = ("import atexit, sys\nfrom shiftgit.__main__ import main\n"
            "class Kept:\n    def __del__(self):\n        print('torn down', file=sys.stderr)\n"
            "kept = Kept()\natexit.register(lambda: print('exit handlers ran', file=sys.stderr))\n"
            "sys.argv = ['shiftgit', *sys.argv[1:]]\nsys.exit(main())")
    proc = repo.run([sys.executable, "-c", code, "checkpoint", "--step", "left"])
    assert proc.returncode == 0 and "checkpoint demo #1" in proc.stdout, proc.stderr
    assert proc.stderr.splitlines() == ["exit handlers ran"], proc.stderr
    assert repo.ledger("demo")["checkpoint"]["step"] == "left"
    assert not list((repo.path / ".git" / "shift").glob("index.*")), list((repo.path / ".git" / "shift").iterdir())
    proc = repo.run([sys.executable, "-c", code, "effect", "run", "--key", "k", "--kind", "job", "--repeatable", "--",
                     "sh", "-c", "echo out; exit 3"])
    assert proc.returncode == 3 and proc.stdout == "out\n", proc
    assert proc.stderr.splitlines() == ["shiftgit: effect 'k': failed (exit 3)", "exit handlers ran"], proc.stderr


def test_help_and_errors_of_parsing_stay_clicks(pair: tuple[Repo, Repo]) -> None:
    for args in (("checkpoint", "--help"), ("checkpoint", "--tokens", "-1"), ("effect", "run", "--key", "k"),
                 ("check", "--timeout", "0", "--", "true"), ("checkpoint", "--step=x")):
        quick = pair[0].run([sys.executable, "-m", "shiftgit", *args])
        full = pair[1].run([sys.executable, "-c", CLICK, *args])
        assert (quick.returncode, quick.stdout, masked(quick.stderr)) == \
            (full.returncode, full.stdout, masked(full.stderr))
    ledger = json.loads(pair[0].read(".shift/runs/demo/ledger.json"))
    assert ledger["checkpoint"]["step"] == "x"  # `--step=x` ran, through click


VERIFY_FORMS: list[tuple[str, ...]] = [
    ("verify",), ("verify", "--json"), ("verify", "demo", "--repeat", "2", "-v"), ("verify", "--chain"),
    ("verify", "--chain", "--json", "demo"), ("verify", "nope"), ("verify", "--expect-sha256", "xyz"),
    ("verify", "--repeat", "0"), ("verify", "demo", "other"),
]


def test_verify_without_click_does_what_click_does(pair: tuple[Repo, Repo]) -> None:
    for repo in pair:
        repo.ok("check", "--name", "unit", "-q", "--", sys.executable, "-c", "print('ok')")
        failing = repo.sg("check", "--name", "bad", "-q", "--", sys.executable, "-c", "raise SystemExit(2)")
        assert failing.returncode == 2
        repo.ok("checkpoint", "--step", "checked")
    for args in VERIFY_FORMS:
        quick = pair[0].run([sys.executable, "-m", "shiftgit", *args])
        full = pair[1].run([sys.executable, "-c", CLICK, *args])
        assert "Traceback" not in quick.stderr + full.stderr
        seconds = re.compile(r" in \d+\.\ds")
        assert (quick.returncode, masked(quick.stdout), seconds.sub("", masked(quick.stderr))) == \
            (full.returncode, masked(full.stdout), seconds.sub("", masked(full.stderr))), args
    assert pair[0].run([sys.executable, "-m", "shiftgit", "verify"]).returncode == 0
    assert plain.parse(writes.VERIFY, ["demo", "--json"], False, "run_id") == {
        "run_id": "demo", "repeat": 1, "pins": (), "chain": False, "verbose": False, "as_json": True}
    assert plain.parse(writes.VERIFY, ["--repeat", "101"], False, "run_id") is None
    assert plain.parse(writes.VERIFY, ["a", "b"], False, "run_id") is None
