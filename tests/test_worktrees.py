"""Many agents on one machine: one worktree each, an active run each, concurrent writers of shared refs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import SG, Repo


def worktree(repo: Repo, path: Path, branch: str) -> Repo:
    repo.git("worktree", "add", "-q", "-b", branch, str(path))
    return Repo(path)


def test_each_worktree_has_its_own_active_run_and_overlaps_are_warned(run_repo: Repo, tmp_path: Path) -> None:
    run_repo.ok("amend", "--scope", "src/**", "--reason", "narrow the demo run")
    one = worktree(run_repo, tmp_path / "one", "one")
    proc = one.ok("start", "docs", "--goal", "g", "--stop-when", "s", "--scope", "docs/**")
    assert "overlaps" not in proc.stderr
    two = worktree(run_repo, tmp_path / "two", "two")
    proc = two.ok("start", "api", "--goal", "g", "--stop-when", "s", "--scope", "docs/api/**")
    assert "warning: scope overlaps run 'docs' active in worktree" in proc.stderr
    assert str(tmp_path / "one") in proc.stderr and "'demo'" not in proc.stderr
    proc = two.ok("start", "wide", "--goal", "g", "--stop-when", "s")  # no scope: the whole tree
    assert "active run 'api'" in proc.stderr and "'docs' active in worktree" in proc.stderr
    assert "'demo' active in worktree" in proc.stderr
    assert [r.json("status")["active"] for r in (run_repo, one, two)] == ["demo", "docs", "wide"]


def test_one_run_checkpointed_from_parallel_worktrees_keeps_every_snapshot(run_repo: Repo, tmp_path: Path) -> None:
    trees = [worktree(run_repo, tmp_path / f"wt{n}", f"b{n}") for n in range(3)]
    script = ("import subprocess, sys\n"
              "for i in range(6):\n"
              "    open('calc.py', 'a').write(f'# {i}\\n')\n"
              f"    out = subprocess.run({SG!r} + ['checkpoint', '--json', '--step', str(i)], capture_output=True,"
              " text=True, env={**__import__('os').environ, 'SHIFT_RUN': 'demo'})\n"
              "    if out.returncode: sys.exit(out.stderr)\n"
              "    print(out.stdout.replace('\\n', ' '))\n")
    procs = [subprocess.Popen([SG[0], "-c", script], cwd=t.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for t in trees]
    results = [proc.communicate(timeout=300) for proc in procs]
    # One owner at a time (issue 19): a worktree that is not the run's lease holder is refused with the
    # take-over hint; which worktree wins the first write is a race (see the closing note of issue 19:
    # the first acquisition is not yet exclusive). What must hold: nothing else fails, and no snapshot
    # a successful checkpoint reported is lost while the others race.
    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0 or "--take-over" in err, results
    finished = [out for proc, (out, _) in zip(procs, results, strict=True) if proc.returncode == 0]
    assert finished, results
    snapshots = [json.loads(line)["snapshot"] for out, _ in results for line in out.splitlines()]
    assert len(set(snapshots)) == len(snapshots) >= 6 * len(finished)
    reachable = set(run_repo.git("rev-list", "refs/shift/snapshots/demo").split())
    assert set(snapshots) <= reachable


def _has_handoff_notes() -> bool:
    from shiftgit.cli.main import cli

    return "log" in cli.commands


@pytest.mark.skipif(not _has_handoff_notes(), reason="needs the post-commit handoff note and `shiftgit log`")
def test_parallel_agents_committing_in_worktrees_lose_no_handoff(repo: Repo, tmp_path: Path) -> None:
    repo.ok("init", "--hooks", "git")
    assert repo.commit("set up shiftgit").returncode == 0
    agents = []
    for n in range(4):
        agent = worktree(repo, tmp_path / f"agent{n}", f"agent{n}")
        agent.ok("start", f"agent-{n}", "--goal", f"area {n}", "--stop-when", "done", "--scope", f"area{n}/**")
        assert agent.commit(f"start agent-{n}").returncode == 0
        agents.append(agent)
    script = ("import os, subprocess, sys\n"
              "run = sys.argv[1]\n"
              "for i in range(6):\n"
              "    os.makedirs(sys.argv[2], exist_ok=True)\n"
              "    open(os.path.join(sys.argv[2], 'f.py'), 'w').write(f'v = {i}\\n')\n"
              f"    subprocess.run({SG!r} + ['checkpoint', '--run', run, '--step', f'{{run}} {{i}}'], check=True)\n"
              "    subprocess.run(['git', 'add', '-A'], check=True)\n"
              "    subprocess.run(['git', 'commit', '-q', '-m', f'{run} {i}'], check=True)\n")
    procs = [subprocess.Popen([SG[0], "-c", script, f"agent-{n}", f"area{n}"], cwd=a.path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n, a in enumerate(agents)]
    results = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 4, results
    for n, agent in enumerate(agents):
        commits = agent.git("rev-list", "-n", "6", "HEAD").split()
        for i, commit in enumerate(reversed(commits)):
            assert f"agent-{n} {i}" in agent.git("notes", "--ref=shift", "show", commit)
        steps = [e["step"] for e in agent.json("log") if e.get("run") == f"agent-{n}"]
        assert steps[:6] == [f"agent-{n} {i}" for i in reversed(range(6))]
