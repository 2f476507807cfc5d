"""Many agents on one machine: one worktree each, an active run each, concurrent writers of shared refs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import SG, Repo
from test_takeover import machine, remote_with_a_published_run


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


RACER = """\
import json, os, subprocess, sys, time
go = float(sys.argv[1])
time.sleep(max(0.0, go - time.time()))  # every racer starts its first write at the same instant
for i in range(int(sys.argv[2])):
    open("calc.py", "a").write(f"# {i}\\n")
    out = subprocess.run(SG + ["checkpoint", "--json", "--step", str(i)], capture_output=True, text=True,
                         env={**os.environ, "SHIFT_RUN": "demo"})
    if out.returncode:
        sys.exit(json.dumps({"code": out.returncode, "err": out.stderr}))
    print(out.stdout.replace("\\n", " "), flush=True)
"""


def race(trees: list[Repo], writes: int, env: dict[str, str] | None = None) -> list[tuple[int, list[Any], str]]:
    """Start one racer per tree at the same instant: (exit code, the checkpoints it made, its stderr)."""
    go = str(time.time() + 1.0)
    procs = [subprocess.Popen([SG[0], "-c", f"SG = {SG!r}\n" + RACER, go, str(writes)], cwd=t.path,
                              env={**os.environ, **getattr(t, "env", {}), **(env or {})}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for t in trees]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        results.append((proc.returncode, [json.loads(line) for line in out.splitlines()], err))
    return results


def holders_by_epoch(repo: Repo, ref: str = "refs/shift/ledgers/demo", git_dir: str | None = None) -> dict[int, set]:
    """Every owner epoch the ledger ref's history carries, and the places (host:worktree) that wrote in it."""
    argv = ["git", *(["--git-dir", git_dir] if git_dir else []), "log", "--format=%(trailers:only,unfold)%x00", ref]
    out = subprocess.run(argv, cwd=repo.path, capture_output=True, text=True, check=True).stdout
    found: dict[int, set] = {}
    for record in out.split("\0"):
        meta = dict(line.partition(": ")[::2] for line in record.strip().splitlines())
        if "Shift-Epoch" in meta:
            found.setdefault(int(meta["Shift-Epoch"]), set()).add(meta["Shift-Holder"].split(" (", 1)[0])
    return found


def assert_refused_naming(err: str, winner: Path) -> None:
    lines = json.loads(err.strip().splitlines()[-1])["err"].strip().splitlines()
    assert len(lines) == 1 and f":{winner} " in lines[0] and "--take-over" in lines[0], lines


def test_one_run_checkpointed_from_parallel_worktrees_has_exactly_one_holder(run_repo: Repo, tmp_path: Path) -> None:
    trees = [worktree(run_repo, tmp_path / f"wt{n}", f"b{n}") for n in range(3)]
    results = race(trees, 6)
    # Their first writes race for owner epoch 1: exactly one takes it (compare-and-swap on the ledger ref);
    # the others are refused before writing anything, with one line naming the holder and the take-over fix.
    winners = [n for n, (code, _, _) in enumerate(results) if code == 0]
    assert len(winners) == 1, results
    winner = trees[winners[0]].path
    for n, (code, made, err) in enumerate(results):
        if n != winners[0]:
            assert code == 1 and not made, results  # the racer script exits 1 carrying shiftgit's answer
            assert json.loads(err.strip().splitlines()[-1])["code"] == 4
            assert_refused_naming(err, winner)
            assert trees[n].ledger("demo").get("lease") is None, "the refused racer wrote nothing"
    made = results[winners[0]][1]
    assert [p["seq"] for p in made] == [1, 2, 3, 4, 5, 6] and {p["epoch"] for p in made} == {1}
    assert set(p["snapshot"] for p in made) <= set(run_repo.git("rev-list", "refs/shift/snapshots/demo").split())
    assert holders_by_epoch(run_repo) == {1: {f"{socket.gethostname()}:{winner}"}}


def test_after_each_expiry_exactly_one_racing_worktree_takes_the_next_epoch(run_repo: Repo, tmp_path: Path) -> None:
    config = json.loads(run_repo.read(".shift/config.json"))
    run_repo.write(".shift/config.json", json.dumps({**config, "lease": {"minutes": 0.02}}) + "\n")  # 1.2 s
    assert run_repo.commit("a lease of 1.2 seconds").returncode == 0
    trees = [worktree(run_repo, tmp_path / f"wt{n}", f"b{n}") for n in range(3)]
    taken: dict[int, set] = {}
    snapshots: list[str] = []
    for _ in range(4):  # each round: the lease has expired, three writers race for the next epoch
        time.sleep(1.5)
        results = race(trees, 1)
        assert any(code == 0 for code, _, _ in results), results
        for tree, (code, made, err) in zip(trees, results, strict=True):
            if code:
                assert json.loads(err.strip().splitlines()[-1])["code"] == 4, err
            for point in made:
                taken.setdefault(point["epoch"], set()).add(str(tree.path))
                snapshots.append(point["snapshot"])
    assert all(len(places) == 1 for places in taken.values()), taken  # one writer per epoch
    assert len(taken) >= 4 and set(snapshots) <= set(run_repo.git("rev-list", "refs/shift/snapshots/demo").split())
    assert all(len(places) == 1 for places in holders_by_epoch(run_repo).values())


def test_two_clones_racing_through_their_remote_have_one_holder_per_epoch(tmp_path: Path) -> None:
    origin = remote_with_a_published_run(tmp_path)
    clones = [machine(tmp_path, origin, f"machine-{n}") for n in range(2)]
    results = race(clones, 3)  # type: ignore[arg-type]
    winners = [n for n, (code, _, _) in enumerate(results) if code == 0]
    assert len(winners) == 1, results  # the remote's ref, pushed without force, decides the first epoch
    loser = 1 - winners[0]
    assert_refused_naming(results[loser][2], clones[winners[0]].path)
    assert [p["epoch"] for p in results[winners[0]][1]] == [1, 1, 1]
    assert clones[loser].ledger("demo").get("lease") is None, "the refused clone wrote nothing"
    first = {1: {f"{socket.gethostname()}:{clones[winners[0]].path}"}}
    assert holders_by_epoch(clones[0], git_dir=str(origin)) == first
    for clone in clones:  # from now on the lease lasts 1.2 s: after each expiry both race for the next epoch
        config = json.loads(clone.read(".shift/config.json"))
        clone.write(".shift/config.json", json.dumps({**config, "lease": {"minutes": 0.02}}) + "\n")
    taken: dict[int, set] = {1: {str(clones[winners[0]].path)}}
    for _ in range(3):
        time.sleep(1.5)
        for clone, (code, made, err) in zip(clones, race(clones, 1), strict=True):  # type: ignore[arg-type]
            assert code == 0 or json.loads(err.strip().splitlines()[-1])["code"] == 4, err
            for point in made:
                taken.setdefault(point["epoch"], set()).add(str(clone.path))
    # round 2 may renew epoch 1 (taken under the 30-minute lease); rounds 3 and 4 take a new epoch each
    assert len(taken) >= 3 and all(len(places) == 1 for places in taken.values()), taken
    deadline = time.monotonic() + 60  # the publishers push the last checkpoints in the background
    while time.monotonic() < deadline:
        remote = holders_by_epoch(clones[0], git_dir=str(origin))
        if max(remote) == max(taken):
            break
        time.sleep(0.3)
    assert all(len(places) == 1 for places in remote.values()) and max(remote) == max(taken), remote


def _has_handoff_notes() -> bool:
    from shiftgit.cli.main import LAZY

    return "log" in LAZY


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
