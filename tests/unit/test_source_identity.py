"""The same line across versions of a file: package path, function, normalized code, occurrence."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_nosync import source_identity as si

SOURCE = """
import torch


class Scheduler:
    def step(self, x):
        y = x.to(self.device)  # copy
        z = x.to(self.device)
        return y, z

    def other(self, x):
        return x.to(self.device)


def helper(x):
    y = x.to(self.device)
    return y
"""


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "lib").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path / "lib"


def _line(path: Path, text: str, nth: int = 0) -> int:
    lines = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    return lines[nth]


def test_normalize_drops_comments_indentation_and_runs_of_spaces() -> None:
    assert si.normalize("    y  =  x.to(dev)   # a copy ") == "y = x.to(dev)"
    assert si.normalize("s = '# not a comment'") == "s = '# not a comment'"


def test_identity_of_a_line(package: Path) -> None:
    path = package / "sched.py"
    path.write_text(SOURCE)
    first = si.identify(str(path), _line(path, "y = x.to(self.device)"))
    assert (first.file, first.function, first.code, first.occurrence) == (
        "lib/sched.py",
        "Scheduler.step",
        "y = x.to(self.device)",
        0,
    )
    assert si.identify(str(path), _line(path, "return x.to")).function == "Scheduler.other"
    assert si.identify(str(path), _line(path, "y = x.to(self.device)", 1)).function == "helper"


def test_identical_lines_of_one_function_stay_apart(package: Path) -> None:
    path = package / "twice.py"
    path.write_text("def f(x, d):\n    a = x.to(d)\n    b = 1\n    a = x.to(d)\n    return a\n")
    assert [si.identify(str(path), n).occurrence for n in (2, 4)] == [0, 1]
    assert si.find(str(path), "f", "a = x.to(d)", 1) == 4


def test_the_identity_survives_lines_added_above(package: Path) -> None:
    path = package / "moving.py"
    path.write_text(SOURCE)
    before = si.identify(str(path), _line(path, "z = x.to"))
    path.write_text("# a licence header\n# of three\n# lines\n" + SOURCE)
    after = si.identify(str(path), _line(path, "z = x.to"))
    assert after.line == before.line + 3
    assert (after.file, after.function, after.code, after.occurrence) == (
        before.file,
        before.function,
        before.code,
        before.occurrence,
    )
    assert si.find(str(path), before.function, before.code, before.occurrence) == after.line


def test_locate_a_package_path_on_sys_path(package: Path) -> None:
    (package / "x.py").write_text("a = 1\n")
    assert si.locate_file("lib/x.py") == str(package / "x.py")
    assert si.locate_file("lib/missing.py") is None
    assert si.package_path("/somewhere/else/site-packages/diffusers/a.py") == "diffusers/a.py"
    assert sys.path  # (the fixture's entry is removed again by monkeypatch)
