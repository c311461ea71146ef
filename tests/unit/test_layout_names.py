"""Every module of the package is named where a newcomer looks for it: docs/layout.md, or the docstring of its
folder's `__init__.py`.

Named means its name (a module's stem, a package's folder name) stands there as a word. A package's `__init__.py`
is named by its folder's name, in the places of the folder above it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest_nosync

PACKAGE = Path(pytest_nosync.__file__).parent
LAYOUT = PACKAGE.parent / "docs" / "layout.md"


def _docstring(folder: Path) -> str:
    init = folder / "__init__.py"
    return (ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or "") if init.exists() else ""


def unnamed(package: Path, layout: str) -> list[str]:
    """The modules and packages under `package` (paths relative to its parent) named neither in `layout` nor in
    the docstring of their folder's `__init__.py`."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "__init__.py":
            if path.parent == package:
                continue  # the package itself
            name, folder = path.parent.name, path.parent.parent
        else:
            name, folder = path.stem, path.parent
        word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
        if not (word.search(layout) or word.search(_docstring(folder))):
            found.append(path.relative_to(package.parent).as_posix())
    return found


def test_every_module_is_named_in_the_layout_or_its_folders_docstring() -> None:
    missing = unnamed(PACKAGE, LAYOUT.read_text(encoding="utf-8"))
    assert not missing, "named neither in docs/layout.md nor in their folder's __init__.py: " + ", ".join(missing)


def _tree(root: Path, *, orphan: bool) -> Path:
    package = root / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text('"""The package."""\n')
    (package / "named.py").write_text("")
    (package / "sub" / "__init__.py").write_text('"""Its modules: inner, the one inside."""\n')
    (package / "sub" / "inner.py").write_text("")
    if orphan:
        (package / "sub" / "orphan.py").write_text('"""Named in no docstring but its own."""\n')
        (package / "lost").mkdir()
        (package / "lost" / "__init__.py").write_text('"""A folder its parent does not name."""\n')
    return package


def test_a_module_named_nowhere_fails_with_its_path(tmp_path: Path) -> None:
    assert unnamed(_tree(tmp_path, orphan=True), "pkg/: named.py, sub/") == [
        "pkg/lost/__init__.py",
        "pkg/sub/orphan.py",
    ]


def test_a_tree_whose_modules_are_all_named_passes(tmp_path: Path) -> None:
    assert unnamed(_tree(tmp_path, orphan=False), "pkg/: named.py, sub/") == []
