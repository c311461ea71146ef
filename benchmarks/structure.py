"""The package's structure, measured from its source: the numbers of docs/layout.md's "Measured" paragraph.

    python benchmarks/structure.py [--most 10]

- imports below module level: an AST count of the import statements inside a function or class body (an
  `if TYPE_CHECKING:` block, like any statement of the module's own body, is module level), per module;
- import cycles, every import counted (function-level and type-only included), between modules and between rooms
  (a top-level module, or a top-level folder as one room);
- import layers at both levels: a module stands one layer above the highest it imports, a cycle sharing one.

The import graph is the one tests/unit/test_layering.py reads (its `modules`, `imports` and cycle finder).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tests package

from tests.unit.test_hidden_imports import imports_below_module_level
from tests.unit.test_layering import ALL, _cycles, imports


def graph(room: bool) -> dict[str, set[str]]:
    """Module (or room) → what it imports inside the package, every import counted."""

    def name(module: str) -> str:
        return module.split(".")[0] if room else module

    edges: dict[str, set[str]] = {name(m): set() for m in ALL}
    for module, path in ALL.items():
        edges[name(module)] |= {name(i) for i, _ in imports(module, path, set(ALL)) if i in ALL} - {name(module)}
    return edges


def layers(edges: dict[str, set[str]]) -> int:
    """How many layers the graph stands in: the longest chain of imports, a cycle counted as one node."""
    component = {node: node for node in edges}
    for cycle in _cycles(edges):
        component.update(dict.fromkeys(cycle, cycle[0]))
    below: dict[str, set[str]] = {}
    for node, targets in edges.items():
        below.setdefault(component[node], set()).update(component[t] for t in targets)
    for node, targets in below.items():
        targets.discard(node)
    height: dict[str, int] = {}

    def layer(node: str) -> int:
        if node not in height:
            height[node] = 1 + max((layer(t) for t in below[node]), default=0)
        return height[node]

    return max(layer(node) for node in below)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--most", type=int, default=10, help="modules listed with their imports below module level")
    args = parser.parse_args()
    hidden = Counter(
        {m: n for m, p in ALL.items() if (n := imports_below_module_level(ast.parse(p.read_text(encoding="utf-8"))))}
    )
    print(f"modules: {len(ALL)}")
    print(f"imports below module level: {sum(hidden.values())} in {len(hidden)} modules")
    for module, n in hidden.most_common(args.most):
        print(f"  {n:4d}  {module}")
    for level, room in (("modules", False), ("rooms", True)):
        edges = graph(room)
        cycles = _cycles(edges)
        print(f"{level}: {len(edges)}, {sum(map(len, edges.values()))} import edges, {layers(edges)} layers, ", end="")
        print(f"{len(cycles)} import cycles (type-only included)")
        for cycle in cycles:
            print(f"  cycle: {' '.join(cycle)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
