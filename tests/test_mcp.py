"""`shiftgit mcp`: a real server process over stdio, driven by the SDK's own client (when installed)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import Any

import pytest
from conftest import Repo

HAS_MCP = importlib.util.find_spec("mcp") is not None
FAIL = [sys.executable, "-c", "import sys; sys.exit(1)"]


@pytest.mark.skipif(HAS_MCP, reason="the mcp extra is installed here")
def test_without_the_extra_the_command_says_how_to_get_it(repo: Repo) -> None:
    proc = repo.sg("mcp")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "pip install 'shiftgit[mcp]'" in proc.stderr


def _result(result: Any) -> tuple[bool, str, Any]:
    """(is_error, text, structured) across SDK 1.x (camelCase) and 2.x (snake_case) field names."""
    error = getattr(result, "is_error", getattr(result, "isError", False))
    structured = getattr(result, "structured_content", getattr(result, "structuredContent", None))
    return bool(error), "".join(getattr(c, "text", "") for c in result.content), structured


async def _session_calls(repo: Repo, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "shiftgit", "mcp"], cwd=str(repo.path),
                                   env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = [tool.name for tool in (await session.list_tools()).tools]
        results = [_result(await session.call_tool(name, args)) for name, args in calls]
    return names, results


@pytest.mark.skipif(not HAS_MCP, reason="needs the mcp extra: pip install 'shiftgit[mcp]'")
def test_tools_brief_report_and_checkpoint_without_running_commands(run_repo: Repo) -> None:
    import anyio

    run_repo.write("calc.py", run_repo.read("calc.py").replace("a - b", "a + b"))
    marker = run_repo.path / "ran.txt"
    argv = [sys.executable, "-c", f"open({str(marker)!r}, 'a').write('x'); import sys; sys.exit(1)"]
    assert run_repo.sg("check", "--name", "unit", "--", *argv).returncode == 1
    marker.unlink()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("briefing", {}), ("status", {}), ("freshness", {}),
        ("checkpoint", {"step": "found it", "next_action": "fix sub()", "done_when": "test_sub passes"}),
        ("freshness", {}), ("briefing", {"run": "nope"}),
    ]
    names, results = anyio.run(_session_calls, run_repo, calls)
    assert sorted(names) == ["briefing", "checkpoint", "freshness", "status"]
    brief, status, stale, point, fresh, unknown = results
    assert not brief[0] and "make calc correct" in brief[1] and "shiftgit ledger for run 'demo'" in brief[1]
    assert json.loads(status[1])["active"] == "demo"
    assert json.loads(stale[1])["stale"] is True and "calc.py" in json.loads(stale[1])["files"]
    assert not point[0] and json.loads(point[1])["seq"] == 1
    assert json.loads(fresh[1])["stale"] is False
    assert unknown[0] and "unknown run 'nope'" in unknown[1] and "Traceback" not in unknown[1]
    ledger = run_repo.ledger("demo")["checkpoint"]
    assert ledger["step"] == "found it" and ledger["next"] == {"action": "fix sub()", "done_when": "test_sub passes"}
    assert not marker.exists()  # no tool reran the recorded check
