"""Regression cases for fixes diffusers made to its hot loops; each fails if its fix regresses.

1. UniPC: the multistep predictor/corrector must not read GPU scalars back (`torch.tensor(rks)`) nor copy
   host constants per step (`torch.tensor([0.5], device=...)`), in any configuration people use.
2. set_begin_index: without it, a scheduler's first step finds its index with `nonzero().item()`.
3. Cached hook registries: entering/leaving `cache_context` must not walk the module tree every time.
4. modulate_index: a QwenImage transformer with `zero_cond_t=True` must not rebuild `modulate_index`
   from a Python list (a blocking host→device copy) on every forward.

Each case is a library function returning a Report; the suite runs them, and the repository's bug twins
prove each one fails on the pre-fix code.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
from diffusers import UniPCMultistepScheduler

from ..detection.guard import Guard
from ..detection.guard_options import GuardOptions
from ..findings import DENOISER_REGION, Kind, Report, Status
from .checks import warm
from .guarded_call import Kwargs, error_report, guarded_call

# ---- 1. UniPC ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UniPCConfig:
    solver_order: int
    solver_type: str
    prediction: str  # "flow" (Wan: flow_prediction + flow sigmas) or "epsilon"
    predict_x0: bool
    corrector: bool

    @property
    def id(self) -> str:
        return (
            f"order{self.solver_order}-{self.solver_type}-{self.prediction}"
            f"-x0{'on' if self.predict_x0 else 'off'}-corrector{'on' if self.corrector else 'off'}"
        )

    def scheduler_kwargs(self, steps: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "solver_order": self.solver_order,
            "solver_type": self.solver_type,
            "predict_x0": self.predict_x0,
            "disable_corrector": [] if self.corrector else list(range(steps)),
        }
        if self.prediction == "flow":
            kwargs.update(prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=3.0)
        else:
            kwargs.update(prediction_type="epsilon")
        return kwargs


def unipc_configs() -> list[UniPCConfig]:
    """Solver order 1-3 × bh1/bh2 × flow (Wan) / epsilon × predict_x0 × corrector.

    UniPC accepts flow prediction only with predict_x0 (it raises otherwise), so that pair is left out.
    """
    return [
        UniPCConfig(order, solver_type, prediction, x0, corrector)
        for order, solver_type, prediction, x0, corrector in itertools.product(
            (1, 2, 3), ("bh1", "bh2"), ("flow", "epsilon"), (True, False), (True, False)
        )
        if x0 or prediction != "flow"
    ]


WAN_UNIPC = UniPCConfig(2, "bh2", "flow", True, True)


def scheduler_loop(
    scheduler: Any,
    device: torch.device,
    steps: int = 8,
    *,
    begin_index: bool = True,
    options: GuardOptions | None = None,
    **report: str,
) -> Report:
    """Drive a scheduler alone through `steps` steps under the sync guard (a stand-in denoiser on device).
    `report`: the report's test_id, check and target."""
    scheduler.set_timesteps(steps, device=device)
    if begin_index and hasattr(scheduler, "set_begin_index"):
        scheduler.set_begin_index(0)
    generator = torch.Generator().manual_seed(0)
    sample = torch.randn((1, 4, 8, 8), generator=generator).to(device)
    timesteps = list(scheduler.timesteps.unbind(0))
    guard = Guard(None, replace(options or GuardOptions(), checks=("syncs",)), **report)
    with guard:
        for t in timesteps:
            with guard.step(), guard.annotate("scheduler_step"):
                model_output = sample * 0.1 + 0.05
                sample = scheduler.step(model_output, t, sample, return_dict=False)[0]
    return guard.report


def unipc_case(config: UniPCConfig, device: torch.device, steps: int = 8, **guard: Any) -> Report:
    """UniPC in `config`, driven alone: no sync in any step. `guard`: scheduler_loop's options and report names."""
    scheduler = UniPCMultistepScheduler(**config.scheduler_kwargs(steps))
    return scheduler_loop(scheduler, device, steps, **guard)


# ---- 2. set_begin_index --------------------------------------------------------------------------

INIT_INDEX_FUNCTIONS = frozenset({"_init_step_index", "index_for_timestep"})


def from_step_index_lookup(report: Report) -> Report:
    """Keep the findings whose stack passes through a scheduler's step-index lookup."""
    return _keep(report, lambda f: any(fr.function in INIT_INDEX_FUNCTIONS for fr in f.stack))


def pipeline_begin_index_case(
    pipe: Any, call_kwargs: Kwargs, options: GuardOptions | None = None, **report: str
) -> Report:
    """A pipeline call's syncs that come from the scheduler looking up its first step index."""
    options = replace(options or GuardOptions(), checks=("syncs",))
    return guarded_call(pipe, call_kwargs, options, about=from_step_index_lookup, **report)


# ---- 3. cached hook registries -------------------------------------------------------------------

CACHE_CONTEXT_FUNCTIONS = frozenset({"cache_context", "_set_context", "_set_cache_context", "_get_child_registries"})


def from_cache_context(report: Report) -> Report:
    """Keep the module-tree walks made on the way into or out of `cache_context`."""
    return _keep(report, lambda f: any(fr.function in CACHE_CONTEXT_FUNCTIONS for fr in f.stack))


def cache_context_case(
    pipe: Any,
    call_kwargs: Callable[[int], dict[str, Any]],
    steps: int = 3,
    cache_config: Any = None,
    options: GuardOptions | None = None,
    **report: str,
) -> Report:
    """Module-tree walks per steady-state step caused by cache_context, with a cache hook enabled or not.

    `call_kwargs(steps)` returns fresh call kwargs. The case builds the state it needs, whatever ran before it: the
    pipeline's first call (the warm-up its checks share, made here if none ran yet), then with a cache a call of two
    steps that builds what the hooks cache, then the measured call, whose first step is not judged either. A cache
    technique or pipeline that raises is the case's finding (kind `error`), never a skip.
    """
    options = replace(options or GuardOptions(), checks=("host_overhead",), warmup_steps=1)
    model = getattr(pipe, options.denoiser)
    try:
        warm(pipe, call_kwargs, steps)
        if cache_config is not None:
            model.enable_cache(cache_config)
            with torch.no_grad():
                pipe(**call_kwargs(2))  # the cache's first step computes, its second may reuse: both paths built
    except Exception as exc:
        _disable(model, cache_config)
        return error_report(exc, options, **report)
    try:
        return guarded_call(pipe, lambda: call_kwargs(steps), options, about=from_cache_context, **report)
    finally:
        _disable(model, cache_config)


def _disable(model: Any, cache_config: Any) -> None:
    if cache_config is not None and getattr(model, "is_cache_enabled", False):
        model.disable_cache()


def cache_context_cost(model: Any, repeats: int = 50) -> dict[str, float]:
    """What one enter/exit of `model.cache_context` costs: modules visited and host microseconds."""
    with model.cache_context("warmup"):  # let the registries build (and cache) their child lists
        pass
    g = Guard(None, GuardOptions(checks=("host_overhead",), warmup_steps=0))
    with g:
        for _ in range(repeats):
            with g.step(), model.cache_context("cond"):
                pass
    start = time.perf_counter()
    for _ in range(repeats):
        with model.cache_context("cond"):
            pass
    elapsed_us = (time.perf_counter() - start) * 1e6 / repeats
    visits = g.report.metrics.get("module_visits_per_step", {})
    return {
        "modules": float(sum(1 for _ in model.modules())),
        "visits_per_enter_exit": sum(visits.values()) / max(1, len(visits)),
        "us_per_enter_exit": round(elapsed_us, 1),
    }


# ---- 4. modulate_index ---------------------------------------------------------------------------


def from_denoiser_after_first_step(report: Report) -> Report:
    """Keep the syncs inside the denoiser from the second step on: what a cached value avoids."""
    return _keep(report, lambda f: f.region == DENOISER_REGION and (f.step or 0) >= 1)


def modulate_index_case(pipe: Any, call_kwargs: Kwargs, options: GuardOptions | None = None, **report: str) -> Report:
    """A zero_cond_t QwenImage transformer driven by an edit pipeline: no sync in its forward from step 2."""
    if not getattr(getattr(pipe, "transformer", None), "zero_cond_t", False):
        raise ValueError("the modulate_index case needs a QwenImage transformer with zero_cond_t=True")
    options = replace(options or GuardOptions(), checks=("syncs",))
    try:
        with torch.no_grad():
            pipe(**(call_kwargs() if callable(call_kwargs) else call_kwargs))
    except Exception as exc:
        return error_report(exc, options, **report)
    return guarded_call(pipe, call_kwargs, options, about=from_denoiser_after_first_step, **report)


# ---- helpers -------------------------------------------------------------------------------------


def _keep(report: Report, wanted: Callable[[Any], bool]) -> Report:
    """The report with only the findings a case is about (their statuses kept), passed recomputed."""
    # an exception, or a check that could not run, is every case's business
    kept = [f for f in report.findings if wanted(f) or f.kind in (Kind.ERROR, Kind.NOT_CHECKED)]
    return replace(report, findings=kept, passed=not any(f.status == Status.FAIL for f in kept))
