"""`shiftgit demo`: a self-contained tour in a temporary repository, using the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b  # bug\n"
# The project's tests use the standard library only: the tour runs wherever shiftgit is installed.
TESTS = ("import unittest\n\nfrom calc import add, sub\n\n\nclass CalcTest(unittest.TestCase):\n"
         "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
         "    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n")
UNITTEST = [sys.executable, "-m", "unittest", "discover", "-s", "tests"]


class Tour:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = dict(os.environ)
        self.env.pop("SHIFT_RUN", None)
        for who in ("AUTHOR", "COMMITTER"):
            self.env.setdefault(f"GIT_{who}_NAME", "shiftgit demo")
            self.env.setdefault(f"GIT_{who}_EMAIL", "demo@shiftgit.invalid")

    def say(self, text: str) -> None:
        print(f"\n## {text}", flush=True)

    def sh(self, *argv: str, show: bool = True, ok: tuple[int, ...] = (0,), lines: int = 25,
           head: int = 0) -> int:
        shown = " ".join(argv).replace(f"{sys.executable} -m shiftgit", "shiftgit")
        shown = shown.replace(sys.executable, "python")
        if show:
            print(f"$ {shown}", flush=True)
        proc = subprocess.run(argv, cwd=self.root, env=self.env, text=True, capture_output=True)
        out = (proc.stdout + proc.stderr).rstrip()
        if show and out:
            kept = out.splitlines()[:head] if head else out.splitlines()[-lines:]
            print("\n".join("  " + line for line in kept), flush=True)
        if proc.returncode not in ok:
            raise SystemExit(f"demo step failed ({proc.returncode}): {shown}")
        return proc.returncode

    def sg(self, *args: str, ok: tuple[int, ...] = (0,), lines: int = 25, head: int = 0) -> int:
        return self.sh(sys.executable, "-m", "shiftgit", *args, ok=ok, lines=lines, head=head)

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def run(directory: str | None) -> int:
    if directory:
        root = Path(directory).resolve()
        if root.exists() and any(root.iterdir()):
            print(f"shiftgit: {root} is not empty; give a new or empty directory", file=sys.stderr)
            return 2
        root.mkdir(parents=True, exist_ok=True)
        return tour(root)
    with tempfile.TemporaryDirectory(prefix="shiftgit-demo-") as tmp:
        return tour(Path(tmp))


def tour(root: Path) -> int:
    t = Tour(root)
    print(f"shiftgit tour in {root}")
    t.say("A small project with a bug in sub()")
    t.sh("git", "init", "-q", "-b", "main", show=False)
    t.write("calc.py", CALC)
    t.write("tests/test_calc.py", TESTS)
    t.write(".gitignore", "__pycache__/\n")
    t.sh("git", "add", "-A", show=False)
    t.sh("git", "commit", "-q", "-m", "initial", show=False)
    t.say("Once per repo: .shift/, repo-local git config, hooks")
    t.sg("init", "--hooks", "git")
    t.sh("git", "add", "-A")
    t.sh("git", "commit", "-q", "-m", "set up shiftgit")
    t.say("An agent starts a run with a contract")
    t.sg("start", "fix-sub", "--goal", "make calc correct", "--stop-when", "all calc tests pass",
         "--constraint", "never edit tests/ to make them pass")
    t.sh("git", "add", "-A")
    t.sh("git", "commit", "-q", "-m", "start fix-sub")
    t.say("check runs a command and keeps its real result (exit code passes through)")
    t.sg("check", "--name", "unit", "-q", "--", *UNITTEST, ok=(1,))
    t.say("checkpoint records what git sees, the evidence and the next action")
    t.write("calc.py", CALC.replace("return a + b  # bug", "return a - b"))
    t.sg("check", "--name", "unit", "-q", "--", *UNITTEST)
    t.sg("checkpoint", "--step", "fixed sub()", "--next", "add a test for negative numbers",
         "--done-when", "test_sub_negative passes")
    t.say("Commit the change with its ledger")
    t.sh("git", "add", "-A")
    t.sh("git", "commit", "-q", "-m", "fix sub")
    t.say("The commit carries its handoff as a git note: plain `git log` shows it")
    t.sh("git", "log", "-1")
    t.say("An edit the ledger does not know: the commit gate refuses it and names the fix")
    fixed = CALC.replace("return a + b  # bug", "return a - b") + "\n\ndef neg(a):\n    return -a\n"
    t.write("calc.py", fixed)
    t.sh("git", "add", "-A")
    t.sh("git", "commit", "-q", "-m", "sneak in neg()", ok=(1,))
    t.sg("checkpoint", "--step", "added neg()", "--next", "add a test for negative numbers",
         "--done-when", "test_sub_negative passes")
    t.sh("git", "add", "-A")
    t.sh("git", "commit", "-q", "-m", "add neg")
    t.sg("log")
    t.say("The session dies here. A fresh process reads only what git holds:")
    t.sg("status")
    t.say("resume: a new process inspects, reruns the evidence, decides and briefs (exit 0 resume)")
    t.sg("resume", lines=60)
    t.say("verify: rerun the recorded checks and compare them with the record")
    t.sg("verify")
    t.say("A half-written edit after the checkpoint: resume proposes rollback (exit 3)")
    t.write("calc.py", fixed + "\ndef half_written(\n")
    t.sg("resume", "--no-run", ok=(3,), head=2)
    t.say("rollback restores the checkpoint; what it replaced is kept under refs/shift/rescue/")
    t.sg("rollback", "--yes")
    t.sg("resume", "--no-run", head=2)
    print("\ntour done.")
    return 0
