"""How long an agent waits on shiftgit's hooks, in start-ups of this Python (`python -c pass`).

    python bench/agent_hooks.py [--files 200] [--rounds 21] [--turns 200] [--big-mb 5] [--base CHECKOUT]

Builds a throw-away repository (isolated from the machine's git config) with FILES tracked files,
`shiftgit init --agent claude --agent codex`, a run with a committed checkpoint, and a Claude Code
transcript of TURNS tool rounds. Every round times, interleaved, the real hook processes as the agent
runs them: the command `init` wrote into `.claude/settings.json` / `.codex/hooks.json`, through `sh -c`,
JSON on stdin, with a `shiftgit` console script (pip's, run by this Python, site and all) first on PATH
for a command that calls `shiftgit` from PATH. They run in the states an agent meets them, with the set-up
between them untimed (an edit, `shiftgit checkpoint`, one more turn in the transcript):

    session start (a new session joins the ledger), stop with nothing to record, stop that holds
    (a new edit), stop again (held already: a note), pre-compact with nothing changed (the
    conversation is saved: the transcript grew), pre-compact again with nothing new, pre-compact
    after an edit (a checkpoint too), session end (the conversation saved, the session closed), the
    same for Codex.

Medians over the rounds; start-ups are the median of each round's time over that round's `python -c pass`.
Once per round too, `shiftgit context save --from` a generated transcript of BIG-MB megabytes.
Reports Python's start-up time and the load average beside the figures. What a hook hands to a background
process (agents/background.py: an automatic checkpoint, a session end's conversation) is waited for, untimed,
before the next step, as the agent's next hook waits for it.
With `--base CHECKOUT` (another shiftgit checkout, e.g. main's), the same steps run in a second repository
with that code, interleaved step by step (the order alternating per round), and both columns are printed.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import ROOT, SG, compile_bytecode, isolate, parse, scale


def run(argv: list[str], repo: Path, data: str | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(argv, cwd=repo, input=data, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def build(repo: Path, files: int, env: dict[str, str] | None = None) -> None:
    repo.mkdir()
    run(["git", "init", "-q", "-b", "main"], repo, env=env)
    for n in range(files):
        (repo / f"src/m{n % 20}").mkdir(parents=True, exist_ok=True)
        (repo / f"src/m{n % 20}/f{n}.py").write_text(f"X = {n}\n" * 20)
    run(["git", "add", "-A"], repo, env=env)
    run(["git", "commit", "-qm", "init"], repo, env=env)
    run([*SG, "init", "--hooks", "git", "--agent", "claude", "--agent", "codex"], repo, env=env)
    run([*SG, "start", "bench", "--goal", "g", "--stop-when", "s", "--constraint", "c1", "--constraint", "c2"], repo,
        env=env)
    run([*SG, "checkpoint", "--step", "one", "--next", "two"], repo, env=env)
    run(["git", "add", "-A"], repo, env=env)
    run(["git", "commit", "-qm", "start"], repo, env=env)


CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from shiftgit.__main__ import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def console_script(folder: Path, env: dict[str, str]) -> str:
    """A `shiftgit` script as pip writes it, in FOLDER; returns PATH with FOLDER first."""
    folder.mkdir(parents=True)
    script = folder / "shiftgit"
    script.write_text(CONSOLE_SCRIPT.format(python=sys.executable))
    script.chmod(0o755)
    return f"{folder}:{env['PATH']}"


def configured(repo: Path, agent: str, event: str) -> list[str]:
    """The hook command `init --agent` wrote for AGENT's EVENT (its own name), run as the agent runs it."""
    path = {"claude": ".claude/settings.json", "codex": ".codex/hooks.json"}[agent]
    groups = json.loads((repo / path).read_text())["hooks"][event]
    return ["sh", "-c", groups[0]["hooks"][0]["command"]]


def settle(repo: Path) -> None:
    """Wait until no background conversation save runs in `repo` (each holds an flock on its lock file)."""
    for path in (repo / ".git" / "shift" / "agents").glob("context-*.lock"):
        with open(path, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)


class Transcript:
    """A Claude Code JSONL transcript that grows by one tool round at a time."""

    def __init__(self, path: Path, cwd: Path) -> None:
        self.path, self.cwd, self.turns = path, cwd, 0
        self._write({"type": "system", "sessionId": "bench", "content": (  # prose as agents' own prompts have it
            "You are a coding agent (bench). Docs: https://docs.example.com/en/agents and http://localhost:8080/api. "
            "Keep your output tokens low; the secret of a good change is a small diff.")})
        self._write({"type": "user", "sessionId": "bench", "uuid": "u0",
                     "message": {"role": "user", "content": "Fix every module (bench)."}})

    def _write(self, entry: dict[str, object]) -> None:
        with self.path.open("a") as handle:
            handle.write(json.dumps(entry) + "\n")

    def grow(self, lines: int = 60) -> None:
        self.turns += 1
        n, call = self.turns, f"toolu_{self.turns:06d}"
        self._write({"type": "assistant", "sessionId": "bench", "uuid": f"a{n}", "message": {"role": "assistant",
                     "content": [{"type": "text", "text": f"Turn {n}: checking module {n % 20}."},
                                 {"type": "tool_use", "id": call, "name": "Bash",
                                  "input": {"command": f"python -m pytest -q tests/test_m{n % 20}.py"}}]}})
        output = "".join(f"tests/test_m{n % 20}.py::test_{k:03d} PASSED [{k:3d}%]\n" for k in range(lines))
        self._write({"type": "user", "sessionId": "bench", "uuid": f"r{n}", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": output + f"{lines} passed\n"}]}})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--big-mb", type=float, default=5.0)
    parser.add_argument("--base", type=Path, help="another shiftgit checkout to compare with, interleaved")
    args = parse(parser, files=5, rounds=1, turns=5, big_mb=0.05)
    compile_bytecode()
    trees = {"this": ROOT, **({"base": args.base.resolve()} if args.base else {})}
    with tempfile.TemporaryDirectory() as tmp:
        env = isolate(Path(tmp) / "home")
        variants = {}
        for name, tree in trees.items():
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "shiftgit")], check=True)
            venv = {**env, "PYTHONPATH": str(tree), "PATH": console_script(Path(tmp) / name / "bin", env)}
            repo = Path(tmp) / name / "repo"
            repo.parent.mkdir(exist_ok=True)
            build(repo, args.files, venv)
            transcript = Transcript(Path(tmp) / name / "session.jsonl", repo)
            for _ in range(args.turns):
                transcript.grow()
            big = Transcript(Path(tmp) / name / "big.jsonl", repo)
            while big.path.stat().st_size < args.big_mb * 1024 * 1024:
                big.grow()
            variants[name] = (steps(repo, transcript, big, venv), repo, venv)
        samples = measure(variants, args.rounds)
        report(samples, args)


Step = tuple[str, list[str], Callable[[], str], Callable[[], None] | None]


def steps(repo: Path, transcript: Transcript, big: Transcript, env: dict[str, str]) -> list[Step]:
    state = {"round": 0}

    def payload(event: str, session: str = "bench-s", **extra: object) -> str:
        return json.dumps({"session_id": session, "cwd": str(repo), "hook_event_name": event,
                           "transcript_path": str(transcript.path), **extra})

    def edit() -> None:
        state["round"] += 1
        (repo / "src/m0/f0.py").write_text(f"edited {state['round']}\n")

    def record() -> None:
        run([*SG, "checkpoint", "--step", f"step {state['round']}"], repo, env=env)

    def then(*actions: Callable[[], None]) -> Callable[[], None]:
        return lambda: [action() for action in actions] and None

    def hook(agent: str, event: str) -> list[str]:
        return configured(repo, agent, event)

    return [
        ("python -c pass", [sys.executable, "-c", "pass"], lambda: "", None),
        ("claude session-start (new session)", hook("claude", "SessionStart"),
         lambda: payload("SessionStart", session=f"s{state['round']}", source="startup"), None),
        ("claude stop (nothing to record)", hook("claude", "Stop"),
         lambda: payload("Stop", stop_hook_active=False), None),
        ("claude stop (an edit: held)", hook("claude", "Stop"),
         lambda: payload("Stop", stop_hook_active=False), edit),
        ("claude stop (held already: a note)", hook("claude", "Stop"),
         lambda: payload("Stop", stop_hook_active=False), None),
        ("claude pre-compact (context saved)", hook("claude", "PreCompact"),
         lambda: payload("PreCompact", trigger="auto"), then(record, transcript.grow)),
        ("claude pre-compact (nothing new)", hook("claude", "PreCompact"),
         lambda: payload("PreCompact", trigger="auto"), None),
        ("claude pre-compact (edit: checkpoint + context)", hook("claude", "PreCompact"),
         lambda: payload("PreCompact", trigger="auto"), then(edit, transcript.grow)),
        ("claude session-end (context, close)", hook("claude", "SessionEnd"),
         lambda: payload("SessionEnd", reason="exit"), then(record, transcript.grow)),
        ("codex session-start (new session)", hook("codex", "SessionStart"),
         lambda: payload("SessionStart", session=f"c{state['round']}", source="startup"), None),
        ("codex stop (nothing to record)", hook("codex", "Stop"),
         lambda: payload("Stop", stop_hook_active=False), None),
        ("codex session-end (context, close)", hook("codex", "SessionEnd"),
         lambda: payload("SessionEnd", reason="other"), transcript.grow),
        (f"context save --from ({big.path.stat().st_size / 1e6:.1f} MB)", [*SG, "context", "save", "--from",
                                                                          str(big.path)], lambda: "", big.grow),
    ]


def measure(variants: dict[str, tuple[list[Step], Path, dict[str, str]]],
            rounds: int) -> dict[str, dict[str, list[float]]]:
    """Step by step, each variant in turn (the order alternating per round); a background save is waited for."""
    names = [name for name, *_ in next(iter(variants.values()))[0]]
    samples: dict[str, dict[str, list[float]]] = {v: {name: [] for name in names} for v in variants}
    for number in range(rounds):
        order = list(variants) if number % 2 == 0 else list(reversed(variants))
        for index in range(len(names)):
            for variant in order:
                plan, repo, env = variants[variant]
                name, argv, data, before = plan[index]
                if before is not None:
                    before()
                body = data()
                started = time.perf_counter()
                proc = subprocess.run(argv, cwd=repo, input=body, capture_output=True, text=True, env=env)
                samples[variant][name].append((time.perf_counter() - started) * 1000)
                if proc.returncode != 0 or "Traceback" in proc.stderr:
                    raise SystemExit(f"{variant}: {name} failed:\n{proc.stdout}\n{proc.stderr}")
                settle(repo)
    return samples


def report(samples: dict[str, dict[str, list[float]]], args: argparse.Namespace) -> None:
    """Medians in ms, and in start-ups: the median over rounds of (this hook / `python -c pass` of the same
    round), which a load that drifts during the run skews less than a ratio of two medians."""
    print(f"{args.files} tracked files, a transcript of {args.turns}+ turns, {args.rounds} interleaved rounds; "
          f"{scale()}")
    variants = list(samples)
    print(f"  {'':48}" + "".join(f" {v + ' ms':>10} {'start-ups':>10}" for v in variants))
    for name in samples[variants[0]]:
        cells = []
        for variant in variants:
            values, unit = samples[variant][name], samples[variant]["python -c pass"]
            ratio = statistics.median(v / u for v, u in zip(values, unit, strict=True))
            cells.append(f" {statistics.median(values):10.1f} {ratio:10.2f}")
        print(f"  {name:<48}" + "".join(cells))


if __name__ == "__main__":
    main()
