"""A checking run freezes what collection imported and unfreezes it at its end (plugin.heap_freeze): the growth
check's collections then scan what the tests made, also where the process had frozen objects of its own before the
run, which the check's block keeps (the device's Python 3.12 starts with 375 frozen: every collection of the suite's
growth checks scanned the whole heap)."""

from __future__ import annotations

import gc
import json

import pytest

SEES = """
import gc, json, pathlib

def test_sees():
    pathlib.Path(__file__).with_name("frozen.json").write_text(json.dumps(gc.get_freeze_count()))
"""


def _frozen_in_a_test(pytester: pytest.Pytester, *args: str) -> int:
    pytester.makepyfile(test_sees=SEES)
    pytester.runpytest(*args, "-p", "no:cacheprovider").assert_outcomes(passed=1)
    return json.loads((pytester.path / "frozen.json").read_text())


def test_a_checking_run_freezes_what_collection_imported_and_unfreezes_it_at_its_end(pytester: pytest.Pytester) -> None:
    assert gc.get_freeze_count() == 0
    assert _frozen_in_a_test(pytester, "--nosync") > 1000  # torch, diffusers and the plugin's imports among them
    assert gc.get_freeze_count() == 0


def test_a_run_that_checks_nothing_freezes_nothing(pytester: pytest.Pytester) -> None:
    assert _frozen_in_a_test(pytester) == 0


def test_objects_the_process_froze_before_the_run_are_not_all_a_test_sees_frozen(pytester: pytest.Pytester) -> None:
    """Bug twin: with objects frozen before the run (as the device's interpreter starts), the growth check kept that
    freeze and scanned everything made since at every step end; the run's own freeze now covers collection's."""
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        assert _frozen_in_a_test(pytester, "--nosync") > before + 1000
    finally:
        gc.unfreeze()


BUILT = """
import gc, json, pathlib
import pytest

@pytest.mark.parametrize("nosync_target", ["flux"], indirect=True)
def test_built(nosync_pipeline):
    frozen = not any(o is nosync_pipeline for o in gc.get_objects())  # a frozen object is in no generation
    pathlib.Path(__file__).with_name("frozen.json").write_text(json.dumps(frozen))
"""


def test_a_suite_pipeline_lives_for_the_run_and_is_frozen_for_it(pytester: pytest.Pytester) -> None:
    """Bug twin: a pipeline the suite builds is kept to the run's end, with the diffusers and transformers modules its
    build imported, and every full collection of the growth check scanned them (two seconds a growth test on an H200).
    A checking run now freezes them after the build (without --nosync the fixture builds nothing)."""
    pytester.makepyfile(test_built=BUILT)
    pytester.runpytest("--nosync", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert json.loads((pytester.path / "frozen.json").read_text()) is True
    assert gc.get_freeze_count() == 0  # the run unfroze it at its end


IMPORTS_LATE = """
import gc, importlib, json, pathlib
from pytest_nosync import nosync_guard

def test_imports_after_collection():
    for i in range(COUNT):
        importlib.import_module(f"late.m{i}")

def test_a_block_after_them():
    import late.m0
    with nosync_guard(checks=("alloc_growth",), backend="emulate") as g, g.step():
        pass
    frozen = not any(o is late.m0.f for o in gc.get_objects())  # a frozen object is in no generation
    pathlib.Path(__file__).with_name("frozen.json").write_text(json.dumps(frozen))
"""


@pytest.mark.parametrize("more", [20, -95])
def test_modules_a_test_imported_after_collection_are_frozen_for_the_run_at_the_next_block(
    pytester: pytest.Pytester, more: int
) -> None:
    """Bug twin: a check that imports many modules after collection (inductor's first in-process compile: about 800
    modules, 150,000 objects) left them unfrozen, and every full collection of every later growth check scanned them
    (the main job's growth twins: 20 s on an H200 after the inductor twins, 1.5 s alone). The next block now freezes
    them for the run; a handful of modules (a diffusers model imported on first use) freezes nothing more."""
    from pytest_nosync.detection import devices

    count = devices.IMPORTS_WORTH_FREEZING + more
    pytester.mkpydir("late")
    for i in range(count):
        pytester.path.joinpath("late", f"m{i}.py").write_text("def f():\n    pass\n")
    pytester.makepyfile(test_late=IMPORTS_LATE.replace("COUNT", str(count)))
    pytester.syspathinsert()
    pytester.runpytest("--nosync", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    assert json.loads((pytester.path / "frozen.json").read_text()) is (more > 0)
    assert gc.get_freeze_count() == 0  # the run unfroze it at its end
