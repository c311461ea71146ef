"""Each check of the suite fails on a real tiny pipeline that does the offending thing, naming the line.

The clean twin is the same pipeline without the wrapper: every check passes on it.
"""

from __future__ import annotations

import pytest
import torch

from pytest_nosync.detection.devices import for_checks
from pytest_nosync.detection.guard_options import GuardOptions
from pytest_nosync.suite.checks import run_check
from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline
from tests.releases import uncached_hook_walks
from tests.twins import pipeline_twins

TARGET = TARGETS["flux"]
KIND = {
    "syncs": "dtoh_sync",
    "graph_breaks": "graph_break",
    "recompiles": "recompile",
    "alloc_growth": "alloc_growth",
    "host_overhead": "host_overhead",
}
CHECK_OF = {"recompiles": "graph_breaks"}  # recompiles are part of the graph check


@pytest.fixture
def pipe(device: torch.device, request: pytest.FixtureRequest):
    params = request.node.callspec.params
    check = params.get("check") or CHECK_OF.get(params["twin"], params["twin"])
    pipe = build_pipeline(TARGET, for_checks(device, (check,)), torch.float32)
    yield pipe
    pipeline_twins.uninstall(pipe.transformer)


def _run(check: str, pipe, backend: str):
    device = pipe.transformer.device  # the graph check may run on the plain CPU (see devices.for_checks)

    def call_kwargs(steps: int) -> dict:
        return TARGET.call_kwargs(pipe, CallContext(device, torch.float32, steps))

    options = GuardOptions(backend=backend, allow=uncached_hook_walks())
    return run_check(check, pipe, call_kwargs, options, steps=2, target=TARGET.name)


@pytest.mark.parametrize("twin", list(pipeline_twins.TWINS))
def test_check_names_the_twin_line(twin: str, pipe, device, backend) -> None:
    pipeline_twins.TWINS[twin](pipe.transformer)
    report = _run(CHECK_OF.get(twin, twin), pipe, backend)
    expected = pipeline_twins.line_of(twin)
    assert report.passed is False, report.findings
    assert (KIND[twin], expected) in {(f.kind, str(f.where)) for f in report.failures}, report.findings


@pytest.mark.parametrize("check", ["alloc_growth"])
def test_growth_whose_sites_cannot_be_noted_stands_unnamed_with_why(check: str, pipe, backend) -> None:
    """The re-run noting allocation sites raises (measured on the H200: QwenImage Layered under the Flex backend, its
    FlexAttention refusing the tracker): the growth the plain call measured stands, no raised cell."""
    pipeline_twins.install_leak_refusing_dispatch_modes(pipe.transformer)
    report = _run(check, pipe, backend)
    assert report.passed is False and not report.of_kind("error"), report.findings
    (growth,) = report.failures
    assert growth.kind == "alloc_growth" and str(growth.where) == "<unattributed>:0"
    assert "its line not named: the re-run noting allocation sites raised" in growth.detail


@pytest.mark.parametrize("check", ["syncs", "graph_breaks", "alloc_growth", "host_overhead"])
def test_clean_twin_passes(check: str, pipe, device, backend) -> None:
    report = _run(check, pipe, backend)
    assert report.passed, report.findings


def _traced(check: str, pipe, backend: str, tmp_path):
    from pytest_nosync.profiling.config import TraceConfig

    device = pipe.transformer.device

    def call_kwargs(steps: int) -> dict:
        return TARGET.call_kwargs(pipe, CallContext(device, torch.float32, steps))

    options = GuardOptions(backend=backend, trace=TraceConfig(mode="on-failure", directory=str(tmp_path)))
    return run_check(check, pipe, call_kwargs, options, steps=2, test_id="t.py::test_x", target=TARGET.name)


@pytest.mark.parametrize("check", ["syncs"])
def test_a_passing_check_is_not_profiled(check: str, pipe, backend, tmp_path) -> None:
    report = _traced(check, pipe, backend, tmp_path)
    assert report.passed and "profiled" not in report.metrics and not list(tmp_path.iterdir())


@pytest.mark.parametrize("twin", ["syncs"])
def test_a_failing_check_is_run_again_under_the_profiler(twin: str, pipe, backend, tmp_path) -> None:
    pipeline_twins.TWINS[twin](pipe.transformer)
    report = _traced(twin, pipe, backend, tmp_path)
    assert report.passed is False and "profiled" not in report.metrics  # the findings are the unprofiled run's
    assert report.metrics["trace_rerun_reproduced"] is True and report.summary == ""
    assert report.artifacts["trace"].startswith(str(tmp_path)) and report.metrics["diagnosis"]["steps"]


@pytest.mark.parametrize("twin", ["syncs"])
def test_a_rerun_that_does_not_fail_the_same_way_says_so(twin: str, pipe, backend, tmp_path, monkeypatch) -> None:
    pipeline_twins.install_sync_once(pipe.transformer)
    report = _traced(twin, pipe, backend, tmp_path)
    assert report.passed is False and report.metrics["trace_rerun_reproduced"] is False
    assert "the re-run under the profiler did not fail at the same places" in report.summary
    assert report.artifacts["trace"]
