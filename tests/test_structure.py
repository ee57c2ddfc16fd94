"""The packages are layers, and imports run one way.

    backtrack                     the loop, guide, wrap, trace, HTML, CLI
    providers   local_target      the drafters; the correcting model (never each other)
    grammars                      Grammar, checking, the errors' root, the shipped grammars

Every import counts: at the top of a module, inside a function, under TYPE_CHECKING. Within the
project no two modules import each other, directly or around a longer loop.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("grammars", "providers", "local_target", "backtrack")
# What each package may import of the project, besides itself.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "grammars": frozenset(),
    "providers": frozenset({"grammars"}),
    "local_target": frozenset({"grammars"}),
    "backtrack": frozenset({"grammars", "providers", "local_target"}),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Every project module `path` imports, anywhere in it."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from grammars import shipped` imports grammars.shipped when that is a module.
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                names.add(sub if sub in MODULES else node.module)
    return {name for name in names if name.split(".")[0] in PACKAGES}


MODULES = {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}
GRAPH = {name: imported(path) - {name} for name, path in MODULES.items()}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_its_own_package_and_those_below(module: str) -> None:
    package = module.split(".")[0]
    allowed = MAY_IMPORT[package] | {package}
    upward = sorted(name for name in GRAPH[module] if name.split(".")[0] not in allowed)
    assert not upward, f"{module} imports {upward}: {package} may import only {sorted(allowed)}"


def test_no_import_cycles_between_modules() -> None:
    # A package's __init__ re-exports its modules; a module importing its own package's __init__
    # is a loop through it, so __init__ counts like any module.
    done: set[str] = set()
    path: list[str] = []

    def visit(name: str) -> None:
        if name in path:
            loop = [*path[path.index(name) :], name]
            pytest.fail(f"import cycle: {' -> '.join(loop)}")
        if name in done or name not in GRAPH:
            return
        path.append(name)
        for child in sorted(GRAPH[name]):
            visit(child)
        path.pop()
        done.add(name)

    for name in sorted(GRAPH):
        visit(name)


def test_the_graph_is_read_from_the_tree() -> None:
    # The two tests above would pass on an empty graph: check the reader finds known edges.
    assert "grammars.errors" in GRAPH["providers.errors"]
    assert "grammars.shipped" in GRAPH["grammars.grammar"]
    assert {"providers.base", "backtrack.trace.record"} <= GRAPH["backtrack.run.loop"]
    assert all(name.split(".")[0] in PACKAGES for deps in GRAPH.values() for name in deps)
