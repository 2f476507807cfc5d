"""status, show and log without click print exactly what the click commands print; anything else goes to click."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import Repo

CLICK = "import sys; from shiftgit.cli.main import cli; sys.exit(cli.main(args=sys.argv[1:], prog_name='shiftgit'))"
FORMS = [("status",), ("status", "--json"), ("show",), ("show", "demo"), ("show", "--json"), ("show", "--markdown"),
         ("show", "demo", "--json", "--markdown"), ("log",), ("log", "--json"), ("log", "-n", "2"),
         ("log", "-n", "1", "--json"), ("show", "nope"), ("show", "BAD RUN"), ("log", "-n", "0"), ("status", "--bogus"),
         ("resume", "--no-run"), ("resume", "demo", "--no-run"), ("resume", "--json", "--no-run", "other"),
         ("resume", "nope", "--no-run"), ("resume", "--no-run", "--no-run")]


def both(repo: Repo, args: tuple[str, ...]) -> tuple[subprocess.CompletedProcess[str], ...]:
    quick = repo.run([sys.executable, "-m", "shiftgit", *args])
    full = repo.run([sys.executable, "-c", CLICK, *args])
    return quick, full


@pytest.fixture
def busy_repo(run_repo: Repo) -> Repo:
    run_repo.write("calc.py", "X = 2\n")
    run_repo.ok("checkpoint", "--step", "one \x1b[31mred\x1b[0m", "--next", "two", "--milestone")
    assert run_repo.commit("one").returncode == 0
    run_repo.ok("start", "other", "--goal", "g", "--stop-when", "s")
    return run_repo


@pytest.mark.parametrize("args", FORMS, ids=" ".join)
def test_the_click_free_path_prints_what_click_prints(busy_repo: Repo, args: tuple[str, ...]) -> None:
    quick, full = both(busy_repo, args)
    assert (quick.returncode, quick.stdout, quick.stderr) == (full.returncode, full.stdout, full.stderr)
    assert "Traceback" not in quick.stderr


def test_a_note_from_discovery_and_an_unreadable_run_read_the_same(busy_repo: Repo) -> None:
    (busy_repo.path / ".git" / "shift" / "active").unlink()  # two active runs, none picked: discovery says which
    busy_repo.ledger_path("other").write_text("{ not json")
    for args in (("show",), ("status",), ("status", "--json")):
        quick, full = both(busy_repo, args)
        assert (quick.returncode, quick.stdout, quick.stderr) == (full.returncode, full.stdout, full.stderr)
    assert both(busy_repo, ("status",))[0].returncode == 1
    quick = busy_repo.run([sys.executable, "-m", "shiftgit", "resume", "--no-run"])
    (busy_repo.path / ".git" / "shift" / "active").unlink()  # resume made its pick active: pick again
    full = busy_repo.run([sys.executable, "-c", CLICK, "resume", "--no-run"])
    assert (quick.returncode, quick.stdout, quick.stderr) == (full.returncode, full.stdout, full.stderr)
    assert quick.stderr.startswith("shiftgit: picked run 'demo'"), quick.stderr


def test_the_plain_forms_never_import_click(busy_repo: Repo) -> None:
    code = ("import sys; from shiftgit.__main__ import main; codes = [main(a) for a in (['status'], "
            "['show', '--json'], ['log', '-n', '3'], ['resume', 'demo', '--no-run'])]; "
            "print(codes, 'click' in sys.modules, file=sys.stderr)")
    proc = busy_repo.run([sys.executable, "-c", code])
    assert proc.stderr.strip().endswith("[0, 0, 0, 0] False"), proc.stderr


@pytest.mark.parametrize("args", [("status",), ("show",), ("log", "-n", "20")], ids=" ".join)
def test_the_plain_reports_load_neither_json_nor_subprocess(busy_repo: Repo, args: tuple[str, ...]) -> None:
    """What a plain `status`, `show` or `log -n N` process (`python -m shiftgit`) has imported when it leaves: json
    (with re, enum, functools) and subprocess (with signal, threading, selectors) are a start-up's worth of imports
    these reports do without (rawjson reads, rawgit starts git); `re` may be there as __main__'s stand-in only.
    Against what the interpreter had loaded before (site may load some of them)."""
    code = ("import sys\nbefore = set(sys.modules)\nimport shiftgit.__main__ as entry\n"
            "def leave(code):\n"
            "    real = [n for n in ('json', 'subprocess', 're', 'urllib.parse', 'signal')\n"
            "            if n not in before and type(sys.modules.get(n)).__name__ == 'module']\n"
            "    print('loaded', real, code, file=sys.stderr)\n"
            "    sys.exit(code)\n"
            "entry._leave = leave\nentry.main()\n")
    proc = busy_repo.run([sys.executable, "-c", code, *args])
    assert proc.stderr.strip().endswith("loaded [] 0"), proc.stderr[-2000:]
