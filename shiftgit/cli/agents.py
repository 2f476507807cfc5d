"""`mcp` and `hook`: agent and git hook entry points (the hooks run before click loads)."""

from __future__ import annotations

import click

# -- agents (issue 7): MCP server; `hook <agent> <event>` is dispatched in __main__.py -----------

@click.command("mcp")
def mcp_server() -> None:
    """Serve briefing, status, freshness and checkpoint as MCP tools over stdio (needs shiftgit[mcp]).

    No tool runs a recorded command. Register it with your agent, e.g. for Claude Code:

    \b
    Example:
      claude mcp add shiftgit -- shiftgit mcp
    """
    from shiftgit.agents import mcp as mcpserver

    mcpserver.serve()

# -- hook entry points (the real work is dispatched in __main__.py, before click is imported) -----

@click.command("hook", context_settings={"ignore_unknown_options": True})
@click.argument("names", nargs=-1, type=click.UNPROCESSED)
def hook(names: tuple[str, ...]) -> None:
    """Entry points for git hooks and agent hooks (installed by `shiftgit init`).

    \b
    Git hooks:   shiftgit hook pre-commit|commit-msg|post-commit|post-rewrite|post-merge|pre-push
    Agent hooks: shiftgit hook claude|codex|qwen session-start|stop|pre-compact|session-end
                 shiftgit hook gemini session-start|after-agent|session-end
                 shiftgit hook copilot session-start|agent-stop|session-end
                 shiftgit hook opencode session-start|session-idle|pre-compact  (its plugin calls them)
                 shiftgit hook aider after-edit  (Aider's test command: exit 1 once with the reason)
    Agent hooks read the agent's JSON on stdin and fail open. (`hook gemini pre-compress`, which
    an older shiftgit wired, is accepted and does nothing: Gemini CLI fires it before every request.)

    \b
    Example:
      echo '{"hook_event_name": "SessionStart", "source": "startup"}' | shiftgit hook claude session-start
    """
    from shiftgit.agents.events import AGENTS as AGENT_HOOKS
    from shiftgit.errors import UsageError
    from shiftgit.git import GIT_HOOKS

    if {"-h", "--help"} & set(names):  # `hook claude --help`: this help, exit 0
        click.echo(click.get_current_context().get_help())
        return
    given = " ".join(names) or "(nothing)"
    raise UsageError(f"unknown hook {given!r}; use one of: {', '.join(GIT_HOOKS)}, "
                     f"or an agent ({', '.join(AGENT_HOOKS)}) and an event — see `shiftgit hook --help`")
