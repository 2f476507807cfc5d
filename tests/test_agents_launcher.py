"""The agent hook command `init --agent` writes, run as the agent runs it: through a shell, in the project, JSON on
stdin. It starts this clone's launcher (`<git-common-dir>/shift/agent-hook`: the interpreter that installed it,
without site) with no `shiftgit` on PATH, from a linked worktree too; without the launcher it runs `shiftgit` from
PATH. `init` replaces an older shiftgit's command and keeps a command the user wrote."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import Repo

from shiftgit.agents.launcher import command

BARE_PATH = "/usr/bin:/bin"  # git and sh, no shiftgit
BIN = str(Path(sys.executable).parent)
MARKER = "import os\nopen(os.environ['SITE_MARKER'], 'a').write('site ran\\n')\n"


def configured(repo: Repo, event: str = "Stop") -> str:
    handlers = json.loads(repo.read(".claude/settings.json"))["hooks"][event]
    return str(handlers[0]["hooks"][0]["command"])


def stop(repo: Repo, cwd: Path, path: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    body = json.dumps({"session_id": "s1", "cwd": str(cwd), "hook_event_name": "Stop", "stop_hook_active": False})
    proc = Repo(cwd).run(["sh", "-c", configured(repo)], env={"PATH": path, **(env or {})}, input=body)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def edited(repo: Repo) -> Repo:
    repo.ok("init", "--hooks", "none", "--agent", "claude")
    repo.ok("start", "demo", "--goal", "g", "--stop-when", "s")
    repo.write("calc.py", repo.read("calc.py") + "# edited\n")
    return repo


def test_the_hook_runs_this_clones_launcher_without_shiftgit_on_path_and_without_site(repo: Repo,
                                                                                       tmp_path: Path) -> None:
    edited(repo)
    launcher = repo.path / ".git" / "shift" / "agent-hook"
    assert os.access(launcher, os.X_OK) and f"python={sys.executable}\n" in launcher.read_text()
    assert configured(repo) == command("claude", "stop") and ".git/shift/agent-hook" not in repo.git("status", "-s")
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text(MARKER)  # imported by site, at every start-up that runs it
    marker = tmp_path / "marker"
    env = {"PYTHONPATH": os.pathsep.join([str(site_dir), os.environ.get("PYTHONPATH", "")]),
           "SITE_MARKER": str(marker)}

    code, out, _ = stop(repo, repo.path, BARE_PATH, env)

    assert code == 0 and json.loads(out)["decision"] == "block" and "calc.py" in json.loads(out)["reason"]
    assert not marker.exists(), "the launcher starts Python without site"
    repo.run([sys.executable, "-c", "pass"], env=env)
    assert marker.exists(), "the marker shows when site runs (the check above can fail)"


def test_without_the_launcher_the_hook_runs_shiftgit_from_path(repo: Repo) -> None:
    edited(repo)
    os.remove(repo.path / ".git" / "shift" / "agent-hook")
    code, out, _ = stop(repo, repo.path, f"{BIN}{os.pathsep}{BARE_PATH}")
    assert code == 0 and json.loads(out)["decision"] == "block"
    code, _, err = stop(repo, repo.path, BARE_PATH)
    assert code == 127 and "shiftgit" in err  # nothing to run it with: the agent shows the error


def test_a_linked_worktree_and_a_subdirectory_find_the_launcher(repo: Repo, tmp_path: Path) -> None:
    edited(repo)
    repo.git("add", "-A")
    repo.git("commit", "-qm", "wired")
    other = tmp_path / "other"
    repo.git("worktree", "add", "-q", "-b", "side", str(other))
    code, _, err = stop(repo, other / "tests", BARE_PATH)  # 127 had the launcher not been found (no PATH)
    assert code == 0, err
    repo.write("calc.py", repo.read("calc.py") + "# edited again\n")
    code, out, _ = stop(repo, repo.path / "tests", BARE_PATH)
    assert code == 0 and json.loads(out)["decision"] == "block"


def test_init_replaces_an_older_shiftgit_command_and_keeps_the_users_own(repo: Repo) -> None:
    mine = "/opt/python3 -m shiftgit hook claude session-start"
    repo.write(".claude/settings.json", json.dumps({"hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "shiftgit hook claude stop", "timeout": 30}]}],
        "SessionStart": [{"hooks": [{"type": "command", "command": mine, "timeout": 30}]}]}}))

    out = repo.ok("init", "--hooks", "none", "--agent", "claude").stdout

    assert "updated the command of hooks Stop in .claude/settings.json" in out
    hooks = json.loads(repo.read(".claude/settings.json"))["hooks"]
    assert hooks["Stop"] == [{"hooks": [{"type": "command", "command": command("claude", "stop"), "timeout": 30}]}]
    assert hooks["SessionStart"] == [{"hooks": [{"type": "command", "command": mine, "timeout": 30}]}]
    assert [g["hooks"][0]["command"] for g in hooks["PreCompact"]] == [command("claude", "pre-compact")]
    first = repo.read(".claude/settings.json")
    assert "hooks already in" in repo.ok("init", "--hooks", "none", "--agent", "claude").stdout
    assert repo.read(".claude/settings.json") == first


def test_the_end_of_turn_hook_asks_git_once_whether_head_carries_the_checkpoint(run_repo: Repo,
                                                                                 tmp_path: Path) -> None:
    run_repo.ok("checkpoint", "--step", "one")
    assert run_repo.commit("the handoff commit").returncode == 0  # HEAD carries checkpoint #1; its parent is the base
    body = json.dumps({"session_id": "s1", "cwd": str(run_repo.path), "stop_hook_active": False})
    batches = []
    for n in range(3):
        trace = tmp_path / f"trace{n}"
        proc = run_repo.sg("hook", "claude", "stop", input=body, env={"GIT_TRACE": str(trace)})
        assert proc.returncode == 0 and proc.stdout == "", proc.stdout + proc.stderr  # fresh: nothing to say
        batches.append(sum("cat-file --batch" in line for line in trace.read_text().splitlines()))
    assert batches == [1, 0, 0]
    run_repo.write("calc.py", run_repo.read("calc.py") + "# edited\n")
    proc = run_repo.sg("hook", "claude", "stop", input=body)
    assert json.loads(proc.stdout)["decision"] == "block"
    diffs = []  # held again on the same edits: the same two trees, whose diff the hold remembers
    for n, edit in enumerate(["", "", "# more\n"]):
        run_repo.write("calc.py", run_repo.read("calc.py") + edit)
        trace = tmp_path / f"held{n}"
        proc = run_repo.sg("hook", "claude", "stop", input=body, env={"GIT_TRACE": str(trace)})
        answer = json.loads(proc.stdout)  # a note (held already), then a hold again (a new edit)
        assert "calc.py" in answer[["systemMessage", "systemMessage", "reason"][n]], answer
        # a new edit: one diff (diff-index in the git the hook starts first, worktreecache.CHAIN, or diff-tree)
        diffs.append(sum(" diff-tree " in line or " diff-index " in line for line in trace.read_text().splitlines()))
    assert diffs == [0, 0, 1]


def test_copilots_flat_handlers_are_upgraded_too(repo: Repo) -> None:
    old = {"type": "command", "bash": "shiftgit hook copilot agent-stop", "timeoutSec": 30}
    repo.write(".github/hooks/shiftgit.json", json.dumps({"version": 1, "hooks": {"agentStop": [old]}}))
    out = repo.ok("init", "--hooks", "none", "--agent", "copilot").stdout
    assert "updated the command of hooks agentStop" in out
    hooks = json.loads(repo.read(".github/hooks/shiftgit.json"))["hooks"]
    assert hooks["agentStop"] == [{**old, "bash": command("copilot", "agent-stop")}]


DEFERRED = """
import sys
from shiftgit.__main__ import _defer_url_parsing
_defer_url_parsing()
import pathlib
print("ipaddress" in sys.modules, type(sys.modules["urllib.parse"]).__name__)
print(pathlib.Path("/a b").as_uri())
import urllib.parse
from urllib.parse import quote
print(urllib.parse.urlsplit("http://host/p").netloc, quote("a b"), sys.modules["urllib.parse"] is urllib.parse,
      type(urllib.parse).__name__)
"""


def test_an_agent_hook_defers_url_parsing_until_something_uses_it() -> None:
    """pathlib's `urllib.parse` (and its ipaddress) is a stand-in in an agent hook's process: nothing is imported
    for it until a use, and every use then gets the real module."""
    import subprocess

    proc = subprocess.run([sys.executable, "-S", "-c", DEFERRED], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.stdout.splitlines() == ["False _DeferredModule", "file:///a%20b", "host a%20b True module"]


DEFERRED_RE = """
import sys
from shiftgit.__main__ import _defer_url_parsing
_defer_url_parsing()
import fnmatch, pathlib
print("re" in sys.modules, type(sys.modules["re"]).__name__, "enum" in sys.modules)
print(pathlib.PurePath("/a/b.py").match("*.py"), fnmatch.fnmatch("b.txt", "*.py"))
import re._parser
from re import sub
print(sub("a", "b", "aa"), isinstance(re.compile("x"), re.Pattern), type(sys.modules["re"]).__name__)
"""


def test_an_agent_hook_defers_re_until_something_uses_it() -> None:
    """pathlib's and fnmatch's `re` (with enum) is a stand-in too: a glob, a submodule or a name imported from it then
    gets the real module."""
    import subprocess

    proc = subprocess.run([sys.executable, "-S", "-c", DEFERRED_RE], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.stdout.splitlines() == ["True _DeferredModule False", "True False", "bb True module"]


PRE_COMPACT = """
import gc, os, sys
import shiftgit.__main__ as main

runs = []
def counted(phase, info):
    if phase == "start" and "shiftgit.agents.hooks" in sys.modules:
        runs.append(phase)

gc.callbacks.append(counted)

def leave(code):
    loaded = sorted(m for m in ("shiftgit.agents.published", "shiftgit.git.ledgerref") if m in sys.modules)
    print(gc.isenabled(), len(runs), loaded, file=sys.stderr)
    print(*(type(sys.modules.get(m)).__name__ for m in ("functools", "fnmatch", "operator", "reprlib", "types")),
          *(m for m in ("shiftgit.packs", "shiftgit.staging", "_sha256") if m in sys.modules), file=sys.stderr)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(code)

main._leave = leave
main._main(["hook", "claude", "pre-compact"], True)
"""


def test_a_pre_compact_hook_runs_no_cycle_collector_and_loads_no_session_start_module(run_repo: Repo,
                                                                                     tmp_path: Path) -> None:
    """The conversation is saved by a process whose modules and transcript entries start no garbage collection once
    the hook's code loads, and that loads none of what only a session start or end needs (who else published the
    run)."""
    import subprocess

    import transcript_fixtures as tf

    transcript = tmp_path / "t.jsonl"
    tf.claude(transcript, turns=40)
    body = json.dumps({"session_id": "s1", "cwd": str(run_repo.path), "hook_event_name": "PreCompact",
                       "transcript_path": str(transcript), "trigger": "auto"})
    proc = subprocess.run([sys.executable, "-S", "-c", PRE_COMPACT], cwd=run_repo.path, input=body, text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})

    assert proc.returncode == 0 and "saved the compacted conversation" in proc.stdout, proc.stderr
    deferred = "_DeferredModule _DeferredModule _DeferredModule NoneType NoneType"
    if sys.version_info >= (3, 12):  # its pathlib imports functools, fnmatch and re itself: the real ones
        deferred = "module module module NoneType NoneType"
    assert proc.stderr.splitlines() == ["False 0 []", deferred]
    assert run_repo.git("rev-parse", "-q", "--verify", "refs/shift/context/demo", check=False).strip()


DEFERRED_COLLECTIONS = """
import sys
from shiftgit.__main__ import _defer_collections, _defer_url_parsing
_defer_url_parsing()  # as an agent hook's process: re too
_defer_collections()
import functools, pathlib
from collections.abc import Mapping
print(type(sys.modules["collections"]).__name__, Mapping is __import__("_collections_abc").Mapping)
cached = functools.lru_cache()(lambda x: x * 2)
cached(2), cached(2)
info = cached.cache_info()
print(info.hits, info.misses, info._fields, pathlib.PurePath("a/b").name)
import collections, collections.abc
print(collections.OrderedDict(a=1)["a"], collections.abc.Mapping is Mapping, type(sys.modules["collections"]).__name__,
      collections.namedtuple("P", "x y")(1, 2).y)
print(type(sys.modules["ntpath"]).__name__, type(sys.modules["warnings"]).__name__, "nt" in sys.modules)
import ntpath
print(pathlib.PureWindowsPath("c:/a/b").parts, ntpath.join("a", "b"), type(sys.modules["ntpath"]).__name__)
import warnings
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    warnings.warn("w")
print(len(seen), type(sys.modules["warnings"]).__name__)
"""


DEFERRED_PATHLIB = """
import sys
from shiftgit.__main__ import _defer_collections, _defer_url_parsing, _import_pathlib
_defer_url_parsing()  # as an agent hook's process
_defer_collections()
_import_pathlib()
import pathlib
print(*(type(sys.modules[m]).__name__ for m in ("functools", "fnmatch", "operator")), "types" in sys.modules)
from operator import attrgetter
import _operator
print(attrgetter is _operator.attrgetter, pathlib.PurePath("a/b.py").name, pathlib.PurePath("a/b.py").match("*.py"))
folder = pathlib.Path(sys.argv[1])
(folder / "x.txt").write_text("x")
print(sorted(p.name for p in folder.glob("*.txt")), type(sys.modules["functools"]).__name__)
import functools
cached = functools.lru_cache(maxsize=4)(lambda x: x + 1)
print(cached(1), cached(1), cached.cache_info().hits, pathlib._make_selector(("x",), pathlib._posix_flavour)
      is pathlib._make_selector(("x",), pathlib._posix_flavour))
import operator, fnmatch
print(operator.add(1, 2), fnmatch.fnmatch("a.py", "*.py"), type(sys.modules["operator"]).__name__)
"""


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="pathlib 3.12+ imports functools and fnmatch itself, and has "
                    "no _make_selector/_posix_flavour: nothing is deferred there")
def test_an_agent_hook_imports_pathlib_without_what_only_globbing_needs(tmp_path: Path) -> None:
    """pathlib's functools (with reprlib and types), fnmatch and operator are stand-ins until something uses them: its
    glob selectors' cache is then the real lru_cache, made on the first glob; any later use gets the real modules."""
    import subprocess

    proc = subprocess.run([sys.executable, "-S", "-c", DEFERRED_PATHLIB, str(tmp_path)], capture_output=True, text=True,
                          check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.stdout.splitlines() == ["_DeferredModule _DeferredModule _DeferredModule False", "True b.py True",
                                        "['x.txt'] module", "2 2 1 True", "3 True module"]


def test_an_agent_hook_defers_the_collections_package_until_something_uses_it() -> None:
    """functools (pathlib's) takes its namedtuple from a stand-in, `collections.abc` is `_collections_abc`: no
    collections package (~1.5 ms) until a use, which then gets the real one with its `abc`; pathlib's ntpath and
    warnings load when a Windows path or a warning needs them."""
    import subprocess

    proc = subprocess.run([sys.executable, "-S", "-c", DEFERRED_COLLECTIONS], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.stdout.splitlines() == ["_DeferredModule True", "1 1 ('hits', 'misses', 'maxsize', 'currsize') b",
                                        "1 True module 2", "_DeferredModule _DeferredModule False",
                                        "('c:\\\\', 'a', 'b') a\\b module", "1 module"]
