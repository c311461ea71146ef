"""The step metrics of one pipeline: pipeline in, a Report with its numbers out, nothing of pytest.

Timed calls (host ms, device ms, peak memory per step) and one counting call (device ops and the lines that issued
them) after the pipeline's warm-up and one plain call like them, combined by pytest_nosync.step_cost.combine. On a
GPU counting inflates the times of the call it counts in, so it has a call of its own; under emulation every op
already runs through Python and the timed calls count too (one call fewer per target; saved and current runs are
measured alike). The calls stop at the latents (`latents_only`), and the counting mode is on in the steady steps only
(GuardOptions.ops_steps). How the timed calls are repeated is the caller's: the plugin hands them to
pytest-benchmark, whose rounds and statistics its users know.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from .. import source_identity, step_cost
from ..detection.devices import environment
from ..detection.guard_options import GuardOptions
from ..findings import Report
from .checks import CallKwargs, warm
from .guarded_call import calls_for, error_report, guarded_call
from .torch_defaults import torch_defaults

Repeat = Callable[[Callable[[], None], int], None]  # (one timed call, rounds) → runs it `rounds` times


def metrics_steps(steps: int) -> int:
    """Steps of a step-metrics call asked for `steps`: at least three, so that steady steps exist after the first."""
    return max(steps, 3)


def _repeat(call: Callable[[], None], rounds: int) -> None:
    for _ in range(rounds):
        call()


STEADY_FROM = 1  # the first step is not steady (first-step work of schedulers and caches): its numbers are dropped


def latents_only(call_kwargs: CallKwargs) -> CallKwargs:
    """The calls stop at the latents where the pipeline takes an `output_type`: the numbers are the steps', and the
    VAE decode after them (a third of some tiny calls) would only cost time."""

    def kwargs(steps: int) -> dict[str, Any]:
        made = call_kwargs(steps)
        return {**made, "output_type": "latent"} if "output_type" in made else made

    return kwargs


def counting(options: GuardOptions, steps: int, *, timed: bool = False) -> GuardOptions:
    """The options of a call that counts the ops of the steady steps of a `steps`-step call (and, `timed`, times
    every step): the counting mode is off in the first step and after the last."""
    checks = ("step_metrics", "device_ops") if timed else ("device_ops",)
    return replace(options, checks=checks, ops_steps=(STEADY_FROM, steps - 1))


@torch_defaults()
def _warm_up(pipe: Any, call_kwargs: CallKwargs, options: GuardOptions, steps: int, names: dict) -> Report | None:
    """The pipeline's warm-up call (once per pipeline), then one plain call of the measured call itself; the failing
    report when either raised. A pipeline keeps state from its last call into the next (UniPC's `timestep_list` holds
    the last call's timesteps into the first two steps, 8 bytes a step): after that second call it is the same
    whatever ran before in the process (another check's call of other steps, no call), and so are the numbers."""
    try:
        warm(pipe, call_kwargs, steps)
        with torch.no_grad():
            pipe(**latents_only(call_kwargs)(steps))
    except Exception as exc:
        return error_report(exc, options, **names)
    return None


def count_ops(pipe: Any, call_kwargs: CallKwargs, options: GuardOptions, *, steps: int = 3, test_id: str = "",
              target: str = "", steps_are_calls: bool = False) -> Report:  # fmt: skip
    """The counting call of `measure` on its own (after the warm-up): on a GPU its ops do not depend on what else runs
    on the machine, so it may be made ahead of the timed calls, while this process would wait (plugin.count_ahead)."""
    steps = max(steps, 2)
    names = {"test_id": test_id, "check": "step_metrics", "target": target}
    failed = _warm_up(pipe, call_kwargs, options, steps, names)
    if failed is not None:
        return failed
    return _counting_call(pipe, latents_only(call_kwargs), options, steps, names, calls_for(steps, steps_are_calls))


def _counting_call(
    pipe: Any, steps_only: CallKwargs, options: GuardOptions, steps: int, names: dict, calls: int
) -> Report:
    return guarded_call(pipe, lambda: steps_only(steps), counting(options, steps), calls=calls, **names)


def measure(
    pipe: Any,
    call_kwargs: CallKwargs,
    options: GuardOptions,
    *,
    steps: int = 3,
    rounds: int = 3,
    repeat: Repeat = _repeat,
    counted: Report | None = None,
    test_id: str = "",
    target: str = "",
    steps_are_calls: bool = False,
) -> Report:
    """The numbers of each steady step (after the first) of a `steps`-step call, in `report.metrics["step_metrics"]`.
    `counted`: the report of a `count_ops` call made ahead with the same options and steps (a GPU's counting call).
    `steps_are_calls`: the pipeline has no denoising loop; `steps` calls are made, each one step (guarded_call).
    A call that raises, or a guard that could not measure, returns that report instead (it fails)."""
    steps = max(steps, 2)
    names = {"test_id": test_id, "check": "step_metrics", "target": target}
    calls = calls_for(steps, steps_are_calls)
    failed = _warm_up(pipe, call_kwargs, options, steps, names)
    if failed is not None:
        return failed
    steps_only = latents_only(call_kwargs)
    timed: list[Report] = []
    counts_too = step_cost.counts_when_timed(options.backend)
    timing = counting(options, steps, timed=True) if counts_too else replace(options, checks=("step_metrics",))

    def timed_call() -> None:
        timed.append(guarded_call(pipe, lambda: steps_only(steps), timing, calls=calls, **names))

    repeat(timed_call, rounds)
    if not timed:  # a repeat that ran nothing
        timed_call()
    if counts_too:
        counted = timed[-1]
    elif counted is None:
        counted = _counting_call(pipe, steps_only, options, steps, names, calls)  # warmed up above
    for report in [*timed, counted]:
        if report.passed is False:
            return report
    env = environment(options.backend)
    about = {"target": target, "backend": options.backend, "device": env["device"], "torch": env["torch"],
             "diffusers": env["diffusers"], "steps": steps}  # fmt: skip
    numbers = step_cost.combine(
        [r.metrics["step_metrics"] for r in timed], counted.metrics["device_ops"], steady_from=STEADY_FROM, about=about
    )
    report = Report(test_id=test_id, check="step_metrics", target=target, backend=options.backend, steps=steps)
    report.passed = True
    report.metrics["step_metrics"] = numbers
    return report


def loop_place(pipe: Any) -> str:
    """file:line of the pipeline's `__call__` (where its denoising loop is): what time and memory findings name."""
    call = inspect.unwrap(type(pipe).__call__)
    try:
        filename = inspect.getsourcefile(call) or "<unknown>"
        line = inspect.getsourcelines(call)[1]
    except (OSError, TypeError):
        return f"{type(pipe).__name__}.__call__:0"
    return f"{source_identity.package_path(filename)}:{line}"
