"""A pipeline with no denoising loop (a latent upsampler, Flux Redux's prior) is checked with each call one step: a
sync or a growth in every call is caught at its line and in the call it happened in; the clean twin passes."""

from __future__ import annotations

import pytest
import torch

from pytest_nosync.detection.guard_options import GuardOptions
from pytest_nosync.suite.checks import run_check
from pytest_nosync.suite.measure import measure
from tests.twins.loop_pipeline import UpsamplePipeline, build_upsampler, line_of


@pytest.fixture
def pipe(device: torch.device) -> UpsamplePipeline:
    return build_upsampler(device)


def _run(check: str, pipe: UpsamplePipeline, backend: str, device: torch.device):
    def call_kwargs(steps: int) -> dict:
        return {"latents": torch.randn(8, 64).to(device)}

    options = GuardOptions(backend=backend, denoiser="upsampler")
    return run_check(check, pipe, call_kwargs, options, steps=3, steps_are_calls=True)


@pytest.mark.parametrize("check", ["syncs", "alloc_growth"])
def test_clean_twin_passes_each_call_a_step(check: str, pipe: UpsamplePipeline, backend: str, device) -> None:
    report = _run(check, pipe, backend, device)
    assert report.passed, report.findings
    assert report.steps == 3  # three calls, three steps (one call of a pipeline without a loop has none)


def test_a_sync_in_every_call_is_caught_at_its_line_in_each_call(pipe: UpsamplePipeline, backend: str, device) -> None:
    pipe.peek = True
    report = _run("syncs", pipe, backend, device)
    assert report.passed is False
    at = {(f.kind, f.where.line, f.step) for f in report.failures if f.where.file.endswith("loop_pipeline.py")}
    assert {("dtoh_sync", line_of("peek", UpsamplePipeline), step) for step in range(3)} <= at, report.findings


def test_growth_across_calls_is_caught_at_its_line(pipe: UpsamplePipeline, backend: str, device) -> None:
    pipe.leak = True
    report = _run("alloc_growth", pipe, backend, device)
    assert report.passed is False
    found = {(f.kind, f.where.line) for f in report.failures}
    assert ("alloc_growth", line_of("leak", UpsamplePipeline)) in found, report.findings


@pytest.mark.parametrize("steps_are_calls", [True, False])
def test_step_metrics_of_a_pipeline_without_a_loop_take_each_call_as_a_step(
    steps_are_calls: bool, pipe: UpsamplePipeline, backend: str, device
) -> None:
    """Bug twin (False): measured as one call of a loop, the upsampler showed no step and its step metrics failed as
    not measured, though its target said each call is a step (Target.steps_are_calls, which test_step_metrics
    dropped). Each call a step: the steady calls' numbers, and the device ops each issues, at the upsampler's line."""

    def call_kwargs(steps: int) -> dict:
        return {"latents": torch.randn(8, 64).to(device)}

    options = GuardOptions(backend=backend, denoiser="upsampler")
    report = measure(pipe, call_kwargs, options, steps=3, rounds=1, steps_are_calls=steps_are_calls)
    if not steps_are_calls:
        assert report.passed is False and "no denoising step was seen" in report.summary + str(report.findings)
        return
    assert report.passed, (report.summary, report.findings)
    numbers = report.metrics["step_metrics"]
    assert sorted(numbers["steps"]) == ["1", "2"], numbers  # the calls after the first, each a step
    models = f"tests/twins/loop_pipeline.py:{line_of('models', UpsamplePipeline)}"
    for step in numbers["steps"].values():
        assert step["device_ops"] > 0 and step["host_ms"] > 0, step
        assert models in {site["where"] for site in step["sites"]}, step["sites"]
