"""An import below module level hides what a module uses from its header: one stays only where it keeps the plugin
cheap when off, a usage error quick, an optional dependency optional, or seconds of imports to the one command or
check that needs them, and it says which on its line or the line above (a run of imports in a row, above the first)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_nosync"
MOST = 80  # issue 47's goal (from 229): docs/layout.md's measured paragraph, benchmarks/structure.py


def imports_below_module_level(tree: ast.Module) -> int:
    """The import statements of `tree` inside a function or class body (benchmarks/structure.py's count)."""

    def count(node: ast.AST, inside: bool) -> int:
        here = isinstance(node, (ast.Import, ast.ImportFrom)) and inside
        nested = inside or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        return here + sum(count(child, nested) for child in ast.iter_child_nodes(node))

    return count(tree, False)


def uncommented(source: str) -> list[int]:
    """Lines of imports inside a function or class (`if TYPE_CHECKING:` is module level) whose run of imports has no
    comment on its first line or the line above it."""
    lines = source.splitlines()
    found: list[int] = []

    def commented(node: ast.stmt) -> bool:
        at = node.lineno - 1
        return "#" in lines[at] or (at > 0 and lines[at - 1].strip().startswith("#"))

    def visit(body: list[ast.stmt], inside: bool) -> None:
        previous: ast.stmt | None = None
        for node in body:
            is_import = isinstance(node, ast.Import | ast.ImportFrom)
            if is_import and inside:
                first_of_run = not isinstance(previous, ast.Import | ast.ImportFrom)
                if first_of_run and not commented(node):
                    found.append(node.lineno)
            previous = node
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            nested = inside or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(node, field, None)
                if isinstance(block, list):
                    visit([b for b in block if isinstance(b, ast.stmt)], nested)
                    for handler in block:
                        if isinstance(handler, ast.ExceptHandler):
                            visit(handler.body, nested)

    visit(ast.parse(source).body, False)
    return found


def test_every_import_below_module_level_says_why() -> None:
    missing = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in uncommented(path.read_text())
    ]
    assert missing == [], f"imports below module level without a comment saying why: {missing}"


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("def f():\n    import os\n", [2]),  # the bug twin: hidden, and no word why
        ("def f():\n    import os  # optional\n", []),
        ("def f():\n    # optional dependencies\n    import os\n    import sys\n", []),
        ("def f():\n    x = 1\n    import os\n    y = 2\n    import sys\n", [3, 5]),
        ("import os\nif TYPE_CHECKING:\n    import sys\n", []),
        ("class A:\n def f(self):\n  try:\n   import os\n  except OSError:\n   pass\n", [4]),
    ],
)
def test_the_rule_sees_a_hidden_import_without_a_comment(source: str, lines: list[int]) -> None:
    assert uncommented(source) == lines


def test_the_package_hides_at_most_its_bound_of_imports() -> None:
    counted = {
        str(path.relative_to(PACKAGE.parent)): n
        for path in sorted(PACKAGE.rglob("*.py"))
        if (n := imports_below_module_level(ast.parse(path.read_text())))
    }
    total = sum(counted.values())
    assert total <= MOST, f"{total} imports below module level (at most {MOST}): {counted}"


@pytest.mark.parametrize(
    ("source", "count"),
    [
        ("import os\nif TYPE_CHECKING:\n    import sys\n", 0),
        ("def f():\n    import os\n    from sys import path\n", 2),  # the bug twin: two hidden, both counted
        ("class A:\n    import os\n    def f(self):\n        import sys\n", 2),
    ],
)
def test_the_count_sees_every_import_inside_a_function_or_class(source: str, count: int) -> None:
    assert imports_below_module_level(ast.parse(source)) == count
