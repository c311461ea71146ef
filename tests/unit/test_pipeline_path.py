"""suite.pipelines.prepare, the one path to a pipeline: whose a raise while building it is (the caller's, or, where the
caller names its own raises, the pipeline's finding, as the census's plain build takes it)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from pytest_nosync.scenarios import PLAIN, SCENARIOS
from pytest_nosync.suite.pipelines import Uncallable, prepare

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
