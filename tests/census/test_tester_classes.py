"""diffusers' tester classes under the gate (plugin.census, census.testers), on tester classes of both upstream styles
written here around a real diffusers pipeline (tests/twins/loop_pipeline.py): which classes get checks, that the
checks run real steps and find a planted sync at its line, and that what cannot be checked is counted, never passed."""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

import pytest
import torch

from tests.twins import loop_pipeline

TESTERS = """
import unittest

import pytest
import torch

from tests.twins.loop_pipeline import Denoiser, LoopPipeline, NetPipeline, Scheduler

READ = {read}


class LoopTesterConfig:  # the newer style: a config that test classes share
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {{"transformer": Denoiser(), "scheduler": Scheduler()}}

    def get_dummy_inputs(self):
        return {{"latents": torch.randn(2, 8), "num_inference_steps": 10, "strength": 0.2, "read_early": READ}}


class TestLoop(LoopTesterConfig):
    def test_own(self):
        assert LoopPipeline(**self.get_dummy_components())(**self.get_dummy_inputs()).shape == (2, 8)


class TestLoopAgain(LoopTesterConfig):  # the same provider: its checks are TestLoop's
    def test_own_too(self):
        pass


class NetPipelineFastTests(unittest.TestCase):  # the unittest style, get_dummy_inputs(device, seed)
    pipeline_class = NetPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {{"net": Denoiser(), "scheduler": Scheduler()}}

    def get_dummy_inputs(self, device, seed=0):
        generator = torch.Generator(device=device).manual_seed(seed)
        return {{"latents": torch.randn(2, 8, generator=generator), "num_inference_steps": 2}}

    def test_own(self):
        pass
"""

NOT_DRIVABLE = """
import unittest

import pytest
import torch
from diffusers.utils import DummyObject

from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class NeedsAModuleFastTests(unittest.TestCase):
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        import not_installed_anywhere  # noqa: F401
        return {}

    def get_dummy_inputs(self, device, seed=0):
        return {}


class UnknownInputsFastTests(unittest.TestCase):
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, resolution):
        return {}


class NeedsABackend(metaclass=DummyObject):  # what diffusers exports for a pipeline whose dependency is missing
    _backends = ["a_backend_nobody_has"]


class PlaceholderFastTests(unittest.TestCase):
    pipeline_class = NeedsABackend

    def get_dummy_components(self):
        return {}

    def get_dummy_inputs(self, device, seed=0):
        return {}


@pytest.mark.skipif(True, reason="test requires accelerator+PyTorch")  # GLM-Image's tester, on a machine without GPU
class SkipsItselfFastTests(unittest.TestCase):
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8)}


class RaisesFastTests(unittest.TestCase):
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "fail": True}
"""


@pytest.fixture(autouse=True, scope="module")
def _dynamo_loaded() -> None:
    """The runs below trace with dynamo in this process (pytester, in-process), which imports much of torch on first
    use; pytester then unloads what a run imported, and a later import registers with torch a second time, which
    torch refuses. Tracing once here first keeps those modules loaded."""
    import torch

    torch._dynamo.explain(lambda x: x + 1)(torch.ones(2))
    torch._dynamo.reset()


def _ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line]


def test_each_tester_gets_one_check_per_suite_check_beside_its_own_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pipelines=TESTERS.format(read=False))
    checking = _ids(pytester.runpytest("--nosync", "--collect-only", "-q", "-p", "no:cacheprovider"))
    checks = [i for i in checking if "nosync[" in i]
    assert checks == [
        f"test_pipelines.py::{cls}::nosync[{check}]"
        for cls in ("TestLoop", "NetPipelineFastTests")
        for check in ("syncs", "graph_breaks", "alloc_growth", "host_overhead")
    ]
    plain = _ids(pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider"))
    assert plain == [i for i in checking if "nosync[" not in i]  # without --nosync: diffusers' own tests only
    assert len(plain) == 3


def test_gpu_selects_only_the_checks_which_run_real_steps(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pipelines=TESTERS.format(read=False))
    result = pytester.runpytest("-m", "gpu", "--nosync", "-p", "no:cacheprovider", "--nosync-report=report.json")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["nosync: 8 of 8 checks reached a verdict; 2 of 2 pipeline classes fully checked"])
    doc = json.loads((pytester.path / "report.json").read_text())
    steps = {(t["test_id"].split("::")[1], t["check"]): t["steps"] for t in doc["tests"]}
    # 10 steps at strength 0.2 run 2: the check asks for enough (alloc_growth: the scheduler's warm-up + 2)
    assert steps[("TestLoop", "syncs")] == 2 and steps[("TestLoop", "alloc_growth")] == 3
    assert steps[("NetPipelineFastTests", "syncs")] == 2  # its denoiser, `net`, was found by its calls
    census = doc["census"]
    assert (census["checks"], census["verdicts"]["checked"], census["classes"], census["fully_checked"]) == (8, 8, 2, 2)
    assert census["outcomes"]["test_pipelines.py::TestLoop"]["syncs"] == {
        "verdict": "checked", "passed": True, "reason": "", "accepted": False, "pipeline": "LoopPipeline"
    }  # fmt: skip


MISSING_DEPENDENCY = """
import a_test_dependency_not_installed  # diffusers' tests import requests_mock, parameterized, ftfy...
"""


def test_a_tester_module_that_cannot_be_imported_is_counted_and_fails_the_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pipelines=TESTERS.format(read=False), test_needs_more=MISSING_DEPENDENCY)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # pytest stops at a collection error, and says so
    result.stdout.fnmatch_lines(
        [
            "nosync: 1 test module(s) could not be imported: ModuleNotFoundError: No module "
            "named 'a_test_dependency_not_installed' — install diffusers' test dependencies*"
        ]
    )


@pytest.mark.slow
def test_under_xdist_loadgroup_the_census_counts_its_classes_and_reports_plain_ids(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--dist loadgroup` keeps a tester's checks on one worker and reports their ids as `<id>@<group>`: the
    coverage, the report's census section and the table still name each class and check once. A tester module that
    cannot be imported (a test dependency missing) is counted with its error, and the run fails."""
    from pytest_nosync.census import table
    from pytest_nosync.census.outcomes import Coverage
    from pytest_nosync.findings import Report

    # tests.twins, in the workers; the rest of the path stays (the plugin and diffusers may be installed there)
    here = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p))
    pytester.makepyfile(test_pipelines=TESTERS.format(read=True), test_needs_more=MISSING_DEPENDENCY)
    result = pytester.runpytest_subprocess(
        "-m",
        "gpu",
        "--nosync",
        "-n",
        "2",
        "--nosync-share-gpus",  # on a GPU machine of one GPU, two workers share it
        "--dist",
        "loadgroup",
        "-p",
        "no:cacheprovider",
        "--nosync-report=r.json",
        "-v",
    )
    result.assert_outcomes(passed=7, failed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "nosync: 1 test module(s) could not be imported: ModuleNotFoundError: No module named "
            "'a_test_dependency_not_installed' — install diffusers' test dependencies * (e.g. test_needs_more.py)"
        ]
    )
    workers: dict[str, set[str]] = {}  # class → the workers its checks ran on: one each, its pipeline built once
    for line in result.outlines:
        if line.startswith("[gw") and "::nosync[" in line:
            # pytest 9.1 shows xdist's `@<group>` after the id (9.2 does not: pytest-xdist#1386)
            workers.setdefault(line.split("@")[0].split("::")[-2], set()).add(line.split("]")[0])
    assert sorted(workers) == ["NetPipelineFastTests", "TestLoop"], workers
    assert all(len(w) == 1 for w in workers.values()), workers
    # what the workers collected is said once by the controller, which collects nothing itself
    result.stdout.fnmatch_lines(
        [
            "nosync: 2 pipeline tester class(es), 8 check(s), in float32",
            "nosync: 8 of 8 checks reached a verdict; 2 of 2 *",
        ]
    )
    assert result.stdout.str().count("pipeline tester class(es)") == 1
    doc = json.loads((pytester.path / "r.json").read_text())
    assert sorted(doc["census"]["outcomes"]) == [
        "test_pipelines.py::NetPipelineFastTests",
        "test_pipelines.py::TestLoop",
    ]
    assert not [t["test_id"] for t in doc["tests"] if "@" in t["test_id"]]
    rows = table.rows([Report.from_dict(t) for t in doc["tests"]], Coverage.from_dict(doc["census"]))
    assert [(r.short_tester, r.cells["syncs"].text().split(":")[0]) for r in rows] == [
        ("test_pipelines.py::TestLoop", "1"),
        ("test_pipelines.py::NetPipelineFastTests", "0"),
    ]


def test_a_sync_in_a_testers_loop_fails_at_its_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pipelines=TESTERS.format(read=True))
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    line = loop_pipeline.line_of("read before the denoiser")
    result.stdout.fnmatch_lines([f"*dtoh_sync*loop_pipeline.py:{line}*step 0 ×1, step 1 ×1*"])
    assert "FAILED test_pipelines.py::TestLoop::nosync[syncs]" in result.stdout.str()


def test_what_cannot_be_checked_is_counted_with_its_reason_and_a_raise_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_not_drivable=NOT_DRIVABLE)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=4, failed=1)
    out = result.stdout.str()
    assert (
        "nosync: 0 of 5 checks reached a verdict; 0 of 5 pipeline classes fully checked; 1 raised, 4 not checkable "
        "here:" in out
    ), out
    assert "the tester skips itself: test requires accelerator+PyTorch" in out
    line = loop_pipeline.line_of("raises in the loop")
    result.stdout.fnmatch_lines([f"  1 check(s) of 1 class(es) raised ValueError at *loop_pipeline.py:{line}: the loop "
                                  "fails (e.g. *"])  # fmt: skip
    assert "NeedsABackend needs a_backend_nobody_has, not installed here" in out
    assert "get_dummy_components() needs a module that is not installed: No module named 'not_installed" in out
    assert "get_dummy_inputs takes resolution, which the census does not know how to give" in out
    result.stdout.fnmatch_lines([f"*error*loop_pipeline.py:{line}*step 0*", "*ValueError: the loop fails*"])


LISTED_STEPS = """
import unittest

import torch

from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class ListedStepsFastTests(unittest.TestCase):  # ConsistencyModelPipeline's tests give the steps as a list
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": None, "timesteps": [0.9, 0.5]}
"""


def test_steps_given_as_a_list_alone_become_a_count_the_check_can_raise(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_listed=LISTED_STEPS)
    args = ("-k", "syncs or alloc_growth", "--nosync-report=r.json")
    pytester.runpytest("-m", "gpu", "--nosync", "-p", "no:cacheprovider", *args).assert_outcomes(passed=2)
    steps = {t["check"]: t["steps"] for t in json.loads((pytester.path / "r.json").read_text())["tests"]}
    assert steps["syncs"] == 2 and steps["alloc_growth"] == 3  # more than the list's two: the count was raised


FIXED_STEPS = """
import unittest

import torch

from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class FixedStepsFastTests(unittest.TestCase):
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2, "only_steps": 2}
"""


def test_a_pipeline_that_takes_only_its_tests_step_count_is_checked_where_that_is_enough(
    pytester: pytest.Pytester,
) -> None:
    """SanaSprint runs 2 steps and raises for any other count: the checks that 2 steps serve run, the one that needs
    more is not checkable — a property of the pipeline, counted with the cap as its reason, neither failed nor
    passed."""
    pytester.makepyfile(test_fixed=FIXED_STEPS)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "syncs or alloc_growth", "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED*not checkable: LoopPipeline runs 2 denoising step(s) a "
            "call whatever num_inference_steps asks (num_inference_steps=12 raised ValueError: only 2 steps are "
            "supported), fewer than the check needs"
        ]
    )


# SanaSprint's img2img: its SCM twin at its test's strength 0.5 of 2 steps
SCM_STEPS = (
    FIXED_STEPS.replace("LoopPipeline", "ScmPipeline")
    .replace('"only_steps": 2', '"strength": 0.5')
    .replace("FixedSteps", "Scm")
)


def test_an_input_documented_to_hold_the_steps_is_dropped_where_they_are_fixed_and_the_report_says_so(
    pytester: pytest.Pytester,
) -> None:
    """SanaSprint's img2img runs 1 step of its test's 2 (strength 0.5), and its `intermediate_timesteps` (used only at
    2 steps) raises at any other count: with it None (testers.STEP_FREEING) the steps follow the count, so each check
    gets its steps, and every report says what the calls were given and why (they were not checkable)."""
    pytester.makepyfile(test_scm=SCM_STEPS)
    args = ("-k", "syncs or alloc_growth", "--nosync-report=r.json")
    pytester.runpytest("-m", "gpu", "--nosync", "-p", "no:cacheprovider", *args).assert_outcomes(passed=2)
    tests = json.loads((pytester.path / "r.json").read_text())["tests"]
    assert {t["check"]: t["steps"] for t in tests} == {"syncs": 2, "alloc_growth": 3}
    freed = {t["metrics"].get("steps_freed_by") for t in tests}
    assert freed == {
        "intermediate_timesteps=None (without it, num_inference_steps=12 raised ValueError: Intermediate timesteps "
        "for SCM is not supported when num_inference_steps != 2.)"
    }


def test_a_class_whose_fixed_steps_the_sync_checks_can_check_keeps_its_documented_inputs(
    pytester: pytest.Pytester,
) -> None:
    """SanaSprint's text-to-image runs 2 steps whatever the count: the sync checks check it with its own inputs (its
    `intermediate_timesteps` path), and growth, needing 3, stays not checkable rather than freeing them."""
    pytester.makepyfile(test_scm=SCM_STEPS.replace('"strength": 0.5', '"strength": 1.0'))
    args = ("-k", "syncs or alloc_growth", "--nosync-report=r.json")
    pytester.runpytest("-m", "gpu", "--nosync", "-p", "no:cacheprovider", *args).assert_outcomes(passed=1, skipped=1)
    tests = json.loads((pytester.path / "r.json").read_text())["tests"]
    assert [t["metrics"].get("steps_freed_by") for t in tests if t["check"] == "syncs"] == [None]


ONLY_ONCE = FIXED_STEPS.replace('"only_steps": 2', '"only_once": True').replace("FixedSteps", "OnlyOnce")


def test_a_pipeline_that_raises_after_its_first_call_is_an_error_not_a_cap(pytester: pytest.Pytester) -> None:
    """Cosmos on v0.37.1 runs its first call and raises in every later one: the calibration's larger count raising is
    no cap there (the test's own count raises as well), so every check reports the raise."""
    pytester.makepyfile(test_once=ONLY_ONCE)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["*RuntimeError: Expected all tensors to be on the same device*"])
    assert "not checkable" not in result.stdout.str()


TWICE_STEPPED = """
import unittest

import torch

from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class TwiceSteppedFastTests(unittest.TestCase):
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2, "x0_step": True}
"""


def test_a_scheduler_stepped_twice_an_iteration_counts_the_iterations(pytester: pytest.Pytester) -> None:
    """Cosmos steps its scheduler twice in every iteration (x0, then the sample): the calibration counts its steps as
    a guard does, one an iteration, so a check that needs two gets two (it ran one of two when the scheduler's calls
    were counted)."""
    pytester.makepyfile(test_twice=TWICE_STEPPED)
    args = ("-k", "syncs or alloc_growth", "--nosync-report=r.json")
    pytester.runpytest("-m", "gpu", "--nosync", "-p", "no:cacheprovider", *args).assert_outcomes(passed=2)
    tests = json.loads((pytester.path / "r.json").read_text())["tests"]
    steps = {t["check"]: (t["steps"], t["not_checked"]) for t in tests}
    assert steps == {"syncs": (2, []), "alloc_growth": (3, [])}


PLMS_STEPS = """
import unittest

import torch

from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class PlmsStepsFastTests(unittest.TestCase):
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2, "plms": True}
"""


def test_steps_below_the_tests_own_count_are_not_extrapolated_from_an_offset(pytester: pytest.Pytester) -> None:
    """PNDM runs n + 1 steps for n >= 2 and one for n = 1: asking n = 1 for two steps ran one. The test's own count
    is known to give enough."""
    pytester.makepyfile(test_plms=PLMS_STEPS)
    args = ("-k", "syncs", "--nosync-report=r.json")
    pytester.runpytest("-m", "gpu", "--nosync", "-p", "no:cacheprovider", *args).assert_outcomes(passed=1)
    (test,) = json.loads((pytester.path / "r.json").read_text())["tests"]
    assert test["steps"] == 3 and not test["not_checked"]


COPIED_SCHEDULERS = """
import unittest

import torch

from tests.twins.loop_pipeline import CopiedSchedulersPipeline, Denoiser, Scheduler


class CopiedSchedulersFastTests(unittest.TestCase):  # SkyReels V2's diffusion forcing: only copies of it step
    pipeline_class = CopiedSchedulersPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2}


class MaskReadingFastTests(unittest.TestCase):
    pipeline_class = CopiedSchedulersPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2, "read_mask": True}


class IteratedBarFastTests(unittest.TestCase):  # `for t in self.progress_bar(timesteps)`: its items are the steps
    pipeline_class = CopiedSchedulersPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2, "iterate": True}
"""


def test_a_pipeline_that_steps_only_copies_of_its_scheduler_is_stepped_by_its_progress_bar(
    pytester: pytest.Pytester,
) -> None:
    """Its own scheduler never steps: the loop's iterations are the progress bar's updates. Both classes are checked;
    the one reading a device mask per row fails there, in every step, once per row."""
    pytester.makepyfile(test_copied=COPIED_SCHEDULERS)
    args = ("-k", "nosync and (syncs or alloc_growth)", "-p", "no:cacheprovider", "--nosync-report=r.json")
    result = pytester.runpytest("-m", "gpu", "--nosync", *args)
    result.assert_outcomes(passed=5, failed=1)
    out = result.stdout.str()
    assert "nosync: 6 of 6 checks reached a verdict; 3 of 3 pipeline classes fully checked" in out, out
    assert "FAILED test_copied.py::MaskReadingFastTests::nosync[syncs]" in out
    line = loop_pipeline.line_of("reads the row's mask", loop_pipeline.CopiedSchedulersPipeline)
    result.stdout.fnmatch_lines([f"*dtoh_sync*loop_pipeline.py:{line}*step 0 ×2, step 1 ×2*"])
    tests = json.loads((pytester.path / "r.json").read_text())["tests"]
    assert {(t["test_id"].split("::")[1], t["check"]): t["steps"] for t in tests if t["check"] == "syncs"} == {
        ("CopiedSchedulersFastTests", "syncs"): 2, ("MaskReadingFastTests", "syncs"): 2,
        ("IteratedBarFastTests", "syncs"): 2,
    }  # fmt: skip


TWO_EXPERTS = """
import unittest

import torch

from tests.twins.loop_pipeline import Denoiser, Scheduler, TwoExpertsPipeline


class TwoExpertsFastTests(unittest.TestCase):  # Wan 2.2's tests: one expert per step, each called twice in it
    pipeline_class = TwoExpertsPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "transformer_2": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2}


class TwoExpertsOnHostFastTests(unittest.TestCase):
    pipeline_class = TwoExpertsPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "transformer_2": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2, "on_host": True}
"""


def test_two_experts_that_share_the_steps_are_the_denoiser_together(pytester: pytest.Pytester) -> None:
    """Each expert is called as often as there are steps (twice in half of them): the denoiser is the one called in
    every step, here neither alone. With both, every step is seen and the timestep read is found in each."""
    pytester.makepyfile(test_experts=TWO_EXPERTS)
    args = ("-k", "nosync and syncs", "-p", "no:cacheprovider", "--nosync-report=r.json")
    result = pytester.runpytest("-m", "gpu", "--nosync", *args)
    result.assert_outcomes(passed=1, failed=1)
    assert "FAILED test_experts.py::TwoExpertsFastTests::nosync[syncs]" in result.stdout.str()
    line = loop_pipeline.line_of("reads the timestep", loop_pipeline.TwoExpertsPipeline)
    result.stdout.fnmatch_lines([f"*dtoh_sync*loop_pipeline.py:{line}*step 0 ×1, step 1 ×1*"])
    tests = json.loads((pytester.path / "r.json").read_text())["tests"]
    assert {t["metrics"]["denoiser"] for t in tests} == {"transformer,transformer_2"}
    assert [(t["steps"], t["not_checked"]) for t in tests] == [(2, [])] * 2


ONE_AT_A_TIME = """
import gc
import json
import unittest
import weakref
from pathlib import Path

import torch

from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler

FIRST = []  # the first class's denoiser, weakly


class FirstFastTests(unittest.TestCase):
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        denoiser = Denoiser()
        FIRST.append(weakref.ref(denoiser))
        return {"transformer": denoiser, "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2}


class SecondFastTests(FirstFastTests):
    def setUp(self):  # what diffusers' PipelineTesterMixin.setUp does before each test
        torch.compiler.reset()
        gc.collect()
        seen = {"first_held": FIRST[0]() is not None, "frozen": gc.get_freeze_count()}
        Path(__file__).with_name("seen.json").write_text(json.dumps(seen))

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}
"""


def test_a_census_holds_one_testers_pipeline_at_a_time_and_collects_only_what_checks_made(
    pytester: pytest.Pytester,
) -> None:
    """diffusers' testers collect garbage in every setUp: a census that kept every pipeline it built, and had the
    collector scan all that imports made, spent a fifth of its time there. A class's pipeline goes after its last
    check; what collection left is frozen for the run (gc.freeze) and unfrozen at its end."""
    pytester.makepyfile(test_one_at_a_time=ONE_AT_A_TIME)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    seen = json.loads((pytester.path / "seen.json").read_text())
    assert seen["first_held"] is False  # the first class's pipeline was released before the second was built
    assert seen["frozen"] > 0
    assert gc.get_freeze_count() == 0  # the run (in this process) unfroze what it froze


AT_EXIT = """
import atexit, gc, pathlib

# Registered before the plugin's own (a conftest loads before collection), so it runs after it: what the process's
# last collection will find.
atexit.register(lambda: pathlib.Path(__file__).with_name("at_exit.txt").write_text(str(gc.get_freeze_count())))
"""


@pytest.mark.slow
def test_a_census_process_skips_the_last_collection_of_everything_imports_made(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's collection at a process's end walked every object diffusers and transformers made, in each xdist
    worker while the controller waited; frozen again at exit, it does not (the run itself still unfreezes)."""
    pytester.makeconftest(AT_EXIT)
    pytester.makepyfile(test_one_at_a_time=ONE_AT_A_TIME)
    here = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p))
    result = pytester.runpytest_subprocess("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert json.loads((pytester.path / "seen.json").read_text())["frozen"] > 0
    assert int((pytester.path / "at_exit.txt").read_text()) > 0


LIBRARY = """
import torch

from tests.twins.loop_pipeline import Scheduler


class SteppedHere(Scheduler):
    def step(self, noise, t, latents):
        return latents - 0.1 * noise * t


def never_called():
    return 0
"""

CHANGED_TESTERS = """
import unittest

import torch

from looplib import SteppedHere
from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class SteppedHereFastTests(unittest.TestCase):
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "scheduler": SteppedHere()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2}


class SteppedElsewhereFastTests(SteppedHereFastTests):
    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "scheduler": Scheduler()}
"""


def _git(pytester: pytest.Pytester, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=pytester.path, check=True,
                   capture_output=True)  # fmt: skip


def _main_branch(pytester: pytest.Pytester) -> None:
    """The pytester directory as a git repository whose main branch holds what it has now."""
    (pytester.path / ".gitignore").write_text(".pytest_cache/\n__pycache__/\n*.json\n")
    _git(pytester, "init", "-q", "-b", "main")
    _git(pytester, "add", ".")
    _git(pytester, "commit", "-q", "-m", "main")


def test_changed_runs_the_testers_whose_recorded_code_a_change_touches(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(looplib=LIBRARY, test_changed=CHANGED_TESTERS)
    _main_branch(pytester)
    args = ("-m", "gpu", "--nosync", "-k", "syncs")
    pytester.runpytest(*args).assert_outcomes(passed=2)  # both recorded
    _git(pytester, "switch", "-q", "-c", "branch")

    library = pytester.path / "looplib.py"
    main = library.read_text()
    library.write_text(main.replace("return 0", "return 1"))  # a function no tester ran
    result = pytester.runpytest(*args, "--nosync-changed")
    result.assert_outcomes()  # nothing to run: both deselected
    assert "0 of 2 pipeline tester classes run" in result.stdout.str()

    library.write_text(main.replace("0.1 * noise", "0.2 * noise"))  # in the step one tester ran
    result = pytester.runpytest(*args, "--nosync-changed")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "1 of 2 pipeline tester classes run: 1 touched by the change" in out, out
    assert "test_changed.py::SteppedHereFastTests: looplib.py (SteppedHere.step)" in out
    assert "SteppedElsewhereFastTests::nosync[syncs] PASSED" not in out

    result = pytester.runpytest(*args, "--nosync-changed", "--cache-clear")  # no record: every tester runs
    result.assert_outcomes(passed=2)
    assert "2 of 2 pipeline tester classes run: 0 touched by the change, 2 not recorded yet" in result.stdout.str()

    result = pytester.runpytest(*args, "--nosync-changed=no-such-ref")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--nosync-changed: 'no-such-ref' is not a commit" in result.stderr.str()

    # a record holds what the plain pipeline ran: a change to a cache hook alone selected no class, and passed
    result = pytester.runpytest(*args, "--nosync-changed", "--nosync-scenarios=plain,first_block_cache")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "a scenario's own code (a cache hook, offloading) is not in it" in result.stderr.str()


NOT_DRIVABLE_HERE = """
import unittest

from tests.twins.loop_pipeline import LoopPipeline


class NeedsAModuleFastTests(unittest.TestCase):
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        import not_installed_anywhere  # noqa: F401

    def get_dummy_inputs(self, device, seed=0):
        return {}
"""


def test_a_tester_that_cannot_be_driven_is_recorded_and_runs_again_only_when_its_code_changes(
    pytester: pytest.Pytester,
) -> None:
    """Its reason comes from the code it ran: a change elsewhere cannot change it, so it is not run again for one
    (it used to be 'not recorded yet' on every changed-only run)."""
    pytester.makepyfile(looplib=LIBRARY, test_needs=NOT_DRIVABLE_HERE)
    _main_branch(pytester)
    args = ("-m", "gpu", "--nosync", "-k", "syncs", "-rs")
    first = pytester.runpytest(*args)
    first.assert_outcomes(skipped=1)
    first.stdout.fnmatch_lines(["*not checked: get_dummy_components()*not_installed_anywhere*"])
    _git(pytester, "switch", "-q", "-c", "branch")

    library = pytester.path / "looplib.py"
    main = library.read_text()
    library.write_text(main.replace("0.1 * noise", "0.2 * noise"))  # code the tester never ran
    result = pytester.runpytest(*args, "--nosync-changed")
    result.assert_outcomes()
    assert "0 of 1 pipeline tester classes run" in result.stdout.str(), result.stdout.str()

    tester = pytester.path / "test_needs.py"
    tester.write_text(NOT_DRIVABLE_HERE.replace("import not_installed_anywhere", "import also_not_installed"))
    result = pytester.runpytest(*args, "--nosync-changed")
    result.assert_outcomes(skipped=1)
    assert "1 of 1 pipeline tester classes run: 1 touched by the change" in result.stdout.str(), result.stdout.str()


GATED_PIPELINE = """import torch

from tests.twins.loop_pipeline import LoopPipeline


class ReadingPipeline(LoopPipeline):
    def _iteration(self, latents, t, read_early, fail):
        latents = latents * float(t)  # main's sync, accepted in the baseline
        noise = self.transformer(latents)
        return self.scheduler.step(noise, t, latents)
"""
GATED_TESTER = """
import unittest

import torch

from gated import ReadingPipeline
from tests.twins.loop_pipeline import Denoiser, Scheduler


class ReadingPipelineFastTests(unittest.TestCase):
    pipeline_class = ReadingPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2}
"""


def test_the_baseline_gates_tester_classes_as_it_gates_the_suite(pytester: pytest.Pytester) -> None:
    """Written on main, a tester's known sync stays known when the code around it moves; a sync a branch adds fails
    at its line."""
    pytester.syspathinsert()
    pytester.makepyfile(test_gated=GATED_TESTER)
    pipeline = pytester.path / "gated.py"
    args = ("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")

    pipeline.write_text(GATED_PIPELINE)
    pytester.runpytest(*args, "--nosync-baseline-write=base.json").assert_outcomes(passed=1)  # recorded
    (entry,) = json.loads((pytester.path / "base.json").read_text())["entries"]
    assert (entry["file"], entry["code"]) == ("gated.py", "latents = latents * float(t)")

    pipeline.write_text("# moved down by a comment\n\n" + GATED_PIPELINE)
    pytester.runpytest(*args, "--nosync-baseline=base.json").assert_outcomes(passed=1)

    added = GATED_PIPELINE.replace(
        "        noise = ", "        scale = float(latents.abs().max())  # added\n        noise = "
    )
    pipeline.write_text(added)
    result = pytester.runpytest(*args, "--nosync-baseline=base.json")
    result.assert_outcomes(failed=1)
    line = added.splitlines().index("        scale = float(latents.abs().max())  # added") + 1
    result.stdout.fnmatch_lines(
        [f"*dtoh_sync*gated.py:{line}*", "*float(latents.abs().max())*", "*known issues*", "*gated.py:8*", "*float(t)"]
    )


INVERTED = """
import unittest

import torch

from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class EditingPipeline(LoopPipeline):  # LEdits++: edits the latents its `invert` made, raises without them
    inverted = None

    def invert(self, image, num_inversion_steps=20):
        self.inverted = image.mean(dim=0, keepdim=True).expand(2, -1) * num_inversion_steps

    def __call__(self, num_inference_steps=2):
        if self.inverted is None:
            raise ValueError("You need to invert an input image first before calling the pipeline.")
        return super().__call__(self.inverted, num_inference_steps=num_inference_steps)


class EditingPipelineFastTests(unittest.TestCase):
    pipeline_class = EditingPipeline

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"num_inference_steps": 2}

    def get_dummy_inversion_inputs(self, device, seed=0):
        return {"image": [torch.randn(3, 8), torch.randn(3, 8)], "num_inversion_steps": 4}
"""


def test_a_prelude_the_tester_gives_runs_before_its_pipeline(pytester: pytest.Pytester) -> None:
    """LEdits++ raises unless `invert` ran first, and its tester gives the inputs for it: the census calls it once,
    with one image as the tests' own calls do, and the checks reach their verdicts (it raised before)."""
    pytester.makepyfile(test_inverted=INVERTED)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-p", "no:cacheprovider", "--nosync-report=r.json")
    result.assert_outcomes(passed=4)
    tests = json.loads((pytester.path / "r.json").read_text())["tests"]
    assert {t["check"]: t["steps"] for t in tests} == {"syncs": 2, "graph_breaks": 2, "alloc_growth": 3,
                                                        "host_overhead": 2}  # fmt: skip


DETERMINISM_PIPELINE = """import torch

from tests.twins.loop_pipeline import LoopPipeline


class DeterminismReadingPipeline(LoopPipeline):
    def _iteration(self, latents, t, read_early, fail):
        if torch.are_deterministic_algorithms_enabled():
            latents = latents * float(latents.sum())  # twin: a path only deterministic algorithms take
        return super()._iteration(latents, t, read_early, fail)


class DeterminismRefusingPipeline(LoopPipeline):
    def _iteration(self, latents, t, read_early, fail):
        if torch.are_deterministic_algorithms_enabled():  # as a CUDA op with no deterministic kernel raises
            raise RuntimeError("this op does not have a deterministic implementation")
        return super()._iteration(latents, t, read_early, fail)
"""
DETERMINISM_TESTER = """
import unittest

import torch

from determinism import DeterminismReadingPipeline
from tests.twins.loop_pipeline import Denoiser, Scheduler

torch.use_deterministic_algorithms(True)  # what diffusers' enable_full_determinism() does at import


class DeterminismReadingPipelineFastTests(unittest.TestCase):
    pipeline_class = DeterminismReadingPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2}
"""


COUNTING_PIPELINE = """import pathlib
import weakref

from tests.twins.loop_pipeline import LoopPipeline

BUILT = []


class CountingPipeline(LoopPipeline):
    def __init__(self, transformer, scheduler):  # named: DiffusionPipeline reads its modules from the signature
        super().__init__(transformer, scheduler)
        BUILT.append(weakref.ref(self))

    def __call__(self, *args, **kwargs):  # how many of the class's pipelines are alive at each call
        with pathlib.Path("alive.txt").open("a") as fh:
            fh.write(f"{sum(ref() is not None for ref in BUILT)}\\n")
        return super().__call__(*args, **kwargs)
"""


def test_a_scenarios_pipeline_goes_when_its_last_check_ran(pytester: pytest.Pytester) -> None:
    """A class's scenario pipelines are built afresh, one per scenario: kept until the class's last check, six of
    BriaFibo's took a worker of the emulated census past 19 GB. At every call, only the plain pipeline (its calibration)
    and the current scenario's are alive."""
    pytester.syspathinsert()
    tester = DETERMINISM_TESTER.replace("determinism import", "counting import").replace(
        "DeterminismReading", "Counting"
    )
    tester = tester.replace("torch.use_deterministic_algorithms(True)", "")
    pytester.makepyfile(counting=COUNTING_PIPELINE, test_counting=tester)
    scenarios = "--nosync-scenarios=plain,layerwise_casting,group_offload_block,model_cpu_offload"
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider", scenarios,
                                "-rA")  # fmt: skip
    sys.modules.pop("counting", None)
    result.stdout.fnmatch_lines(["*[[]syncs-layerwise_casting[]]*", "*[[]syncs-group_offload_block[]]*"])
    alive = [int(n) for n in (pytester.path / "alive.txt").read_text().split()]
    assert len(alive) >= 6 and max(alive) == 2, alive  # plain's, and the scenario's being checked


@pytest.mark.usefixtures("deterministic_algorithms_restored")
def test_a_testers_checks_run_with_torchs_defaults_whatever_its_module_set(pytester: pytest.Pytester) -> None:
    """A test module that switches deterministic algorithms on at import (as diffusers' do, and Z-Image's switch them
    off) decided which path its pipeline's checks took, so a family run and a full census disagreed. The checks run
    with them off, and the module's setting is back once they ran."""
    pytester.syspathinsert()
    pytester.makepyfile(determinism=DETERMINISM_PIPELINE, test_determinism=DETERMINISM_TESTER)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    assert torch.are_deterministic_algorithms_enabled()  # the module's own setting, kept after the check
    result.assert_outcomes(passed=1)
    assert "dtoh_sync" not in result.stdout.str()


@pytest.mark.usefixtures("deterministic_algorithms_restored")
def test_a_testers_calibrating_calls_run_with_torchs_defaults_too(pytester: pytest.Pytester) -> None:
    """The census builds and calibrates a tester's pipeline with calls of its own before any check: a pipeline that
    raises only with deterministic algorithms on (a CUDA op without a deterministic kernel) was counted as raising
    when its test module had switched them on, and every check of the class failed."""
    pytester.syspathinsert()
    tester = DETERMINISM_TESTER.replace("DeterminismReadingPipeline", "DeterminismRefusingPipeline")
    pytester.makepyfile(determinism=DETERMINISM_PIPELINE, test_determinism=tester)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "error" not in result.stdout.str()


@pytest.mark.usefixtures("deterministic_algorithms_restored")
def test_the_refusing_pipeline_raises_when_called_with_deterministic_algorithms_on(pytester: pytest.Pytester) -> None:
    """The bug twin of the test above: the call the census makes, made with them on, raises."""
    pytester.syspathinsert()
    pytester.makepyfile(determinism=DETERMINISM_PIPELINE)
    import determinism

    try:
        pipe = loop_pipeline.build(torch.device("cpu"), determinism.DeterminismRefusingPipeline)
        torch.use_deterministic_algorithms(True)
        with torch.no_grad(), pytest.raises(RuntimeError, match="deterministic implementation"):
            pipe(latents=loop_pipeline.latents(torch.device("cpu")), num_inference_steps=2)
    finally:
        sys.modules.pop("determinism", None)


@pytest.mark.usefixtures("deterministic_algorithms_restored")
def test_the_determinism_path_is_a_sync_the_check_finds_when_taken(pytester: pytest.Pytester) -> None:
    """The bug twin of the test above: the same pipeline with deterministic algorithms on fails at the line that
    path reads, so the clean verdict above is the setting's doing, not a check that did not look."""
    from pytest_nosync import execution_device, nosync_guard

    device = execution_device("emulate")
    pytester.syspathinsert()
    pytester.makepyfile(determinism=DETERMINISM_PIPELINE)
    import determinism

    pipeline = determinism.DeterminismReadingPipeline
    line = loop_pipeline.line_of("a path only deterministic algorithms take", pipeline)
    pipe = loop_pipeline.build(device, pipeline)
    torch.use_deterministic_algorithms(True)
    try:
        with torch.no_grad(), nosync_guard(pipe, checks=("syncs",), backend="emulate") as g:
            pipe(latents=loop_pipeline.latents(device), num_inference_steps=2)
    finally:
        sys.modules.pop("determinism", None)
    failing = [(f.kind, os.path.basename(f.where.file), f.where.line) for f in g.report.findings if f.phase == "step"]
    assert failing and set(failing) == {("dtoh_sync", "determinism.py", line)}


CACHING_TESTERS = """
import functools
import gc
import pathlib
import unittest
import weakref

import torch

from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler

ROPES = []


class CachingDenoiser(Denoiser):
    @functools.lru_cache(maxsize=128)  # keyed by the module, as QwenImage's RoPE frequencies are
    def table(self, n):
        return torch.ones(n)

    def forward(self, latents):
        ROPES.append(weakref.ref(self))
        self.table(4)
        return super().forward(latents)


class CachingPipeline(LoopPipeline):
    def __call__(self, *args, **kwargs):  # how many denoisers of the process are reachable at each call
        gc.collect()
        with pathlib.Path("alive.txt").open("a") as fh:
            fh.write(f"{len({id(r()) for r in ROPES if r() is not None})}\\n")
        return super().__call__(*args, **kwargs)


class FirstCachingPipelineFastTests(unittest.TestCase):
    pipeline_class = CachingPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": CachingDenoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2}


class OtherCachingPipeline(CachingPipeline):
    pass


class SecondCachingPipelineFastTests(FirstCachingPipelineFastTests):  # its own provider: a tester of its own
    pipeline_class = OtherCachingPipeline

    def get_dummy_components(self):
        return super().get_dummy_components()
"""


def test_a_class_starts_from_empty_class_caches_so_the_earlier_pipelines_they_held_are_gone(
    pytester: pytest.Pytester,
) -> None:
    """A method cache keyed by the module kept every earlier pipeline of a census worker alive, and its evictions
    depended on what the worker built before (QwenImage Edit's growth on two H200s). When a class's first pipeline is
    built, the class-level caches of its models are emptied: the second class's calls see its own denoisers only."""
    pytester.syspathinsert()
    pytester.makepyfile(test_caching=CACHING_TESTERS)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider", "-p",
                                "no:randomly")  # fmt: skip
    sys.modules.pop("test_caching", None)
    result.assert_outcomes(passed=2)
    alive = [int(n) for n in (pytester.path / "alive.txt").read_text().split()]
    assert max(alive) == 1, alive  # without emptying: the first class's denoiser too, held by the cache


def test_in_bfloat16_a_testers_float32_inputs_are_given_in_the_runs_dtype(pytester: pytest.Pytester) -> None:
    """A census in bfloat16 runs the pipeline as its users do, with inputs in that dtype: the tester's float32 latents
    given to a bfloat16 denoiser raised in its first layer (the census's choice, not the pipeline's)."""
    pytester.makepyfile(test_pipelines=TESTERS.format(read=False))
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "TestLoop and syncs", "-p", "no:cacheprovider",
                                "--nosync-dtype=bfloat16", "--nosync-report=r.json")  # fmt: skip
    result.assert_outcomes(passed=1)
    outcome = json.loads((pytester.path / "r.json").read_text())["census"]["outcomes"]["test_pipelines.py::TestLoop"]
    assert outcome["syncs"]["verdict"] == "checked", outcome


SKIPPING_SETUP = """
import unittest

import pytest
import torch

from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class DeprecatedLoopFastTests(unittest.TestCase):
    pipeline_class = LoopPipeline

    def setUp(self):  # diffusers' PipelineTesterMixin.setUp, for a pipeline deriving from DeprecatedPipelineMixin
        pytest.skip(reason="Deprecated Pipeline: LoopPipeline")

    def get_dummy_components(self):
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2, "read_early": True}
"""


def test_a_skip_in_a_testers_setup_is_not_the_censuss_to_obey(pytester: pytest.Pytester) -> None:
    """Bug twin: diffusers' testers skip every test of a deprecated pipeline in setUp with pytest.skip (a
    BaseException); the census counted Stable Cascade's three classes "get_dummy_components() skips: Deprecated
    Pipeline", never checked. The census checks the class (its loop's sync caught at its line)."""
    pytester.makepyfile(test_deprecated=SKIPPING_SETUP)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    line = loop_pipeline.line_of("read before the denoiser")
    result.stdout.fnmatch_lines([f"*dtoh_sync*loop_pipeline.py:{line}*step 0 ×1, step 1 ×1*"])
    assert "skips" not in result.stdout.str()
