"""Recording the code a block ran: what ran is in, what did not is out, state is restored, JSON round-trips."""

from __future__ import annotations

import cProfile
import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest

from pytest_nosync.census.executed_code import CodeSpan, ExecutedCode, RecorderBusy, record_executed

BACKENDS = ["setprofile"] + (["monitoring"] if hasattr(sys, "monitoring") else [])

WORK = """\
LIMIT = 3


def helper(x):
    return x + LIMIT


def entry(x):
    y = helper(x)
    return y * 2


def never_called():
    return 0


class Box:
    size = 2

    def grow(self):
        return self.size + 1


def boom():
    raise RuntimeError("boom")
"""

OUTSIDE = """\
def visit():
    return 1
"""


def load(path: Path, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "work.py").write_text(WORK)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "outside.py").write_text(OUTSIDE)
    return tmp_path / "pkg"


@pytest.fixture
def work(pkg: Path, request: pytest.FixtureRequest) -> types.ModuleType:
    return load(pkg / "work.py", f"nosync_work_{request.node.name.replace('[', '_').strip(']')}")


def names(record: ExecutedCode) -> set[str]:
    return {span.qualname for span in record.spans}


@pytest.mark.parametrize("backend", BACKENDS)
def test_records_what_ran_and_not_what_did_not(work: types.ModuleType, backend: str) -> None:
    with record_executed(backend) as record:
        for i in range(100):
            work.entry(i)
    file = str(Path(work.__file__).resolve())
    assert CodeSpan(file, "helper", 4, 5) in record.spans
    assert CodeSpan(file, "entry", 8, 10) in record.spans
    assert "never_called" not in names(record)
    assert record.backend == backend


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_later_block_records_the_same_code_again(work: types.ModuleType, backend: str) -> None:
    # sys.monitoring's DISABLE outlives a block: each block must see its code objects afresh.
    with record_executed(backend):
        work.entry(1)
    with record_executed(backend) as second:
        work.entry(1)
    assert {"entry", "helper"} <= names(second)


@pytest.mark.parametrize("backend", BACKENDS)
def test_state_is_restored_and_code_kept_when_the_block_raises(work: types.ModuleType, backend: str) -> None:
    before_profile = sys.getprofile()
    with pytest.raises(RuntimeError, match="boom"), record_executed(backend) as record:
        work.entry(1)
        work.boom()
    assert sys.getprofile() is before_profile
    if backend == "monitoring":
        assert all(sys.monitoring.get_tool(i) is None for i in (3, 4))
    assert {"entry", "boom"} <= names(record)


def test_an_existing_python_profiler_is_chained_and_put_back(work: types.ModuleType) -> None:
    theirs: list[str] = []

    def their_profiler(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call":
            theirs.append(frame.f_code.co_name)

    sys.setprofile(their_profiler)
    try:
        with record_executed("setprofile") as record:
            work.entry(1)
        assert sys.getprofile() is their_profiler
    finally:
        sys.setprofile(None)
    assert {"entry", "helper"} <= set(theirs)
    assert {"entry", "helper"} <= names(record)


def test_a_c_level_profiler_is_refused_not_silenced(work: types.ModuleType) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    if sys.getprofile() is None:  # 3.12+: cProfile is a sys.monitoring tool, no sys.setprofile user
        profiler.disable()
        pytest.skip("cProfile does not use sys.setprofile on this Python")
    try:
        with pytest.raises(RecorderBusy, match="C-level profiler"), record_executed("setprofile"):
            work.entry(1)
        still = sys.getprofile()
    finally:
        profiler.disable()
    assert still is profiler


@pytest.mark.skipif(not hasattr(sys, "monitoring"), reason="sys.monitoring is Python 3.12+")
def test_monitoring_refuses_when_every_free_tool_id_is_taken(work: types.ModuleType) -> None:
    for tool in (3, 4):
        sys.monitoring.use_tool_id(tool, "someone else")
    try:
        with pytest.raises(RecorderBusy, match="tool id"), record_executed("monitoring"):
            work.entry(1)
    finally:
        for tool in (3, 4):
            sys.monitoring.free_tool_id(tool)


def test_defs_are_every_function_of_the_file_not_class_bodies(work: types.ModuleType) -> None:
    with record_executed() as record:
        work.entry(1)
    defs = record.defs(str(Path(work.__file__).resolve()))
    assert defs == ((4, 5), (8, 10), (13, 14), (20, 21), (24, 25))  # helper, entry, never_called, grow, boom


def test_json_keeps_files_under_the_roots_and_round_trips(pkg: Path, work: types.ModuleType) -> None:
    outside = load(pkg.parent / "other" / "outside.py", "nosync_outside_json")
    with record_executed() as record:
        work.entry(1)
        outside.visit()
    data = json.loads(json.dumps(record.to_json([pkg])))
    assert list(data["files"]) == ["pkg/work.py"]
    assert data["files"]["pkg/work.py"]["ran"] == [["entry", 8, 10], ["helper", 4, 5]]
    assert len(data["files"]["pkg/work.py"]["blob"]) == 40
    back = ExecutedCode.from_json(data, [pkg])
    kept = {span for span in record.spans if span.file.startswith(str(pkg.resolve()))}
    assert back.spans == kept
    assert back.defs(str((pkg / "work.py").resolve())) == record.defs(str((pkg / "work.py").resolve()))


def test_json_is_read_back_under_a_root_of_the_same_name_elsewhere(tmp_path: Path, pkg: Path, work) -> None:
    # A record made on site-packages/diffusers reads back onto a checkout's src/diffusers.
    with record_executed() as record:
        work.entry(1)
    elsewhere = tmp_path / "checkout" / "src" / "pkg"
    back = ExecutedCode.from_json(record.to_json([pkg]), [elsewhere, tmp_path / "other"])
    assert {span.file for span in back.spans} == {str(elsewhere / "work.py")}
    assert ExecutedCode.from_json(record.to_json([pkg]), [tmp_path / "other"]).spans == frozenset()


@pytest.mark.skipif(not hasattr(sys, "monitoring"), reason="sys.monitoring is Python 3.12+")
def test_monitoring_records_beside_cprofile_which_keeps_its_calls(work: types.ModuleType) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        with record_executed("monitoring") as record:
            work.entry(1)
    finally:
        profiler.disable()
    assert {"entry", "helper"} <= names(record)
    assert "helper" in {getattr(entry.code, "co_name", "") for entry in profiler.getstats()}


def test_roots_keep_only_their_code_and_fix_its_functions_when_the_block_ends(pkg: Path, work) -> None:
    outside = load(pkg.parent / "other" / "outside.py", "nosync_outside_roots")
    with record_executed(roots=[pkg]) as record:
        work.entry(1)
        outside.visit()
    file = str((pkg / "work.py").resolve())
    assert record.files() == {file}
    (pkg / "work.py").write_text("\n\n" + WORK)  # moved down two lines after the run: the record keeps the old
    assert record.defs(file) == ((4, 5), (8, 10), (13, 14), (20, 21), (24, 25))
    assert record.to_json([pkg])["files"]["pkg/work.py"]["blob"] == _git_blob(WORK.encode())


def _git_blob(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
