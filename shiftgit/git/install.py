"""`shiftgit init --hooks git|pre-commit`: plain git hook shims, or entries in .pre-commit-config.yaml.

Plain shims (the fast route) come from the template `hooks/git-hook.sh` (shipped in the wheel as
`shiftgit.hookfiles`). They go where git looks, `git rev-parse --git-path hooks` (so core.hooksPath
is respected), and record the absolute interpreter that installed them, as pre-commit does, so a
shiftgit in a virtualenv that is not on PATH still runs, and the folder holding the shiftgit package:
the shim starts Python without `site` (`-S`: site is most of Python's start-up) and puts that folder
on `sys.path`. A hook already there is moved aside to `<name>.pre-shiftgit` and chained: the shim
runs it first. Installing again updates the shims and never moves a shim of ours. Nothing outside
the repository (no global config) is touched.

While no run is active (no SHIFT_RUN, no active-run pointer, no ledger whose status is "active"), `init` leaves out
the hooks only a run needs (RUN_HOOKS): git/runhooks.py adds them when a run needs them. `init` notes the folder
when it is not the git dir's `hooks/` (FOLDER_NOTE), so they are found there with no git process.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from shiftgit.errors import UsageError
from shiftgit.repo import Repo

HOOKS = ("pre-commit", "commit-msg", "post-commit", "post-rewrite", "post-merge", "pre-push")
RUN_HOOKS = ("commit-msg", "post-commit")  # idle, they only exit: installed when first needed
MARK = b"installed by `shiftgit init --hooks git`"
LEGACY_MARK = b"\n# installed by shiftgit\n"  # the shims of shiftgit 0.1's placeholder
SAVED = ".pre-shiftgit"
FOLDER_NOTE = "hooks-folder"  # in the common git dir's shift/: the folder `init` put the shims in, when not hooks/
TEMPLATE = "git-hook.sh"
PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
INSTALL_HINT = ("pre-commit install --hook-type pre-commit --hook-type commit-msg --hook-type post-commit "
                "--hook-type post-rewrite --hook-type post-merge --hook-type pre-push")
HOOK_IDS = {"pre-commit": "shiftgit-gate", "commit-msg": "shiftgit-commit-msg",
            "post-commit": "shiftgit-post-commit", "post-rewrite": "shiftgit-post-rewrite",
            "post-merge": "shiftgit-post-merge", "pre-push": "shiftgit-push-gate"}
HOOK_NAMES = {"pre-commit": "shiftgit commit gate", "commit-msg": "shiftgit trailers",
              "post-commit": "shiftgit handoff note", "post-rewrite": "shiftgit rewrite notes",
              "post-merge": "shiftgit merge note", "pre-push": "shiftgit push gate"}


def hooks_dir(repo: Repo) -> Path:
    path = repo.git("rev-parse", "--git-path", "hooks").strip()
    return Path(path) if os.path.isabs(path) else repo.root / path


def template(name: str = TEMPLATE) -> str:
    """The source checkout's `hooks/NAME` when run from one, else the copy shipped in the wheel."""
    source = Path(__file__).resolve().parents[2] / "hooks" / name
    if source.is_file():
        return source.read_text(encoding="utf-8")
    from importlib.resources import files

    return files("shiftgit.hookfiles").joinpath(name).read_text(encoding="utf-8")


def launcher_text(name: str, python: str, package: str | None = None) -> str:
    """The shell template `hooks/NAME` with the interpreter and the folder holding the shiftgit package filled in:
    what a script starting `python -S` with that folder on `sys.path` records (git hook shims, agents/launcher.py)."""
    where = package or str(Path(__file__).resolve().parents[2])  # the folder holding this shiftgit package
    import shlex

    return template(name).replace("@PYTHON@", shlex.quote(python)).replace("@PACKAGE@", shlex.quote(where))


def recorded_python(text: str) -> str | None:
    """The interpreter a script `launcher_text` rendered records (its `python=` line), as the shell reads it."""
    return recorded(text, "python")


def recorded(text: str, name: str) -> str | None:
    import shlex

    for line in text.splitlines():
        if line.startswith(f"{name}="):
            words = shlex.split(line[len(name) + 1:], comments=True)
            return words[0] if words else None
    return None


def shim(hook: str, python: str, package: str | None = None) -> str:
    """The shim of `hook`; `package`: the directory the shim puts on `sys.path` (it runs `python -S`)."""
    return launcher_text(TEMPLATE, python, package).replace("@HOOK@", hook)


# -- plain git hooks --------------------------------------------------------------------------------

def install_git_hooks(repo: Repo, python: str | None = None, *, idle: bool = False) -> list[str]:
    """Write the shims; keep and chain hooks that were there. Idempotent. `idle` (no run is active): RUN_HOOKS
    only where shims of ours are already (updated), the rest when a run needs them (git/runhooks.py)."""
    interpreter = os.path.abspath(python or sys.executable)
    folder = hooks_dir(repo)
    check_hooks(folder)  # before anything is written
    folder.mkdir(parents=True, exist_ok=True)
    (repo.git_dir / "shift").mkdir(exist_ok=True)  # where the shims leave notes for each other
    _note_folder(repo, folder)
    # a folder in the work tree (core.hooksPath): a start adding hooks there would add files to commit
    idle = idle and (_inside(folder, repo.common_dir) or not _inside(folder, repo.root))
    wanted = [hook for hook in HOOKS if not idle or hook not in RUN_HOOKS or is_ours(folder / hook)]
    lines = put_shims(folder, wanted, interpreter)
    later = [hook for hook in HOOKS if hook not in wanted]
    lines.append(f"git hooks in {folder}: {', '.join(wanted)} (run by {interpreter})"
                 + (f"; {', '.join(later)} when a run starts" if later else ""))
    return lines


def _note_folder(repo: Repo, folder: Path) -> None:
    note = repo.common_dir / "shift" / FOLDER_NOTE
    if folder.resolve() == (repo.common_dir / "hooks").resolve():
        note.unlink(missing_ok=True)
        return
    note.parent.mkdir(exist_ok=True)
    write_executable(note, f"{folder.resolve()}\n", 0o644)


def check_hooks(folder: Path) -> None:
    """Refuse (exit 2, before `init` writes anything) a hook of someone else's that cannot be kept: its
    `.pre-shiftgit` slot is taken already (a tool rewrote the hook after an earlier `init`). Run hooks too, though
    an idle `init` leaves them out: the first run would fail to install them."""
    for hook in HOOKS:
        problem = _conflict(folder, hook)
        if problem:
            raise UsageError(problem)


def _conflict(folder: Path, hook: str) -> str | None:
    target, saved = folder / hook, folder / (hook + SAVED)
    if _is_foreign(target) and os.path.lexists(saved):
        return (f"{target} is not shiftgit's and {saved.name} exists too; merge them into {saved.name} by hand, "
                f"remove {target.name}, then run `shiftgit init --hooks git`")
    return None


def put_shims(folder: Path, hooks: list[str], interpreter: str, package: str | None = None) -> list[str]:
    lines = []
    for hook in hooks:
        target = folder / hook
        if _is_foreign(target):
            saved = folder / (hook + SAVED)
            problem = _conflict(folder, hook)
            if problem:
                raise UsageError(problem)
            os.replace(target, saved)
            lines.append(f"kept your {hook} hook as {saved}; shiftgit's {hook} runs it first")
        write_executable(target, shim(hook, interpreter, package))
    return lines


def is_ours(target: Path) -> bool:
    """A shim of ours is there (one read of its head)."""
    try:
        with open(target, "rb") as handle:
            head = handle.read(512)
    except OSError:  # missing, a dangling symlink, a directory
        return False
    return MARK in head or LEGACY_MARK in head


def _inside(folder: Path, root: Path) -> bool:
    try:
        folder.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def read_head(path: Path, size: int) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(size).decode("utf-8", "replace")
    except OSError:
        return ""


def _is_foreign(target: Path) -> bool:
    if not os.path.lexists(target):
        return False
    try:
        head = target.read_bytes()[:512]
    except OSError:  # a dangling symlink, a directory: not ours, keep it
        return True
    return MARK not in head and LEGACY_MARK not in head


def write_executable(target: Path, text: str, mode: int = 0o755) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(mode)
    os.replace(tmp, target)


# -- the pre-commit framework -----------------------------------------------------------------------

def local_block(indent: str) -> str:
    """shiftgit's hooks as a `repo: local` entry of `repos:` (language system: `shiftgit` on PATH)."""
    lines = [f"{indent}# shiftgit: commit gate, trailers, handoff notes (added by `shiftgit init --hooks pre-commit`)",
             f"{indent}- repo: local", f"{indent}  hooks:"]
    for hook, hook_id in HOOK_IDS.items():
        lines += [f"{indent}    - id: {hook_id}", f"{indent}      name: {HOOK_NAMES[hook]}",
                  f"{indent}      entry: shiftgit hook {hook}", f"{indent}      language: system"]
        if hook != "commit-msg":  # commit-msg gets the message file's name
            lines.append(f"{indent}      pass_filenames: false")
        lines += [f"{indent}      always_run: true", f"{indent}      stages: [{hook}]"]
    return "\n".join(lines) + "\n"


def new_config() -> str:
    return ("# pre-commit configuration (https://pre-commit.com)\nminimum_pre_commit_version: 3.2.0\n"
            "default_install_hook_types: [pre-commit, commit-msg, post-commit, post-rewrite, post-merge, pre-push]\n"
            "repos:\n"
            + local_block("  "))


def install_pre_commit(repo: Repo) -> list[str]:
    """Add shiftgit's hooks to the repo's .pre-commit-config.yaml (created if absent). Idempotent."""
    path = repo.root / PRE_COMMIT_CONFIG
    if path.is_symlink():  # a committed link could lead anywhere: never written through
        raise UsageError(f"refusing to write {PRE_COMMIT_CONFIG}: it is a symbolic link; replace it with a file, "
                         "then run `shiftgit init --hooks pre-commit` again")
    after = [f"then install the hook types: {INSTALL_HINT}", "(the hooks run `shiftgit` from PATH)"]
    if not path.exists():
        path.write_text(new_config(), encoding="utf-8")
        return [f"created {PRE_COMMIT_CONFIG} with shiftgit's hooks (commit it)", *after]
    text = path.read_text(encoding="utf-8")
    if _has_our_hooks(text):
        return [f"kept {PRE_COMMIT_CONFIG}: shiftgit's hooks are in it", *after]
    added = _appended(text)
    if added is None or not _has_our_hooks(added):
        return [f"could not add shiftgit's hooks to {PRE_COMMIT_CONFIG} safely; add this under `repos:`:",
                local_block("  ").rstrip("\n"), *after]
    path.write_text(added, encoding="utf-8")
    return [f"added shiftgit's hooks to {PRE_COMMIT_CONFIG} (commit it)", *after]


def _appended(text: str) -> str | None:
    """`text` with our block appended to `repos:` when that list ends the file (block style); else None."""
    import re

    lines = text.rstrip("\n").split("\n")
    starts = [i for i, line in enumerate(lines) if re.match(r"^repos:\s*(#.*)?$", line)]
    if len(starts) != 1:
        return None
    tail = lines[starts[0] + 1:]
    if any(re.match(r"^[^\s#-]", line) for line in tail):
        return None  # another top-level key follows `repos:`
    items = [m.group(1) for line in tail if (m := re.match(r"^(\s*)- ", line))]
    indent = items[0] if items else "  "
    return text.rstrip("\n") + "\n" + local_block(indent)


def _has_our_hooks(text: str) -> bool:
    try:
        import yaml
    except ImportError:  # pragma: no cover - pre-commit (a dependency) brings PyYAML
        return all(f"id: {hook_id}" in text for hook_id in HOOK_IDS.values())
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    repos = document.get("repos") if isinstance(document, dict) else None
    ids = {hook.get("id") for entry in _listed(repos) if isinstance(entry, dict)
           for hook in _listed(entry.get("hooks")) if isinstance(hook, dict)}
    return set(HOOK_IDS.values()) <= ids


def _listed(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def config_problem(text: str) -> str | None:
    """Why pre-commit could not read `.pre-commit-config.yaml` as TEXT (`repos` not a list, not YAML); None if it can.
    An empty file, or one without `repos:`, is left to the append (which says what to add when it cannot)."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - pre-commit (a dependency) brings PyYAML
        return None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return "it is not valid YAML" + (f" (line {mark.line + 1})" if mark is not None else "")
    if document is None:
        return None
    if not isinstance(document, dict):
        return f"it holds {_kind(document)}, not a mapping with a `repos:` list"
    repos = document.get("repos")
    if repos is not None and not isinstance(repos, list):
        return f"its `repos:` is {_kind(repos)}, not a list"
    bad = [i for i, entry in enumerate(repos or []) if not isinstance(entry, dict)
           or not isinstance(entry.get("hooks", []), list)]
    return f"its `repos:` entry #{bad[0] + 1} is not a repo with a `hooks:` list" if bad else None


def _kind(value: object) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), "a number")


def check_config(repo: Repo) -> None:
    """Refuse (before `init` writes anything) a `.pre-commit-config.yaml` pre-commit could not read."""
    path = repo.root / PRE_COMMIT_CONFIG
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() and not path.is_symlink() else None
    except (OSError, UnicodeDecodeError):
        text = None
    problem = config_problem(text) if text is not None else None
    if problem:
        raise UsageError(f"{PRE_COMMIT_CONFIG}: {problem}; make it a mapping whose `repos:` is a list (e.g. `repos: "
                         "[]`), then run `shiftgit init --hooks pre-commit` again; nothing was written")
