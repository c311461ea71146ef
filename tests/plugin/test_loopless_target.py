"""A target of the user's own with no denoising loop (`Target(steps_are_calls=True)`, a latent upsampler) gets its
step metrics with each call a step, as its checks have them: the suite's test_step_metrics dropped the flag, measured
one call, saw no step and failed as not measured (bug twin: the same target without the flag)."""

from __future__ import annotations

import json

import pytest

MODULE = """
import diffusers
import pytest
import torch

from pytest_nosync.suite.targets.base import Target
from tests.twins.loop_pipeline import Denoiser, UpsamplePipeline

diffusers.UpsamplePipeline = UpsamplePipeline  # the suite builds a target's pipeline class by its diffusers name


def build():
    torch.manual_seed(0)
    return {{"upsampler": Denoiser(64), "projector": Denoiser(8)}}


def call_kwargs(pipe, ctx):
    latents = torch.randn(8, 64, generator=torch.Generator().manual_seed(ctx.seed))
    return {{"latents": latents.to(ctx.device, ctx.dtype)}}  # the run's dtype (bfloat16 on a GPU)


MINE = Target(name="mine", pipeline_class="UpsamplePipeline", checkpoint="", build_components=build,
              call_kwargs=call_kwargs, text_encoding="none", denoiser="upsampler", steps_are_calls={loopless})


@pytest.mark.gpu
@pytest.mark.parametrize("nosync_target", [MINE], indirect=True)
def test_step_metrics(nosync_step_metrics, benchmark, nosync):
    nosync.add_report(nosync_step_metrics(benchmark))
"""


@pytest.mark.parametrize("loopless", [True, False])
def test_a_loopless_targets_step_metrics_take_each_call_as_a_step(pytester: pytest.Pytester, loopless: bool) -> None:
    pytester.makepyfile(test_mine=MODULE.format(loopless=loopless))
    result = pytester.runpytest("--nosync", "-p", "no:cacheprovider", "--nosync-report=report.json")
    if not loopless:
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*no denoising step was seen*"])
        return
    result.assert_outcomes(passed=1)
    (test,) = json.loads((pytester.path / "report.json").read_text())["tests"]
    steps = test["metrics"]["step_metrics"]["steps"]
    assert sorted(steps) == ["1", "2"] and all(s["device_ops"] > 0 for s in steps.values()), steps
