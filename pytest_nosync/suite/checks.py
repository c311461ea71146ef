"""The suite's checks on one pipeline: pipeline in, Report out, nothing of pytest.

Each check is one of the guard's checks (pytest_nosync.checks.CHECKS, those marked `suite`) run on a real call: a
warm-up call on a pipeline's first use (first-call work such as lazy init, caches and cuDNN autotuning is not what a
step costs), then the measured call under a guard of that one check. What differs per check is how many steps the
measured call needs and how many of them are warm-up for the scheduler (`plan`, from the check's `Check` entry).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from ..checks import CHECKS, PIPELINE_CHECKS
from ..detection.detectors.memory import UNATTRIBUTED
from ..detection.guard_options import GuardOptions
from ..findings import Kind, Report
from ..policy import add_not_checked
from .guarded_call import calls_for, error_report, guarded_call
from .torch_defaults import torch_defaults

CallKwargs = Callable[[int], dict[str, Any]]  # steps → fresh kwargs of a realistic call


HISTORY_STEPS = (
    4  # the longest history a diffusers scheduler keeps in a list (PNDM's and IPNDM's ets, LMS's derivatives)
)


def scheduler_order(pipe: Any) -> int:
    """Steps a multistep scheduler needs before its state stops growing: its solver order, or, for a scheduler that
    keeps past model outputs in a list of its own (which grows until it reaches its length), the longest such
    history."""
    scheduler = getattr(pipe, "scheduler", None)
    config = getattr(scheduler, "config", None)
    order = int(getattr(config, "solver_order", None) or getattr(scheduler, "order", 1) or 1)
    # `is not None`: a scheduler's truth is its __len__, which Wuerstchen's DDPM scheduler cannot answer (its config
    # lacks num_train_timesteps): Stable Cascade's growth checks raised here on the H200
    keeps_history = any(isinstance(v, list) for v in vars(scheduler).values()) if scheduler is not None else False
    return max(order, HISTORY_STEPS) if keeps_history else order


def cache_fill_steps(pipe: Any) -> int:
    """Steps a cache hook on the pipeline's models needs before its state stops growing (0: none that grows).

    TaylorSeer keeps `max_order + 1` Taylor factors of each cached block output, one more at each of its first updates:
    every forward before `disable_cache_before_step`, then one every `cache_interval`. Its state is full after the
    update numbered `max_order + 1`, a bounded fill that a three-step call took for growth in every judged step (the
    H100 census, once Python's collector no longer blurred it). Read from the hooks diffusers registered, so that it
    holds for a user's own settings as for the scenario's."""
    steps = 0
    for model in vars(pipe).values():
        if not isinstance(model, torch.nn.Module):
            continue
        for module in model.modules():
            hook = getattr(getattr(module, "_diffusers_hook", None), "hooks", {}).get("taylorseer_cache")
            init = getattr(getattr(hook, "state_manager", None), "_init_kwargs", None)
            if hook is None or init is None:
                continue
            updates = int(init.get("max_order", 1)) + 1  # the update that fills the last factor, counted from 1
            before = int(hook.disable_cache_before_step)
            filled_at = updates - 1 if updates <= before else before + 1 + (updates - before - 1) * hook.cache_interval
            steps = max(steps, filled_at + 1)
            break  # every block of a model has the same settings
    return steps


def plan(check: str, pipe: Any, steps: int) -> tuple[int, int]:
    """(steps of the measured call, warm-up steps not judged) for `check` on `pipe`, from the check's entry: its
    warm-up, then at least `judged_steps` judged."""
    facts = CHECKS[check]
    # multistep schedulers keep `order` model outputs, cache hooks fill their state: legitimate growth
    warmup = max(scheduler_order(pipe), cache_fill_steps(pipe)) if facts.warms_until_steady else 1
    return max(steps, warmup + facts.judged_steps), warmup


_warm: set[int] = set()  # ids of the pipelines called once already (an id leaves the set with its pipeline)


@torch_defaults()
def warm(pipe: Any, call_kwargs: CallKwargs, steps: int) -> None:
    """One plain call on a pipeline's first use: first-call work (lazy initialisation, caches, cuDNN autotuning, CUDA
    context) is not what a step costs. Once per pipeline: its checks share it, and a second warm-up per check would
    double the suite's calls."""
    if id(pipe) in _warm:
        return
    with torch.no_grad():
        pipe(**call_kwargs(steps))
    _warm.add(id(pipe))
    with contextlib.suppress(TypeError):  # not weakly referable: its id stays (a later object with it is not warmed)
        weakref.finalize(pipe, _warm.discard, id(pipe))


@torch_defaults()
def warm_calls(pipe: Any, kwargs: Callable[[], dict[str, Any]], calls: int, device: torch.device | None) -> None:
    """`calls` plain calls, each waited for on a GPU: the profile command's `--warmup` (compile mode compiles the
    denoiser in the first), made however often it was warmed before."""
    for _ in range(calls):
        with torch.no_grad():
            pipe(**kwargs())
        if device is not None and device.type == "cuda":
            torch.cuda.synchronize(device)


def warmed(pipe: Any) -> None:
    """Count a pipeline as warm: a caller made its first call itself (the census's calibrating call)."""
    _warm.add(id(pipe))
    with contextlib.suppress(TypeError):
        weakref.finalize(pipe, _warm.discard, id(pipe))


def run_check(
    check: str,
    pipe: Any,
    call_kwargs: CallKwargs,
    options: GuardOptions,
    *,
    steps: int = 2,
    test_id: str = "",
    target: str = "",
    steps_are_calls: bool = False,
) -> Report:
    """The measured call under a guard of `check` alone (after the pipeline's warm-up call, see `warm`).
    `steps_are_calls`: the pipeline has no denoising loop, and each of `steps` calls is one step (guarded_call)."""
    if check not in PIPELINE_CHECKS:
        raise ValueError(f"unknown check {check!r}; choose from {', '.join(PIPELINE_CHECKS)}")
    steps, warmup = plan(check, pipe, steps)
    options = replace(options, checks=(check,), warmup_steps=warmup)
    try:
        warm(pipe, call_kwargs, steps)
    except Exception as exc:  # the pipeline itself fails: that is the finding
        return error_report(exc, options, test_id=test_id, check=check, target=target)
    calls = calls_for(steps, steps_are_calls)
    report = guarded_call(pipe, lambda: call_kwargs(steps), options, test_id=test_id, check=check, target=target,
                          calls=calls)  # fmt: skip
    if report.steps < steps and not report.of_kind(Kind.ERROR):
        # What the check judges needs those steps (steady steps after a warm-up): fewer checked less than it claims.
        add_not_checked(report, f"the call ran {report.steps} of the {steps} denoising steps the check asked for",
                        options.policy, options.known)  # fmt: skip
    locate = CHECKS[check].locates_on_rerun and not options.alloc_sites
    if locate and any(f.where == UNATTRIBUTED for f in report.failures):
        # The cheap pass saw growth; the same seeded call again, noting where each allocation was made, names it.
        options = replace(options, alloc_sites=True)
        located = guarded_call(pipe, lambda: call_kwargs(steps), options, test_id=test_id, check=check, target=target,
                               calls=calls)  # fmt: skip
        raised = located.of_kind(Kind.ERROR)
        if not raised:
            return located
        # Noting the sites (a dispatch mode) can raise where the plain call did not: FlexAttention compiles itself and
        # takes no dispatch mode. The growth the plain call measured stands, its line unnamed, and the report says why.
        why = f"; its line not named: the re-run noting allocation sites raised {raised[0].detail}"
        report.findings = [replace(f, detail=f.detail + why) if f.where == UNATTRIBUTED else f for f in report.findings]
    return report
