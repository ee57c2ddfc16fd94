"""The packages are layers, and imports run one way.

    backtrack                     the run, repairs, trace, wire shapes, wrap, server, CLI
    providers   local_target      the drafters; the correcting model (never each other)
    grammars                      Grammar, checking, the errors' root, the shipped grammars

Within backtrack the subpackages are layers too:

    cli                           the command line (it starts the server)
    serve                         the HTTP server
    wrap                          the SDK clients with `grammar=`
    wire                          the OpenAI and Anthropic shapes, used by wrap and serve alike
    run                           options, the loop, the driver, guide()
    trace   repair   local_drafter   what a run did; edits at a cut; SmolLM2 as the drafter

Every import counts: at the top of a module, inside a function, under TYPE_CHECKING. Within the
project no two modules import each other, directly or around a longer loop. Tests and benchmarks
share tests/support (servers, scripted APIs, samplers), which imports neither; benchmarks import
nothing else of tests/. And no module is too long to read: see the size limits at the end.
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
    return {name for name in all_imports(path) if name.split(".")[0] in PACKAGES}


def all_imports(path: Path) -> set[str]:
    """Every module `path` imports, anywhere in it (absolute imports)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from grammars import shipped` imports grammars.shipped when that is a module.
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                names.add(sub if sub in MODULES else node.module)
    return names


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


# What each part of backtrack may import of backtrack, besides itself.
LAYERS: dict[str, frozenset[str]] = {
    "backtrack.trace": frozenset(),
    "backtrack.repair": frozenset(),
    "backtrack.local_drafter": frozenset(),
    "backtrack.run": frozenset({"backtrack.trace", "backtrack.repair", "backtrack.local_drafter"}),
    "backtrack.wire": frozenset({"backtrack.run", "backtrack.trace", "backtrack.local_drafter"}),
    "backtrack.wrap": frozenset({"backtrack.wire", "backtrack.run", "backtrack.trace"}),
    "backtrack.serve": frozenset({"backtrack.wire", "backtrack.run", "backtrack.trace"}),
    "backtrack.cli": frozenset(
        {"backtrack.serve", "backtrack.wire", "backtrack.run", "backtrack.trace"}
        | {"backtrack.local_drafter"}
    ),
    "backtrack.__main__": frozenset({"backtrack.cli"}),
    "backtrack": frozenset(
        {"backtrack.wrap", "backtrack.run", "backtrack.trace", "backtrack.local_drafter"}
    ),
}


def part_of(module: str) -> str:
    """The part of backtrack a module belongs to: its subpackage, or itself."""
    return ".".join(module.split(".")[:2])


BACKTRACK = sorted(name for name in MODULES if name.split(".")[0] == "backtrack")


@pytest.mark.parametrize("module", BACKTRACK)
def test_a_backtrack_module_imports_only_its_part_and_those_below(module: str) -> None:
    part = part_of(module)
    allowed = LAYERS[part] | {part}
    inside = {name for name in GRAPH[module] if name.split(".")[0] == "backtrack"}
    upward = sorted(name for name in inside if part_of(name) not in allowed)
    assert not upward, f"{module} imports {upward}: {part} may import only {sorted(allowed)}"


def test_every_part_of_backtrack_has_its_layer() -> None:
    assert {part_of(name) for name in BACKTRACK} == set(LAYERS)


def test_tests_and_benchmarks_share_only_tests_support() -> None:
    wrong: list[str] = []
    for path in sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]):
        source = path.relative_to(ROOT).as_posix()
        for name in all_imports(path):
            top = name.split(".")[:2]
            if source.startswith("tests/support/") and (
                top[0] == "benchmarks" or (top[0] == "tests" and top[1:] != ["support"])
            ):
                wrong.append(
                    f"{source} imports {name} (support imports neither tests nor benchmarks)"
                )
            if source.startswith("benchmarks/") and top[0] == "tests" and top[1:] != ["support"]:
                wrong.append(f"{source} imports {name} (benchmarks import only tests.support)")
            if name.split(".")[-1].startswith("test_"):
                wrong.append(f"{source} imports {name} (what tests share goes in tests.support)")
            if name.split(".")[0] in _SUPPORT_MODULES:
                wrong.append(f"{source} imports {name} (one way only: tests.support.{name})")
    assert not wrong, "\n".join(wrong)


_SUPPORT_MODULES = {p.stem for p in (ROOT / "tests" / "support").glob("*.py")} - {"__init__"}


def test_the_graph_is_read_from_the_tree() -> None:
    # The two tests above would pass on an empty graph: check the reader finds known edges.
    assert "grammars.errors" in GRAPH["providers.errors"]
    assert "grammars.shipped" in GRAPH["grammars.grammar"]
    assert {"providers.base", "backtrack.trace.record"} <= GRAPH["backtrack.run.loop"]
    assert all(name.split(".")[0] in PACKAGES for deps in GRAPH.values() for name in deps)
    assert "tests.support.servers" in all_imports(ROOT / "benchmarks" / "bench_serve.py")


# Size limits for the packages' code, in lines (blank lines and docstrings count).
MAX_MODULE, MAX_CLASS, MAX_FUNCTION = 400, 250, 50
# Each one over its limit, and why it reads better whole.
CLEARER_WHOLE: dict[str, str] = {
    "local_target.session:TargetSession": "one request's state and its invariants (the KV cache "
    "holds exactly its ids, the matcher its text); each method is a move that keeps them, and a "
    "split would hand the state to a second class",
    "grammars.grammar:Grammar": "one constructor per kind of spec (Lark text, file, shipped name, "
    "JSON schema, regex, guidance, coerce) and the checks on the compiled grammar; each is short, "
    "and they share the constructor's limits and matchers",
    "backtrack.serve.guided:_stream": "its event generator shares the run's local state (the "
    "run, the model, the usage so far); apart, it would take seven parameters",
}


def _over_limits() -> dict[str, int]:
    over: dict[str, int] = {}
    for name, path in MODULES.items():
        source = path.read_text(encoding="utf-8")
        if len(source.splitlines()) > MAX_MODULE:
            over[name] = len(source.splitlines())
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                limit = MAX_CLASS if isinstance(node, ast.ClassDef) else MAX_FUNCTION
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    over[f"{name}:{node.name}"] = length
    return over


def test_no_module_class_or_function_is_over_its_size_limit() -> None:
    over = {name: n for name, n in _over_limits().items() if name not in CLEARER_WHOLE}
    assert not over, f"over the limits ({MAX_MODULE}/{MAX_CLASS}/{MAX_FUNCTION} lines): {over}"


def test_each_exception_to_the_size_limits_is_still_needed() -> None:
    stale = sorted(set(CLEARER_WHOLE) - set(_over_limits()))
    assert not stale, f"within the limits now, drop them from CLEARER_WHOLE: {stale}"
