#!/bin/sh
# shiftgit agent hook launcher, installed by `shiftgit init --agent ...` (run it again to update this file).
# The hook commands shiftgit wires into an agent's config run it as `<git-common-dir>/shift/agent-hook AGENT EVENT`
# (or `shiftgit hook AGENT EVENT` from PATH where it is absent: a clone where `init` has not run yet).
# It starts the interpreter that installed it, by its absolute path (Codex runs hooks under `bash -lc`, which
# rebuilds PATH), without site (`-S`: most of Python's start-up), with the folder holding the shiftgit package
# on sys.path and the agent's working directory off it (a project's own json.py must not shadow the stdlib's);
# shiftgit loads site itself the first time an import needs site-packages.
python=@PYTHON@
package=@PACKAGE@  # the directory holding the shiftgit package that installed this launcher
if [ -x "$python" ]; then
    exec "$python" -S -c 'import sys
if sys.path[0] == "":
    del sys.path[0]
sys.path.append(sys.argv.pop(1))
try:
    from shiftgit.__main__ import hook_main
except ImportError:
    import site
    site.main()
    from shiftgit.__main__ import hook_main
sys.exit(hook_main(sys.argv[1:]))' "$package" "$@"
fi
exec shiftgit hook "$@"
