"""The package tree is the architecture: imports run one way, down the layers, with no circles.

Read from the source (an AST walk), so the rule holds for imports inside functions too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import tomllib

PACKAGE = Path(__file__).resolve().parents[1] / "shiftgit"

# Higher layers may import lower ones, never the reverse; packages on one rank do not import each other.
RANKS = {
    "base": 0,
    "ledger": 1, "evidence": 1,
    "git": 2, "effects": 2,
    "runs": 3,
    "recovery": 4,
    "agents": 5,
    "cli": 6,
    "entry": 7,
}
BASE_MODULES = {"errors", "repo", "procs", "textsafe", "tuples", "digests", "rawjson", "packs", "objectdir", "staging",
                "packer", "memo", "reflocks", "__init__"}
MAX_LINES = 350


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in BASE_MODULES:
        return "base"
    if parts[1] == "__main__":
        return "entry"
    return parts[1]


def imports(path: Path, module: str) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("shiftgit"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1 packages
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            if not base.startswith("shiftgit"):
                continue
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in ALL else base


ALL = modules()


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for name, path in ALL.items():
        edges[name] = {target for target in imports(path, name) if target in ALL and target != name}
    return edges


def test_every_import_runs_down_the_layers() -> None:
    wrong = []
    for source, targets in graph().items():
        for target in targets:
            a, b = layer(source), layer(target)
            if target == "shiftgit":
                continue
            if a != b and RANKS[a] <= RANKS[b]:
                wrong.append(f"{source} ({a}) imports {target} ({b})")
    assert not wrong, "imports against the layer rule:\n" + "\n".join(sorted(wrong))


def test_there_are_no_import_circles() -> None:
    edges = graph()
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*trail[trail.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import circles:\n" + "\n".join(cycles)


def test_only_the_cli_imports_click() -> None:
    users = {name for name, path in ALL.items()
             if any(n in ("click",) for n in _top_imports(path)) and layer(name) != "cli"}
    assert not users, f"click imported outside shiftgit/cli: {sorted(users)}"


def _top_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_no_module_is_over_the_size_guideline() -> None:
    long = {name: n for name, path in ALL.items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_every_subpackage_is_in_the_wheel() -> None:
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    listed = set(pyproject["tool"]["setuptools"]["packages"])
    packages = {name for name, path in ALL.items() if path.name == "__init__.py"}
    assert packages <= listed, f"missing from pyproject's packages: {sorted(packages - listed)}"
