"""suite.pipelines, the one path to a pipeline: whose a raise while building it is (the caller's, or, where the caller
names its own raises, the pipeline's finding, as the census's plain build takes it), and which checks a pipeline whose
steps are fixed can take."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import pytest
import torch

from pytest_nosync.detection.guard_options import GuardOptions
from pytest_nosync.scenarios import PLAIN, SCENARIOS
from pytest_nosync.suite.checks import plan
from pytest_nosync.suite.pipelines import FixedSteps, Uncallable, check, prepare
from pytest_nosync.suite.scenarios import NotApplicable

CPU = torch.device("cpu")


class Unbuildable(Exception):
    """A caller's own reason not to check a pipeline (the census's NotDrivable, the suite's TargetUnavailable)."""


def _raising(exc: Exception) -> Callable[[], None]:
    def build() -> None:
        raise exc

    return build


def test_a_raise_while_building_is_the_callers_by_default() -> None:
    with pytest.raises(RuntimeError, match="constructor"):
        prepare(_raising(RuntimeError("constructor")), None, "transformer", CPU)


def test_a_raise_while_building_is_the_pipelines_finding_where_the_caller_names_its_own() -> None:
    raised = RuntimeError("constructor")
    prepared = prepare(_raising(raised), None, "transformer", CPU, callers=(Unbuildable,))
    assert prepared.error is raised and prepared.pipe is None and not prepared.not_applicable
    assert prepared.scenario is SCENARIOS[PLAIN]


def test_the_callers_own_raise_passes_through() -> None:
    with pytest.raises(Unbuildable, match="no such tester"):
        prepare(_raising(Unbuildable("no such tester")), None, "transformer", CPU, callers=(Unbuildable,))


def test_a_calibrating_call_that_raised_is_reported_at_the_pipelines_own_raise() -> None:
    cause = ValueError("the pipeline's own raise")
    prepared = prepare(_raising(Uncallable(cause)), None, "transformer", CPU, callers=(Unbuildable,))
    assert prepared.error is cause


def test_a_plain_build_that_succeeds_is_warmed_by_then() -> None:
    seen: list[object] = []
    pipe = object()
    prepared = prepare(lambda: pipe, None, "transformer", CPU, then=seen.append, callers=(Unbuildable,))
    assert prepared.pipe is pipe and prepared.error is None and seen == [pipe]


class Reached(Exception):
    """The check went on to make its call's kwargs: nothing refused it."""


def _reached(pipe: object) -> Callable[[int], dict]:
    raise Reached


def test_a_check_needing_more_steps_than_a_pipeline_runs_is_not_applicable_and_one_it_fits_goes_on() -> None:
    """A pipeline whose calls run two steps whatever num_inference_steps asks (SanaSprint's SCM schedule) cannot take
    a check whose measured call needs three; a check of two steps is made. The pipeline stays for its later checks."""
    pipe = SimpleNamespace()
    prepared = prepare(lambda: pipe, None, "transformer", CPU)
    fixed = FixedSteps(2, "CappedPipeline", "its schedule is capped at two")
    assert plan("alloc_growth", pipe, 2)[0] == 3 and plan("syncs", pipe, 2)[0] == 2
    options = GuardOptions(backend="emulate")
    with pytest.raises(
        NotApplicable,
        match=r"CappedPipeline runs 2 denoising step\(s\) a call whatever "
        r"num_inference_steps asks \(its schedule is capped at two\), fewer than the check needs",
    ):
        check(prepared, "alloc_growth", _reached, options, steps=2, fixed_steps=fixed)
    assert prepared.pipe is pipe and not prepared.not_applicable
    with pytest.raises(Reached):
        check(prepared, "syncs", _reached, options, steps=2, fixed_steps=fixed)
    with pytest.raises(Reached):  # steps that follow the count: nothing refused
        check(prepared, "alloc_growth", _reached, options, steps=2)
