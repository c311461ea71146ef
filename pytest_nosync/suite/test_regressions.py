"""Regression cases for the four known fixes, separate from the per-target checks.

Each passes on fixed code and fails, naming the file:line, if its fix regresses. Findings accepted for
now live in the known-issues baseline (--nosync-baseline), never in these tests.
"""

from __future__ import annotations

import diffusers
import pytest

from pytest_nosync.findings import Kind
from pytest_nosync.suite import regressions
from pytest_nosync.suite.targets.base import CallContext

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("config", regressions.unipc_configs(), ids=lambda c: c.id)
def test_unipc_steps_are_sync_free(config, nosync_call_context, nosync_guard_kwargs, nosync) -> None:
    """UniPC after set_begin_index: no sync in any step, in every configuration people use."""
    guard = nosync_guard_kwargs("regression:unipc", "UniPCMultistepScheduler")
    nosync.add_report(regressions.unipc_case(config, nosync_call_context.device, **guard))


@pytest.mark.parametrize("scheduler", ["FlowMatchEulerDiscreteScheduler", "UniPCMultistepScheduler"])
def test_scheduler_first_step_after_set_begin_index(
    scheduler, nosync_call_context, nosync_guard_kwargs, nosync
) -> None:
    """Every scheduler the targets use: with set_begin_index(0), the first step does no index lookup sync."""
    cls = getattr(diffusers, scheduler)
    kwargs = {"prediction_type": "flow_prediction", "use_flow_sigmas": True} if "UniPC" in scheduler else {}
    guard = nosync_guard_kwargs("regression:set_begin_index", scheduler)
    report = regressions.scheduler_loop(cls(**kwargs), nosync_call_context.device, 4, **guard)
    nosync.add_report(regressions.from_step_index_lookup(report))


def test_pipeline_calls_set_begin_index(
    nosync_target, nosync_pipeline, nosync_call_context, nosync_guard_kwargs, nosync
) -> None:
    """Behaviourally: the target's first step has no sync from the scheduler looking up its index."""

    def kwargs() -> dict:
        return nosync_target.call_kwargs(nosync_pipeline, nosync_call_context)

    guard = nosync_guard_kwargs("regression:set_begin_index", nosync_target.name, denoiser=nosync_target.denoiser)
    nosync.add_report(regressions.pipeline_begin_index_case(nosync_pipeline, kwargs, **guard))


@pytest.mark.parametrize("cache", ["no_cache", "first_block_cache"])
def test_cache_context_does_not_walk_the_tree(
    cache, nosync_target, nosync_pipeline, nosync_call_context, nosync_guard_kwargs, nosync
) -> None:
    """Entering/leaving cache_context in a steady-state step walks no module tree (cached registries)."""
    denoiser = getattr(nosync_pipeline, nosync_target.denoiser)
    if not hasattr(denoiser, "cache_context"):
        pytest.skip(f"{type(denoiser).__name__} has no cache_context in diffusers {diffusers.__version__}")
    config = None
    if cache == "first_block_cache":
        config = diffusers.FirstBlockCacheConfig(threshold=0.05)
    ctx = nosync_call_context

    def call_kwargs(steps: int) -> dict:
        return nosync_target.call_kwargs(nosync_pipeline, CallContext(ctx.device, ctx.dtype, steps, ctx.seed))

    guard = nosync_guard_kwargs("regression:cache_context", nosync_target.name, denoiser=nosync_target.denoiser)
    # A cache technique that raises on this model (an upstream bug or gap) is the case's `error` finding: a failure
    # with the exception, or a known issue when the baseline lists it with its reference. Never a skip.
    report = regressions.cache_context_case(nosync_pipeline, call_kwargs, 3, config, **guard)
    if not report.of_kind(Kind.ERROR):
        report.metrics["cache_context_cost"] = regressions.cache_context_cost(denoiser)
    nosync.add_report(report)


@pytest.mark.parametrize("nosync_target", ["qwenimage_edit"], indirect=True)
def test_modulate_index_is_built_once(
    nosync_target, nosync_pipeline, nosync_call_context, nosync_guard_kwargs, nosync
) -> None:
    """zero_cond_t QwenImage: steps 2..N build no modulate_index from a Python list (no host→device copy)."""

    def kwargs() -> dict:
        return nosync_target.call_kwargs(nosync_pipeline, nosync_call_context)

    guard = nosync_guard_kwargs("regression:modulate_index", nosync_target.name)
    nosync.add_report(regressions.modulate_index_case(nosync_pipeline, kwargs, **guard))
