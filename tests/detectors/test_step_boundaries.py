"""Where a pipeline's steps begin and end (annotate): a sync in every iteration before the denoiser runs counts once
in every step, step 0 included — an iteration's work before the denoiser's call is its step's — with either form of
progress bar; a loop that never calls the denoiser (a prior's), the setup and the decode are outside the steps."""

from __future__ import annotations

import pytest
import torch
from diffusers import DiffusionPipeline

from pytest_nosync import nosync_guard
from tests.twins import loop_pipeline


def _per_step(report) -> dict:
    return {f.step: f.count for f in report.failures}


def test_a_read_before_the_denoiser_counts_in_every_step(backend: str, device: torch.device) -> None:
    pipe = loop_pipeline.build(device)
    for iterate in (False, True):
        x = loop_pipeline.latents(device)
        with nosync_guard(pipe, backend=backend) as g:
            pipe(x, num_inference_steps=3, read_early=True, iterate=iterate)
        assert g.report.passed is False
        lines = {f.where.line for f in g.report.failures}
        assert lines == {loop_pipeline.line_of("read before the denoiser")}, g.report.findings
        assert _per_step(g.report) == {0: 1, 1: 1, 2: 1}, (iterate, g.report.findings)
        assert g.report.steps == 3


def test_the_clean_loop_passes_with_three_steps(backend: str, device: torch.device) -> None:
    pipe = loop_pipeline.build(device)
    x = loop_pipeline.latents(device)
    with nosync_guard(pipe, backend=backend) as g:
        pipe(x, num_inference_steps=3)
    assert g.report.passed, g.report.findings
    assert g.report.steps == 3


def test_a_whole_block_takes_the_steps_of_the_pipeline_whose_loop_runs_in_it(
    backend: str, device: torch.device
) -> None:
    """The marker's way with the pipeline built in the body: its setup before the loop is before the steps."""
    with nosync_guard(backend=backend, whole_block=True) as g:
        pipe = loop_pipeline.build(torch.device("cpu"))
        pipe.transformer.to(device)  # a host-to-device copy per parameter: setup, not a step
        pipe(torch.randn(2, 8).to(device), num_inference_steps=2)
    assert g.report.passed, g.report.findings
    assert g.report.steps == 2
    setup = [f for f in g.report.findings if f.phase == "before_steps"]
    assert setup and all(f.kind == "htod_sync" for f in setup), g.report.findings


def test_without_a_pipeline_loop_the_whole_block_is_the_step(backend: str, device: torch.device) -> None:
    x = torch.ones(4, device=device)
    with nosync_guard(backend=backend, whole_block=True) as g:
        float(x.sum())
    assert [(f.kind, f.step) for f in g.report.failures] == [("dtoh_sync", 0)]


def test_a_loop_that_never_calls_the_denoiser_is_before_the_steps(backend: str, device: torch.device) -> None:
    """Stable unCLIP runs its prior's loop, behind a progress bar of its own, before the UNet's: the prior's iterations
    are no steps (its sync is before them), the denoiser's loop has the steps, and dynamo compiles the denoiser in the
    first of them (it captured nothing when the prior's iterations took the steps)."""
    pipe = loop_pipeline.build(device)
    for iterate in (False, True):
        x = loop_pipeline.latents(device)
        with nosync_guard(pipe, backend=backend) as g:
            pipe(x, num_inference_steps=2, prior_steps=3, read_in_prior=True, iterate=iterate)
        assert g.report.passed, g.report.findings  # the prior's read is before the steps: reported, not counted
        assert g.report.steps == 2, iterate
        before = [f for f in g.report.findings if f.phase == "before_steps"]
        assert {f.where.line for f in before} == {loop_pipeline.line_of("reads in the prior's loop")}, before
        assert sum(f.count for f in before) == 3
    x = loop_pipeline.latents(device)
    with nosync_guard(pipe, backend=backend, checks=("syncs",), count_outside_steps=True) as g:
        pipe(x, num_inference_steps=2, prior_steps=3, read_in_prior=True)
    assert g.report.passed is False  # counted when asked: the twin's read is real


def test_the_graph_check_compiles_the_denoiser_after_a_prior_loop() -> None:
    pipe = loop_pipeline.build(torch.device("cpu"))
    with nosync_guard(pipe, backend="emulate", checks=("graph_breaks",)) as g, torch.no_grad():
        pipe(torch.randn(2, 8), num_inference_steps=2, prior_steps=2, iterate=True)
    assert g.report.passed, (g.report.not_checked, g.report.findings)
    assert g.report.metrics["compiles_per_step"] == {"0": 1} and g.report.steps == 2


def test_a_one_step_call_is_not_checked_where_a_callbacks_sync_would_pass(backend: str, device: torch.device) -> None:
    """A sync in `callback_on_step_end` runs after the step's update: in a two-step call it is the next step's and
    fails; in a one-step call it would be after the steps and pass, so that call is not checked (a failure)."""
    pipe = loop_pipeline.build(device)

    def reads(pipeline, i, t, tensors):
        float(tensors["latents"].sum())  # twin: reads in the step callback
        return {}

    verdicts = {}
    for steps in (1, 2):
        x = loop_pipeline.latents(device)
        with nosync_guard(pipe, backend=backend) as g, torch.no_grad():
            pipe(x, num_inference_steps=steps, callback_on_step_end=reads)
        verdicts[steps] = g.report
    one, two = verdicts[1], verdicts[2]
    assert one.passed is False and "the pipeline's loop ran 1 denoising step(s)" in one.not_checked[0]
    assert two.passed is False and not two.not_checked
    line = reads.__code__.co_firstlineno + 1
    assert [(f.kind, f.where.line, f.step) for f in two.failures] == [("dtoh_sync", line, 1)]


def test_a_loop_whose_own_scheduler_never_steps_closes_its_steps_at_its_progress_bar(
    backend: str, device: torch.device
) -> None:
    """Paradigms steps its window through its scheduler's batch_step_no_noise, SkyReels V2's diffusion forcing steps
    copies of its scheduler: without a step callback the bar's update is the only step boundary, and each iteration's
    read falls in its own step (before, the loop was one step, not checked). A loop whose scheduler steps keeps its
    steps there: the bar's update after it changes nothing."""
    pipe = loop_pipeline.build(device, loop_pipeline.CopiedSchedulersPipeline)
    x = loop_pipeline.latents(device)
    with nosync_guard(pipe, backend=backend) as g, torch.no_grad():
        pipe(x, num_inference_steps=3, read_mask=True)
    assert not g.report.not_checked and g.report.steps == 3
    assert _per_step(g.report) == {0: 2, 1: 2, 2: 2}, g.report.findings  # a read of each of the two rows
    pipe = loop_pipeline.build(device)
    with nosync_guard(pipe, backend=backend) as g, torch.no_grad():
        pipe(loop_pipeline.latents(device), num_inference_steps=3, read_early=True)
    assert _per_step(g.report) == {0: 1, 1: 1, 2: 1} and g.report.steps == 3


def test_a_guard_checks_one_block_and_says_so_when_entered_again(backend: str, device: torch.device) -> None:
    """A second entry (nested, or a later block) replaced the first's detectors and CUDA mapping, which stayed on for
    the rest of the process, and a later block's report was the first's: it is refused, before it changes anything."""
    guard = nosync_guard(backend=backend)
    with guard, pytest.raises(RuntimeError, match="checks one block: make a new guard"):
        guard.__enter__()
    with pytest.raises(RuntimeError, match="checks one block"), guard:
        pass
    with nosync_guard(backend=backend) as fresh:  # a new guard for the next block: checked as any
        torch.ones(2, device=device).sum().item()
    assert fresh.report.passed is False


def test_a_raise_inside_a_marked_step_is_that_steps_error(backend: str, device: torch.device) -> None:
    """The block's exit recorded it once the step had closed: `after steps`, with no step."""
    x = torch.ones(2, device=device)
    with pytest.raises(ValueError, match="the second step fails"), nosync_guard(backend=backend) as g:
        with g.step():
            x.add(1)
        with g.step():
            raise ValueError("the second step fails")
    (error,) = g.report.of_kind("error")
    assert error.step == 1 and g.report.passed is False
    # a guard around it records the same raise too: the inner guard's record is not the outer's
    outer, inner = nosync_guard(backend=backend), nosync_guard(backend=backend)
    with pytest.raises(ValueError), outer, inner, inner.step():
        x.add(1)
        raise ValueError("inside both")
    assert outer.report.of_kind("error") and inner.report.of_kind("error") and outer.report.passed is False


class _UnetLoop(loop_pipeline.LoopPipeline):  # the twin's loop with its denoiser where a UNet pipeline keeps it
    denoiser = "unet"

    def __init__(self, unet: loop_pipeline.Denoiser, scheduler: loop_pipeline.Scheduler) -> None:
        DiffusionPipeline.__init__(self)
        self.register_modules(unet=unet, scheduler=scheduler)


def test_a_denoiser_the_guard_does_not_find_is_named_in_why_the_loop_was_not_checked(
    backend: str, device: torch.device
) -> None:
    """A UNet pipeline under the default `transformer` drew one step of a three-step call, and the guard asked for
    num_inference_steps >= 2: it says the name it did not find, and the one the pipeline has."""
    pipe = _UnetLoop(loop_pipeline.Denoiser(), loop_pipeline.Scheduler())
    pipe.unet.to(device)
    pipe.set_progress_bar_config(disable=True)
    with nosync_guard(pipe, backend=backend) as g:
        pipe(loop_pipeline.latents(device), num_inference_steps=3)
    assert g.report.passed is False
    (why,) = g.report.not_checked
    assert "the pipeline has no 'transformer' (the guard's denoiser" in why and "denoiser='unet'" in why, why
    with nosync_guard(pipe, backend=backend, denoiser="unet") as named:
        pipe(loop_pipeline.latents(device), num_inference_steps=3)
    assert named.report.passed and named.report.steps == 3
