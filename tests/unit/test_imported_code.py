"""Which file binds a name the recorded code imports (census.imported_code), read from the source as Python would
bind it: the last binding wins, a star import is searched for the name, a module imported under another name is a
module; and a record of the earlier format is read as no record (its tester runs once more and is recorded anew)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pytest_nosync.census.executed_code import ExecutedCode, _anchors, record_executed
from pytest_nosync.census.imported_code import imported_files


def package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def dependencies(root: Path, user: str) -> list[str]:
    """The files the code of `user` (a function in it that ran, lines 1-99) depends on, relative to the package."""
    file = str((root / user).resolve())
    found = imported_files({file: (((1, 99),), ((1, 99),))}, _anchors([root]))
    return sorted(str(Path(f).relative_to(root.resolve())) for f in found)


def test_a_name_bound_twice_is_the_last_binding(tmp_path: Path) -> None:
    root = package(tmp_path, {
        "first.py": "LIMIT = 1\n", "second.py": "TOP = 2\n",
        "order.py": "from .first import LIMIT as X\nfrom .second import TOP as X\n",
        "user.py": "from .order import X\n",
    })  # fmt: skip
    assert dependencies(root, "user.py") == ["second.py"]  # order.X is 2, from second.py


def test_a_star_import_is_searched_for_the_name_not_taken_for_the_first_with_stars(tmp_path: Path) -> None:
    root = package(tmp_path, {
        "c.py": "def helper():\n    return 0\n", "a.py": "from .c import *\n\n\ndef f():\n    return 1\n",
        "b.py": "LIMIT = 5\n", "reexp.py": "from .b import *\nfrom .a import *\n",
        "user.py": "from .reexp import LIMIT\n",
    })  # fmt: skip
    assert dependencies(root, "user.py") == ["b.py"]


def test_a_module_imported_under_another_name_and_re_exported_is_a_module(tmp_path: Path) -> None:
    root = package(tmp_path, {
        "sub/__init__.py": "", "sub/consts.py": "LIMIT = 1\n",
        "face.py": "import pkg.sub.consts as consts\n", "user.py": "from .face import consts\n",
    })  # fmt: skip
    assert dependencies(root, "user.py") == ["sub/consts.py"]


def test_an_import_no_file_can_answer_is_no_dependency_and_no_error(tmp_path: Path) -> None:
    """A name too long for the file system once raised OSError from the recording's end: the census item errored."""
    root = package(tmp_path, {"user.py": f"from . import {'x' * 300}\nfrom ... import far\n"})
    assert dependencies(root, "user.py") == []


def test_a_record_of_the_earlier_format_is_no_record(tmp_path: Path) -> None:
    """Its files lack the module-level data they import: read as unrecorded, its tester runs and is recorded anew."""
    with pytest.raises(ValueError, match="version 1 is not 2"):
        ExecutedCode.from_json({"version": 1, "backend": "monitoring", "files": {}}, [tmp_path])


def test_an_import_in_a_method_that_never_ran_is_no_dependency_where_its_class_body_ran(tmp_path: Path) -> None:
    """A module first imported inside the record runs its class bodies there; their spans cover the methods, which
    did not run (the rule `touched` reads the record's functions by)."""
    boxes = "class Box:\n    size = 2\n\n    def grow(self):\n        from .consts import LIMIT\n\n"
    boxes += "        return LIMIT\n"
    root = package(tmp_path, {"consts.py": "LIMIT = 1\n", "boxes.py": boxes})
    spec = importlib.util.spec_from_file_location("nosync_boxes_class_body", root / "boxes.py")
    assert spec and spec.loader
    with record_executed(roots=[root]) as record:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert {span.qualname for span in record.spans} == {"<module>", "Box"}
    assert record.imported == frozenset()
