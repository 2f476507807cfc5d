"""`shiftgit doctor`: is everything that makes shiftgit work in this repository in place, and if not, why.

An agent whose hook does not fire runs without its briefing, and nothing says so. The doctor checks,
for the repository and each agent wired here: shiftgit initialised, the git hooks installed and current
and their interpreter alive, notes config, the notes fetch refspec of each remote and the publish
remote; each agent's hooks installed and current, `shiftgit` on the PATH its hooks run with (and on a
login shell's PATH for Codex), the agent's trust settings (agents/trust.py), the hook log's lines about
agent versions shiftgit does not know; and it times each wired agent's hooks once, in a scratch
repository (the user's ledger is never touched). Every finding carries the command that fixes it.
Nothing here runs a recorded command.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from shiftgit import rawjson
from shiftgit.agents import install, launcher, trust, wiring
from shiftgit.agents.trust import Check
from shiftgit.agents.versions import UNKNOWN_MARK
from shiftgit.procs import module_argv
from shiftgit.repo import Repo

LOGIN_TIMEOUT = 10.0
HOOK_TIMEOUT = 30.0
LOG_SHOWN = 3
LAUNCHED = (*install.JSON_AGENTS, "opencode")  # the agents whose hooks run this clone's launcher (agents/launcher.py)
TIMED = {"claude": ("session-start", "stop"), "codex": ("session-start", "stop"),
         "gemini": ("session-start", "after-agent"), "qwen": ("session-start", "stop"),
         "copilot": ("session-start", "agent-stop"), "opencode": ("session-start", "session-idle")}


def run(repo: Repo, *, environ: dict[str, str] | None = None, timings: bool = True) -> dict[str, Any]:
    """Every check, and the hooks' timings; `ok` is False when any check failed."""
    env = dict(os.environ if environ is None else environ)
    checks = repo_checks(repo)
    agents = wired(repo.root)
    if any(agent in LAUNCHED for agent in agents):
        checks.append(launcher_check(repo, [a for a in agents if a in LAUNCHED]))
    for agent in agents:
        checks += agent_checks(repo, agent, env)
    checks += log_checks(repo)
    times = time_hooks(agents, env) if timings and agents else []
    checks += [Check("hook timing", False, f"{t['agent']} {t['event']}: {t['problem']}",
                     f"shiftgit hook {t['agent']} {t['event']} < payload.json  # see the error, then fix it",
                     t["agent"]) for t in times if t.get("problem")]
    return {"ok": all(c.ok for c in checks), "agents": agents, "checks": [c.to_dict() for c in checks],
            "findings": [c.to_dict() for c in checks if not c.ok], "timings": times}


def wired(root: Path) -> list[str]:
    """The agents whose config in this work tree mentions shiftgit."""
    found = []
    for agent, config in install.AGENTS.items():
        text = _read(root / config.path)
        if text is not None and f"shiftgit hook {agent} " in text:
            found.append(agent)
    if _read(root / wiring.OPENCODE_PLUGIN) is not None:
        found.append("opencode")
    aider = _read(root / wiring.AIDER_CONF)
    if aider is not None and "git-commit-verify" in aider:
        found.append("aider")
    return found


def render(report: dict[str, Any]) -> list[str]:
    """Human lines: each finding with its fix first, then what is fine, then the hook timings."""
    from shiftgit import textsafe

    def who(check: dict[str, Any]) -> str:
        return f"{check['agent']}: " if check["agent"] else ""

    bad = [c for c in report["checks"] if not c["ok"]]
    lines = [f"FAIL {who(c)}{c['check']}: {textsafe.visible(c['detail'])}\n     fix: {c['fix']}" for c in bad]
    lines += [f"ok   {who(c)}{c['check']}: {textsafe.visible(c['detail'])}" for c in report["checks"] if c["ok"]]
    for t in report["timings"]:
        cost = f"{t['ms']:.0f} ms" + (f" ({t['startups']} Python start-ups)" if t["startups"] else "")
        lines.append(f"time {t['agent']} {t['event']}: {cost}")
    wired = ", ".join(report["agents"]) or "none"
    lines.append(f"agents wired here: {wired}; " + (f"{len(bad)} problem(s) found" if bad else "all is well"))
    return lines


# -- the repository ---------------------------------------------------------------------------

def repo_checks(repo: Repo) -> list[Check]:
    from shiftgit.git import install as git_install
    from shiftgit.git.setup import NOTES_CONFIG
    from shiftgit.git.sync import notes_refspec

    if not (repo.root / ".shift" / "config.json").is_file():
        return [Check("initialised", False, "no .shift/ here: shiftgit is not set up in this repository",
                      "shiftgit init")]
    checks = [Check("initialised", True, ".shift/config.json")]
    checks.append(git_hooks(repo, git_install))
    missing = [key for key, values in NOTES_CONFIG
               if not set(values) <= set(repo.git("config", "--local", "--get-all", key, check=False).split())]
    checks.append(Check("notes config", not missing, f"missing: {', '.join(missing)}" if missing else
                        "notes shown in git log and carried by rebase/amend", "shiftgit init" if missing else None))
    remotes = repo.git("remote", check=False).split()
    for remote in remotes:
        specs = repo.git("config", "--local", "--get-all", f"remote.{remote}.fetch", check=False).splitlines()
        ok = notes_refspec(remote) in specs
        checks.append(Check("notes refspec", ok, f"{remote}: " + ("fetches handoff notes" if ok else
                            "a fetch does not bring the handoff notes"), None if ok else "shiftgit init"))
    checks.append(publish_check(repo, remotes))
    return checks


def git_hooks(repo: Repo, git_install: Any) -> Check:
    folder = git_install.hooks_dir(repo)
    text = _read(repo.root / git_install.PRE_COMMIT_CONFIG)
    problem = git_install.config_problem(text) if text is not None else None
    if not problem and _has_pre_commit_entries(repo.root, git_install):
        ok = (folder / "pre-commit").is_file()
        return Check("git hooks", ok, "pre-commit framework" + ("" if ok else ": `pre-commit install` not run"),
                     None if ok else git_install.INSTALL_HINT)
    stale, gone, later = [], [], []
    for hook in git_install.HOOKS:
        text = _read(folder / hook)
        if hook in git_install.RUN_HOOKS and not git_install.is_ours(folder / hook):
            later.append(hook)  # `init` leaves them out while no run is active: the pre-commit shim adds them
            continue
        if text is None or git_install.MARK.decode() not in text:
            stale.append(hook)
            continue
        python = git_install.recorded_python(text) or ""
        if not os.access(python, os.X_OK):
            gone.append(python)
        elif text != git_install.shim(hook, python):
            stale.append(hook)
    if problem and (gone or stale):  # no plain hooks, and pre-commit itself would refuse to run
        return Check("git hooks", False, f"{git_install.PRE_COMMIT_CONFIG}: {problem}",
                     f"make `repos:` in {git_install.PRE_COMMIT_CONFIG} a list; shiftgit init --hooks pre-commit")
    if gone:
        return Check("git hooks", False, f"the interpreter the git hooks call is gone: {gone[0]}",
                     "shiftgit init --hooks git")
    if stale:
        return Check("git hooks", False, f"missing or out of date in {folder}: {', '.join(stale)} (the commit gate "
                     "does not run as it should)", "shiftgit init --hooks git")
    current = [hook for hook in git_install.HOOKS if hook not in later]
    return Check("git hooks", True, f"{', '.join(current)} current in {folder}"
                 + (f" ({', '.join(later)}: when a run starts)" if later else ""))


def _has_pre_commit_entries(root: Path, git_install: Any) -> bool:
    text = _read(root / git_install.PRE_COMMIT_CONFIG)
    return text is not None and git_install._has_our_hooks(text)


def publish_check(repo: Repo, remotes: list[str]) -> Check:
    try:
        config = rawjson.loads((repo.root / ".shift" / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    remote = config.get("publish") if isinstance(config, dict) else None
    if not remotes:
        return Check("publish remote", True, "no git remote: checkpoints stay on this machine")
    if not isinstance(remote, str) or not remote:
        first = "origin" if "origin" in remotes else remotes[0]
        return Check("publish remote", False, "checkpoints are not pushed anywhere: another machine cannot take "
                     "over", f"shiftgit init --publish {first}")
    if remote not in remotes:
        return Check("publish remote", False, f"\"publish\" names {remote!r}, which is not a remote here",
                     f"git remote add {remote} URL  # or: shiftgit init --publish {remotes[0]}")
    return Check("publish remote", True, f"each checkpoint is pushed to {remote}")


# -- the agents ---------------------------------------------------------------------------------

def launcher_check(repo: Repo, agents: list[str]) -> Check:
    """This clone's agent hook launcher: there, current, its interpreter alive. Without it the hooks run `shiftgit`
    from the agent's PATH (site and every .pth file at each hook), or fail when it is not there."""
    target = launcher.path(repo)
    fix = "shiftgit init " + " ".join(f"--agent {a}" for a in agents)
    text = _read(target)
    python = launcher.interpreter(text) if text is not None else None
    if text is None or python is None:
        return Check("agent hook launcher", False, f"{target} is missing: the agents' hooks run `shiftgit` from their "
                     "PATH (slower, and nothing when it is not there)", fix)
    if not os.access(python, os.X_OK):
        return Check("agent hook launcher", False, f"{target} calls {python}, which is gone", fix)
    if text != launcher.text(python):
        return Check("agent hook launcher", False, f"{target} is not this shiftgit's launcher", fix)
    return Check("agent hook launcher", True, f"{target} runs {python} without site")


def agent_checks(repo: Repo, agent: str, env: dict[str, str]) -> list[Check]:
    checks = [hooks_current(repo.root, agent)]
    if agent in LAUNCHED and os.access(launcher.path(repo), os.X_OK):  # the hooks need no PATH
        if agent == "codex":  # the model's commands do: they run from a login shell's
            checks.append(login_shell(env, shutil.which("shiftgit", path=env.get("PATH")) or sys.executable))
    elif agent != "aider":
        checks += path_checks(agent, env)
    checks += trust.checks(repo.root, agent, env)
    return [c._replace(agent=agent) for c in checks]


def hooks_current(root: Path, agent: str) -> Check:
    fix = f"shiftgit init --agent {agent}"
    if agent == "opencode":
        ok = _read(root / wiring.OPENCODE_PLUGIN) == wiring.PLUGIN
        return Check("hooks", ok, f"{wiring.OPENCODE_PLUGIN} " + ("current" if ok else "is not this shiftgit's plugin"),
                     None if ok else fix)
    if agent == "aider":
        ok = wiring.aider_verifies(_read(root / wiring.AIDER_CONF))
        return Check("hooks", ok, "git-commit-verify is on: Aider's commits meet the commit gate" if ok else
                     f"git-commit-verify is not on in {wiring.AIDER_CONF}: Aider commits past the gate",
                     None if ok else fix)
    config = install.AGENTS[agent]
    try:
        document = install.read_config(root / config.path, config.path)
        retired = install.retire_hooks(document, agent, config)
        older = install.upgrade_hooks(document, agent, config)
        missing = install.merge_hooks(document, agent, config) + install.merge_defaults(document, config)
    except Exception as exc:  # a broken config: say so, whatever it is
        return Check("hooks", False, str(exc), f"fix {config.path}, then run {fix}")
    if missing or retired or older:
        what = [f"missing {', '.join(missing)}"] if missing else []
        what += [f"no longer wired: {', '.join(retired)}"] if retired else []
        what += [f"an older shiftgit's command (`shiftgit` from PATH): {', '.join(older)}"] if older else []
        return Check("hooks", False, f"{config.path}: {'; '.join(what)}", fix)
    return Check("hooks", True, f"{config.path}: {', '.join(config.events)}")


def path_checks(agent: str, env: dict[str, str]) -> list[Check]:
    """`shiftgit` on the PATH the agent runs its hooks with, its interpreter alive; Codex: a login shell's PATH."""
    found = shutil.which("shiftgit", path=env.get("PATH"))
    if found is None:
        return [Check("shiftgit on PATH", False, "the agent runs `shiftgit hook ...` and `shiftgit` is not on PATH "
                      "here: its hooks fail without a word", f"export PATH=\"{Path(sys.executable).parent}:$PATH\"  "
                      "# or install shiftgit with pipx")]
    checks = [Check("shiftgit on PATH", True, found)]
    python = _shebang(Path(found))
    if python is not None and not os.access(python, os.X_OK):
        checks.append(Check("hook interpreter", False, f"{found} calls {python}, which is gone",
                            "pip install --force-reinstall shiftgit  # in the environment you use"))
    elif python is not None:
        checks.append(Check("hook interpreter", True, python))
    if agent == "codex":
        checks.append(login_shell(env, found))
    return checks


def login_shell(env: dict[str, str], found: str) -> Check:
    try:
        proc = subprocess.run(["bash", "-lc", "command -v shiftgit"], env=env, capture_output=True, text=True,
                              timeout=LOGIN_TIMEOUT, stdin=subprocess.DEVNULL)
        seen = proc.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        seen = ""
    if seen:
        return Check("login shell PATH", True, f"`bash -lc` finds {seen}")
    return Check("login shell PATH", False, "Codex runs the model's commands in `bash -lc`, whose PATH has no "
                 "shiftgit (its messages name `python -m shiftgit` instead)",
                 f"echo 'export PATH=\"{Path(found).parent}:$PATH\"' >> ~/.profile")


def _shebang(script: Path) -> str | None:
    try:
        first = script.read_bytes()[:512].split(b"\n", 1)[0].decode("utf-8", "replace")
    except OSError:
        return None
    if not first.startswith("#!") or "env " in first:
        return None
    return first[2:].strip().split(" ", 1)[0] or None


# -- the hook log -------------------------------------------------------------------------------

def log_checks(repo: Repo) -> list[Check]:
    text = _read(repo.private("hooks.log")) or ""
    lines = [line for line in text.splitlines() if UNKNOWN_MARK in line]
    if not lines:
        return []
    shown = list(dict.fromkeys(line.split(": ", 1)[-1] for line in lines))[-LOG_SHOWN:]
    return [Check("agent version", False, f"the hook log says: {line}", "pip install -U shiftgit") for line in shown]


# -- timing ---------------------------------------------------------------------------------------

def time_hooks(agents: list[str], env: dict[str, str]) -> list[dict[str, Any]]:
    """Each wired agent's session-start and end-of-turn hook, run once in a scratch repository with a run,
    in milliseconds and in Python start-ups (`python -c pass` measured here, now)."""
    shiftgit = module_argv("shiftgit")  # the hooks themselves run as the agents' configs run them
    with tempfile.TemporaryDirectory(prefix="shiftgit-doctor-") as scratch:
        root = Path(scratch)
        quiet = {**env, "GIT_AUTHOR_NAME": "doctor", "GIT_AUTHOR_EMAIL": "doctor@localhost",
                 "GIT_COMMITTER_NAME": "doctor", "GIT_COMMITTER_EMAIL": "doctor@localhost"}
        for argv in (["git", "init", "-q"], [*shiftgit, "init", "--hooks", "none"],
                     [*shiftgit, "start", "doctor", "--goal", "time the hooks", "--stop-when", "timed"]):
            subprocess.run(argv, cwd=root, env=quiet, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        launcher.install(Repo.open(root))
        startup = min(_elapsed([sys.executable, "-c", "pass"], root, quiet, "")[0] for _ in range(3))
        times = []
        for agent in agents:
            for event in TIMED.get(agent, ()):
                body = json.dumps({"session_id": "doctor", "cwd": str(root), "stop_hook_active": True})
                ms, problem = _elapsed(["sh", "-c", launcher.command(agent, event)], root, quiet, body)
                times.append({"agent": agent, "event": event, "ms": round(ms, 1),
                              "startups": round(ms / startup, 1) if startup else None, "problem": problem})
    return times


def _elapsed(argv: list[str], cwd: Path, env: dict[str, str], body: str) -> tuple[float, str | None]:
    started = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, input=body, capture_output=True, text=True,
                              timeout=HOOK_TIMEOUT)
    except subprocess.TimeoutExpired:
        return HOOK_TIMEOUT * 1000, f"took more than {HOOK_TIMEOUT:.0f} s"
    ms = (time.perf_counter() - started) * 1000
    if proc.returncode != 0:
        return ms, f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"
    return ms, None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
