"""`python -m shiftgit` and the `shiftgit` console script.

Git and agent hooks, and `--version`, take a fast path that never imports click, jsonschema or pygit2;
so do the plainest forms of `status`, `show`, `log` (cli/quick.py), `checkpoint`, `check`, `effect run`, `verify`
(cli/plain.py).
The git hook shims and the agent hook launcher (agents/launcher.py) start Python with `-S` (no site: most of
Python's start-up) and call `hook_main`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs ~4 ms to import: annotations only
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import NoReturn

    Function = Callable[..., object]


def main(argv: list[str] | None = None) -> int:
    return _main(sys.argv[1:] if argv is None else argv, argv is None)


def _main(args: list[str], process: bool) -> int:
    """`process`: this call is the process's entry (console script, `python -m shiftgit`, a hook launcher)."""
    if args == ["--version"]:  # what click's version_option prints, without loading click (~30 ms)
        from shiftgit import __version__

        sys.stdout.write(f"shiftgit, version {__version__}\n")
        return 0
    if len(args) >= 2 and args[0] == "hook" and not {"-h", "--help"} & set(args[1:3]):
        if args[1] == "post-commit":  # the note pre-commit prepared, written with stdlib and 2 git processes
            from shiftgit.git.quicknote import post_commit

            if post_commit():
                return 0
        from shiftgit.git import GIT_HOOKS

        if args[1] in GIT_HOOKS:
            from shiftgit.git.hooks import run_hook

            return run_hook(args[1], args[2:])
        from shiftgit.agents.events import AGENTS, EVENTS

        if args[1] in AGENTS:
            if process:
                import gc

                # No cycle collector in an agent hook's process: loading its modules and a transcript's entries
                # started ~17 collections (~1.4 ms of a pre-compact hook); what it builds is freed by reference
                # counts, and it exits when the hook is done (`_leave`). Its background job is a new process.
                gc.disable()
                _defer_url_parsing()
                _defer_collections()
                _import_pathlib()
            kind = EVENTS[args[1]].get(args[2] if len(args) == 3 else "")
            if process and kind in ("brief", "gate"):
                import os

                from shiftgit.git.worktreecache import prestart

                prestart(os.getcwd())  # git works while Python loads the hook's code
            elif process and kind in ("save", "end"):  # the tree is judged by its background job: Repo.open only
                import os

                from shiftgit.git import rawgit

                try:
                    rawgit.prestart([rawgit.OPEN], dict(os.environ))
                except OSError:  # no git, no pipes: the hook runs it itself, and says why
                    pass
            from shiftgit.agents.hooks import main as agent_hook

            answered = agent_hook(args[1], args[2:])
            if process:  # this process is the hook (console script, `python -m shiftgit`, the launcher)
                _leave(answered)
            return answered
    if args[:1] in (["status"], ["show"], ["log"], ["resume"]):  # reports in their plainest forms: no click
        leaves = process and args[0] != "resume"  # a report that only reads: nothing of it is left to tear down
        if leaves:
            import gc

            _defer_url_parsing()
            gc.disable()  # its objects are freed by their counts; the process ends when it has printed
        from shiftgit.cli.quick import main as quick

        code = quick(args)
        if code is not None:
            if leaves:
                _leave(code)
            return code
        if leaves:
            gc.enable()  # the command line runs it (another form, an error): as any command
    if process and args[:1] in (["checkpoint"], ["check"], ["effect"], ["verify"]):
        _defer_url_parsing(regex=False)  # pathlib's urllib.parse (for Path.as_uri alone): imported on first use
        import gc

        # No cycle collector in this process: loading its modules alone started ~30 collections (~2-3 ms, each
        # walking objects that live as long as the process); what it builds is freed by reference counts (the
        # ledger's JSON and records hold no cycles: ledger/reading.GcPaused), and it exits when the command ends.
        gc.disable()
    if args[:1] in (["checkpoint"], ["check"], ["verify"]) and not {"-h", "--help", "--retire", "--chain"} & set(args):
        # git hashes the work tree while the command loads (the tree a checkpoint records, a check or verify compares)
        from shiftgit.repo import begin_worktree_tree

        begin_worktree_tree()
    if args[:1] in (["checkpoint"], ["check"], ["effect"], ["verify"]):  # plainest forms without click (cli/plain.py)
        from shiftgit.cli.plain import main as plain
        from shiftgit.cli.writes import ROUTES

        code = plain(args, ROUTES)
        if code is not None:
            if process:
                _done(code)
            return code
    from shiftgit.cli.main import cli

    return cli.main(args=args, prog_name="shiftgit", standalone_mode=True) or 0


def _leave(code: int) -> NoReturn:
    """Exit at once, the answer flushed. An agent hook's process has closed the files it wrote, joined its threads
    and detached its background job by now; tearing down the modules it imported (interpreter finalization) cost it
    another 20-150 ms at load 5 here, against 5-30 ms this way: a fifth to a half of a Python start-up. A git hook's
    process has closed its files and waited for its git processes too, and `git commit` waits for it."""
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the agent closed the pipe: nothing left to tell it
            pass
    os._exit(code)


def _done(code: int) -> NoReturn:
    """A write command run the plain way is done: its exit handlers run (a checkpoint's tree build is closed
    there), then `_leave`. Its files are closed, its git processes waited for and its threads joined by now;
    tearing down what it built (1,000 file records or effects, their JSON and text, each freed object by object,
    then every module) cost 5-20 ms here, more than a `checkpoint` of one file spends on its ledger."""
    import atexit

    atexit._run_exitfuncs()
    _leave(code)


def hook_main(args: list[str]) -> NoReturn:
    """`shiftgit hook ARGS` as the git hook shims and the agent hook launcher run it: under `python -S`, site loads
    on first need. The process exits here, as soon as the hook is done (see `_leave`: git or the agent waits for it).
    No cycle collector (nor in the commit gate's waiting child): its ~12 collections found nothing to free and cost a
    checkpointed commit ~1 ms; what a hook builds is freed by reference counts, and the process ends with the hook."""
    import gc

    gc.disable()
    if sys.flags.no_site and _LateSite not in sys.meta_path:
        sys.meta_path.append(_LateSite)
    if args[:1] == ["pre-commit"]:
        import os

        from shiftgit.git import rawgit, waiter

        waiter.ENABLED = True  # the shim's post-commit wakes what the gate leaves waiting
        missing = os.environ.pop("SHIFT_ADD_HOOKS", None)  # the shim: the hooks a run needs are not there yet
        if os.path.exists(".git") or os.environ.get("GIT_DIR"):  # git runs it at the top of the work tree
            from shiftgit.git.trailerconf import plain_in_files

            wanted = [rawgit.STAGED]  # objects: read from the loose files (git/looseread.py), cat-file when needed
            env = rawgit.hook_env(os.environ)
            if not plain_in_files(env, os.getcwd()):  # the config files do not settle it: git's `config` does
                wanted.append(rawgit.TRAILER_CONFIG)
            rawgit.prestart(wanted, env)
        if missing:  # added while git works (git/runhooks.py)
            from shiftgit.git import runhooks

            runhooks.add_shim_hooks(missing)
    _leave(_main(["hook", *args], True))


class _DeferredModule(type(sys)):  # type: ignore[misc]  # types.ModuleType, without importing types
    """A stdlib module imported on its first use. pathlib imports `urllib.parse` for `Path.as_uri` alone, which no
    agent hook calls (~7 ms with ipaddress: a third of a Python start-up), and pathlib and fnmatch import `re` (with
    enum, re's parser and compiler) for globbing alone; the hooks read JSON with shiftgit/rawjson.py, not json.
    The first use of an attribute imports the real module, which every later use gets."""

    def __getattr__(self, name: str) -> object:
        if name == "__path__" and self.__name__ in _NOT_PACKAGES:  # `from urllib.parse import ...`: not a package
            raise AttributeError(name)
        return getattr(_real_module(str(self.__name__)), name)  # `__path__` of a package too (a submodule's import)


# (collections.abc is in place: see below)
_NOT_PACKAGES = ("urllib.parse", "collections", "ntpath", "warnings", "functools", "fnmatch", "operator")


def _defer_url_parsing(regex: bool = True) -> None:
    """`urllib.parse` and (REGEX) `re` stand-ins until something uses them (an agent hook's process; `regex=False`:
    a command whose modules use `re` anyway, then through the stand-in at every call)."""
    if "urllib.parse" not in sys.modules:
        import urllib  # an empty package

        stand_in = _DeferredModule("urllib.parse")
        stand_in.quote_from_bytes = lambda *args, **kwargs: (  # what pathlib imports by name
            _real_module("urllib.parse").quote_from_bytes(*args, **kwargs))
        sys.modules["urllib.parse"] = stand_in
        setattr(urllib, "parse", stand_in)  # noqa: B010  # what an import of a submodule sets
    if regex and "re" not in sys.modules:
        sys.modules["re"] = _DeferredModule("re")


def _real_module(name: str) -> ModuleType:
    """The real module NAME, imported now if the stand-in was all there was."""
    module = sys.modules.get(name)
    if module is None or isinstance(module, _DeferredModule):
        sys.modules.pop(name, None)
        __import__(name)  # the import sets a submodule's attribute on its package to the real module too
        module = sys.modules[name]
        if name == "collections" and "collections.abc" in sys.modules:  # put in place by `_defer_collections`
            setattr(module, "abc", sys.modules["collections.abc"])  # noqa: B010  # what its import sets
    return module


def _defer_collections() -> None:
    """A stand-in for the collections package (~1.5 ms of an agent hook: its classes are ABCs) until something uses
    it. pathlib needs functools, whose import takes `namedtuple` from it (for lru_cache's CacheInfo): that is
    shiftgit.tuples' record, the same class API. `collections.abc` is `_collections_abc` (os loaded it), which is
    all that module is (it imports every name of it): shiftgit's `from collections.abc import ...` never loads the
    package. Any other use imports the real package, its `abc` the same module. pathlib's ntpath (Windows paths,
    with four failed imports of `nt`) and warnings (two deprecated methods) are stand-ins too (~0.4 ms)."""
    for name in ("ntpath", "warnings"):  # pathlib's too: Windows paths' module, and two deprecated methods' warnings
        if name not in sys.modules:
            sys.modules[name] = _DeferredModule(name)
    if "collections" in sys.modules or "collections.abc" in sys.modules or "functools" in sys.modules:
        return
    import _collections_abc

    stand_in = _DeferredModule("collections")
    stand_in.namedtuple = _namedtuple
    sys.modules["collections"] = stand_in
    sys.modules["collections.abc"] = _collections_abc


def _namedtuple(typename: str, field_names: Sequence[str] | str, *, rename: bool = False,
                defaults: Sequence[object] | None = None, module: str | None = None) -> type:
    """collections.namedtuple as shiftgit.tuples builds it, for a list of valid names (functools' CacheInfo); any
    other call is the real one's."""
    if isinstance(field_names, str) or rename:
        return _real_module("collections").namedtuple(  # type: ignore[no-any-return]
            typename, field_names, rename=rename, defaults=defaults, module=module)
    from shiftgit.tuples import _record

    made = _record(typename, tuple(field_names), tuple(defaults or ()))
    made.__module__ = module or sys._getframe(1).f_globals.get("__name__", "__main__")
    return made


def _import_pathlib() -> None:
    """pathlib imported with stand-ins for what it needs to glob alone (~1.2 ms of an agent hook): fnmatch, and
    functools (with reprlib and types) for the cache of its glob selectors, whose `lru_cache()` call at import the
    stand-in answers with a cache that makes the real one on first use; `operator.attrgetter` is `_operator`'s (what
    operator exports). Any other use of those modules imports the real one (functools' namedtuple: see above)."""
    if "pathlib" in sys.modules or "functools" in sys.modules:
        return
    import _operator

    for name in ("fnmatch", "operator"):
        if name not in sys.modules:
            sys.modules[name] = _DeferredModule(name)
    if isinstance(sys.modules["operator"], _DeferredModule):
        sys.modules["operator"].attrgetter = _operator.attrgetter
    stand_in = sys.modules["functools"] = _DeferredModule("functools")
    stand_in.lru_cache = _lru_cache
    try:
        import pathlib  # noqa: F401
    finally:
        del stand_in.lru_cache  # any later use is the real one's


def _lru_cache(maxsize: int | None = 128, typed: bool = False) -> Callable[[Function], Function]:
    """`functools.lru_cache(maxsize, typed)` as pathlib calls it at import: the real cache is made on the first call."""
    if callable(maxsize):  # `@lru_cache` with no call: the function itself
        return _lru_cache()(maxsize)

    def decorate(function: Function) -> Function:
        made: list[Function] = []

        def cached(*args: object, **kwargs: object) -> object:
            if not made:
                made.append(_real_module("functools").lru_cache(maxsize, typed)(function))
            return made[0](*args, **kwargs)

        return cached

    return decorate


class _LateSite:
    """Last on sys.meta_path: an import nothing else finds loads site (site-packages, .pth files), then
    is looked up again. Under `python -S` only: the hooks pay for site only when they need it."""

    @staticmethod
    def find_spec(name: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> ModuleSpec | None:
        if path is not None or name in sys.stdlib_module_names or _LateSite not in sys.meta_path:
            return None  # a submodule (its package was found), or the stdlib probing (`nt` on POSIX)
        sys.meta_path.remove(_LateSite)
        import site

        site.main()
        from importlib.util import find_spec

        return find_spec(name)


if __name__ == "__main__":
    sys.exit(main())
