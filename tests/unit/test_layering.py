"""The package's layers import one way: each area only from the areas below it, pytest only on the pytest side.

Read from the source (every import statement, function-level ones included), so a wrong-way import fails here
before it becomes an import cycle at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_nosync

PACKAGE = Path(pytest_nosync.__file__).parent

# Lowest first; an area may import itself and any area before it. A head names a module or package; a dotted head
# (`census.testers`) places a part of a package above the rest of it, the longest head naming a module deciding.
AREAS = (
    ("data", ("findings", "checks", "scenarios", "ids", "hints", "patching", "source_identity")),
    ("profiling", ("profiling",)),
    ("emulation", ("emulation",)),
    (
        "core",
        (
            "attribution",
            "policy",
            "detection.guard_options",
            "render",
            "run_report",
            "compare",
            "baseline",
            "detection.devices",
            "step_cost",
            "cli_errors",
            "option_table",
            "census",
        ),
    ),
    ("detectors", ("detection.detectors",)),
    ("guard", ("detection", "annotate")),
    ("suite", ("suite",)),
    # the census's driving part: diffusers' tester classes built and called through the suite's pipeline path
    (
        "census driving",
        ("census.testers", "census.modular", "census.untested", "census.modular_untested", "census.building"),
    ),
    ("plugin", ("plugin",)),
    ("suite tests", ()),  # pytest_nosync/suite/test_*.py: collected by pytest, they use the plugin's fixtures
    ("entry points", ("__init__", "__main__", "cli", "cli_profile")),
)
RANK = {name: i for i, (name, _) in enumerate(AREAS)}
PYTEST_AREAS = {"plugin", "suite tests"}


def area(module: str) -> str:
    """The area of a dotted module path inside the package (e.g. `detection.detectors.memory`)."""
    parts = module.split(".")
    if parts[0] == "suite" and parts[-1].startswith("test_"):
        return "suite tests"
    heads = (".".join(parts[:n]) for n in range(len(parts), 0, -1))  # the longest first
    return next(name for head in heads for name, named in AREAS if head in named)


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(module: str, path: Path, known: set[str], tree: ast.AST | None = None) -> list[tuple[str, int]]:
    """(imported module inside the package or 'pytest', line) for every import of `module` (in `tree`, else its
    file's)."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree or ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                if name == "pytest" or name.startswith("pytest_nosync"):
                    found.append((name.removeprefix("pytest_nosync").lstrip(".") or "__init__", node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.startswith("pytest_nosync"):
                target = node.module.removeprefix("pytest_nosync").lstrip(".")
            elif node.module == "pytest":
                found.append(("pytest", node.lineno))
                continue
            else:
                continue
            for alias in node.names:  # `from . import devices` imports the module devices
                sub = f"{target}.{alias.name}" if target else alias.name
                found.append((sub if sub in known else target or "__init__", node.lineno))
    return found


ALL = modules()
EDGES = [(m, imported, line) for m, path in ALL.items() for imported, line in imports(m, path, set(ALL))]


def test_every_module_has_an_area() -> None:
    assert all(area(m) for m in ALL)


@pytest.mark.parametrize("module", sorted(ALL))
def test_imports_go_one_way(module: str) -> None:
    wrong = [
        f"{module} ({area(module)}) imports {imported} ({area(imported)}) at line {line}"
        for source, imported, line in EDGES
        if source == module and imported != "pytest" and RANK[area(imported)] > RANK[area(module)]
    ]
    assert not wrong, "\n".join(wrong)


def test_pytest_is_imported_only_by_the_pytest_side() -> None:
    importing = sorted({m for m, imported, _ in EDGES if imported == "pytest"})
    assert importing and all(area(m) in PYTEST_AREAS for m in importing), importing


def test_profiling_imports_only_plain_data() -> None:
    outside = {imported for m, imported, _ in EDGES if area(m) == "profiling" and area(imported) != "profiling"}
    assert outside <= {"findings"}, outside


def test_detectors_know_the_guard_only_through_the_step_context() -> None:
    used = {imported for m, imported, _ in EDGES if area(m) == "detectors"}
    assert not {i for i in used if area(i) in ("guard", "suite", "plugin")}, used


def test_the_command_line_imports_nothing_of_pytests_side() -> None:
    """`python -m pytest_nosync` reads reports, traces and the option table; it printed the options page from
    plugin/options, and so stood above all of pytest's side. The table is data of its own now (option_table)."""
    through = {(m, imported) for m, imported, _ in EDGES if m in ("cli", "cli_profile") and area(imported) == "plugin"}
    assert not through, through


def _runtime_edges() -> dict[str, set[str]]:
    """module → the package modules it imports at run time (function-level imports included; `if TYPE_CHECKING:`
    blocks left out, as they never run)."""
    graph: dict[str, set[str]] = {m: set() for m in ALL}
    for module, path in ALL.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = [ast.Pass()]  # imported only for type checkers
        graph[module] = {imported for imported, _ in imports(module, path, set(ALL), tree) if imported in ALL} - {
            module
        }
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_counting_imports_inside_functions() -> None:
    """An import inside a function that closes a cycle works only because of when it runs: a cycle hides an order
    the modules depend on. Here none is left."""
    assert _cycles(_runtime_edges()) == []


def test_the_cycle_finder_finds_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
