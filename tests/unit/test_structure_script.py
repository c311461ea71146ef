"""benchmarks/structure.py: what it counts as an import below module level, and how it counts layers."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "structure.py"
spec = importlib.util.spec_from_file_location("structure", SCRIPT)
structure = importlib.util.module_from_spec(spec)
spec.loader.exec_module(structure)

SOURCE = """
import os
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    import json
def f():
    import re
    def g():
        from pathlib import Path
class C:
    import sys
"""


def test_imports_inside_functions_and_classes_are_below_module_level_type_checking_is_not() -> None:
    assert structure.imports_below_module_level(ast.parse(SOURCE)) == 3


def test_layers_are_the_longest_chain_with_a_cycle_as_one_layer() -> None:
    assert structure.layers({"a": {"b"}, "b": {"c"}, "c": set()}) == 3
    assert structure.layers({"a": {"b"}, "b": {"c"}, "c": {"b"}, "d": set()}) == 2


def test_the_package_is_measured() -> None:
    modules = structure.graph(room=False)
    assert "plugin.session" in modules and structure.layers(modules) > 1
