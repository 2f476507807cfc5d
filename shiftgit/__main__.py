"""`python -m shiftgit` and the `shiftgit` console script.

Git and agent hooks, and `--version`, take a fast path that never imports click, jsonschema or pygit2.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:  # what click's version_option prints, without loading click (~30 ms)
        from shiftgit import __version__

        sys.stdout.write(f"shiftgit, version {__version__}\n")
        return 0
    if len(args) >= 2 and args[0] == "hook" and not {"-h", "--help"} & set(args[1:3]):
        from shiftgit.agents.events import AGENTS

        if args[1] in AGENTS:
            from shiftgit.agents.hooks import main as agent_hook

            return agent_hook(args[1], args[2:])
        from shiftgit.git.context import GIT_HOOKS

        if args[1] in GIT_HOOKS:
            from shiftgit.git.hooks import run_hook

            return run_hook(args[1], args[2:])
    if args[:1] in (["status"], ["show"], ["log"]):  # read-only reports in their plainest forms: no click
        from shiftgit.cli.quick import main as quick

        code = quick(args)
        if code is not None:
            return code
    from shiftgit.cli.main import cli

    return cli.main(args=args, prog_name="shiftgit", standalone_mode=True) or 0


if __name__ == "__main__":
    sys.exit(main())
