"""A tester's calibrating calls (census.testers.Tester.calibrate) on real diffusers pipelines of the twins: what they
cost in steps, and that the step counts they give the checks run the steps the checks ask for."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import pytest
import torch

from pytest_nosync.census import testers
from pytest_nosync.suite.targets.base import CallContext
from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler, TwoExpertsPipeline, UpsamplePipeline

CPU = CallContext(device=torch.device("cpu"), dtype=torch.float32, steps=2)


class TwoExpertsTests:  # no `strength`: its steps follow num_inference_steps one for one
    pipeline_class = TwoExpertsPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "transformer_2": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2}


class ShareOfStepsTests:  # img2img's `strength`: floor(n × 0.3) of n steps
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 4, "strength": 0.3}


class PlmsPipeline(LoopPipeline):
    """PNDM's PLMS: n + 1 steps for n >= 2, one for n = 1; no `strength`."""

    def __call__(self, latents: torch.Tensor, num_inference_steps: int = 3) -> torch.Tensor:  # type: ignore[override]
        return super().__call__(latents, num_inference_steps, plms=True)


class PlmsTests(ShareOfStepsTests):
    pipeline_class = PlmsPipeline

    def get_dummy_inputs(self):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2}


@contextlib.contextmanager
def _scheduler_steps() -> Iterator[list[int]]:
    """The twin scheduler's steps in the block, counted in the list's one item."""
    ran = [0]
    original = Scheduler.step

    def step(this, *args, **kwargs):
        ran[0] += 1
        return original(this, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patches:
        patches.setattr(Scheduler, "step", step)
        yield ran


def _calibrated(tester_class: type) -> tuple[testers.Tester, object, list[int]]:
    """The tester, its pipeline after calibration, and the steps each calibrating call ran."""
    tester = testers.Tester(tester_class)
    pipe = tester_class.pipeline_class(**tester.components())
    pipe.set_progress_bar_config(disable=True)
    calls: list[int] = []
    original = type(pipe).__call__

    @functools.wraps(original)  # the tester reads the call's parameters
    def counting(self, *args, **kwargs):
        with _scheduler_steps() as ran:
            out = original(self, *args, **kwargs)
        calls.append(ran[0])
        return out

    with pytest.MonkeyPatch.context() as patches:
        patches.setattr(type(pipe), "__call__", counting)
        tester.calibrate(pipe, CPU)
    return tester, pipe, calls


def _steps_run(pipe: object, tester: testers.Tester, steps: int) -> int:
    with _scheduler_steps() as ran:
        pipe(**tester.call_kwargs(pipe, CallContext(CPU.device, CPU.dtype, steps=steps)))
    return ran[0]


def test_steps_that_follow_the_count_one_for_one_are_measured_with_one_more_step() -> None:
    tester, pipe, calls = _calibrated(TwoExpertsTests)
    assert calls == [2, 3]  # the test's own count, then one more: not 2 × 2 + 8
    assert [_steps_run(pipe, tester, steps) for steps in (2, 4, 6)] == [2, 4, 6]


def test_a_share_of_the_steps_is_measured_far_enough_that_its_floor_cannot_hide_the_slope() -> None:
    tester, pipe, calls = _calibrated(ShareOfStepsTests)
    assert calls == [1, 4]  # floor(4 × 0.3), floor(16 × 0.3): one more step (floor(5 × 0.3) = 1) would see no slope
    for steps in (2, 3, 6):
        assert _steps_run(pipe, tester, steps) >= steps


@pytest.mark.parametrize("steps", [2, 3, 5])
def test_an_offset_is_measured_with_one_more_step_and_the_check_gets_its_steps(steps: int) -> None:
    tester, pipe, calls = _calibrated(PlmsTests)
    assert calls == [3, 4]
    assert _steps_run(pipe, tester, steps) >= steps


class _DeviceGenerator(torch.Generator):
    """What the census makes of a tester's generator for the call's device (a CUDA one on a GPU)."""


class HostNoisePipeline(LoopPipeline):
    """Samples its noise on the host by design (diffusers' randn_tensor given no device, as LDMPipeline): a device
    generator raises diffusers' own ValueError."""

    def __call__(self, latents: torch.Tensor, num_inference_steps: int = 3, generator: object = None) -> torch.Tensor:  # type: ignore[override]
        if isinstance(generator, _DeviceGenerator):
            raise ValueError("Cannot generate a cpu tensor from a generator of type cuda.")
        return super().__call__(latents, num_inference_steps)


class HostNoiseTests(PlmsTests):
    pipeline_class = HostNoisePipeline

    def get_dummy_inputs(self):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2, "generator": torch.Generator().manual_seed(0)}


def test_a_pipeline_sampling_on_the_host_gets_the_testers_generators_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """The census makes a tester's generators on the call's device; a pipeline that samples on the host raises with
    one, and is called with the tester's own (CPU) generators from then on, not counted as uncallable."""

    def on_device(device: torch.device, seed: int) -> torch.Generator:
        return _DeviceGenerator().manual_seed(seed)

    monkeypatch.setattr(testers.devices, "generator", on_device)
    tester = testers.Tester(HostNoiseTests)
    pipe = HostNoisePipeline(**tester.components())
    pipe.set_progress_bar_config(disable=True)
    assert isinstance(tester.call_kwargs(pipe, CPU)["generator"], _DeviceGenerator)
    assert tester.calibrate(pipe, CPU).denoiser == "transformer"
    assert tester.host_generators
    given = tester.call_kwargs(pipe, CPU)["generator"]
    assert type(given) is torch.Generator and given.initial_seed() == 0
    other = testers.Tester(PlmsTests)  # a pipeline that takes the device's keeps them
    assert not other.host_generators


class UpsampleTests:  # no denoising loop: each call is a step
    pipeline_class = UpsamplePipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"upsampler": Denoiser(64), "projector": Denoiser(8)}

    def get_dummy_inputs(self):
        return {"latents": torch.randn(8, 64)}


def test_a_pipeline_without_a_loop_is_checked_each_call_a_step_its_largest_model_the_denoiser() -> None:
    """Where a plain call ran no scheduler step and no progress bar (a latent upsampler), the calls are the steps,
    not a reason to leave the class unchecked."""
    tester = testers.Tester(UpsampleTests)
    pipe = UpsamplePipeline(**tester.components())
    calibration = tester.calibrate(pipe, CPU)
    assert calibration.steps_are_calls and calibration.denoiser == "upsampler"
    assert calibration.fixed_steps is None  # as many steps as calls: no cap to refuse a check with
    assert tester.target().steps_are_calls
