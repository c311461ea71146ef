"""The four checks of the target suite, as library functions: pipeline in, Report out.

Each check first makes a warm-up call (first-call work such as lazy init, caches and cuDNN autotuning is
not what a step costs), then the measured call under a guard. They know nothing of pytest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..findings import Report
from ..guard import Guard
from ..policy import KnownMatcher, Policy, rejudge
from ..profiling.config import TraceConfig

CHECKS = ("syncs", "graph_breaks", "alloc_growth", "host_overhead")


@dataclass(frozen=True)
class CheckOptions:
    """What every check needs besides the pipeline. `call_kwargs(steps)` returns fresh call kwargs."""

    call_kwargs: Callable[[int], dict[str, Any]]
    steps: int = 2
    backend: str = "auto"
    mode: str = "warn"
    profile: bool = False
    policy: Policy = field(default_factory=Policy)
    known: KnownMatcher | None = None
    denoiser: str = "transformer"
    name: str = ""
    target: str = ""
    limits: dict[str, Any] | None = None
    trace: TraceConfig | None = None  # trace the measured call (detectors.tracer)


def dynamo_device(device: torch.device) -> torch.device:
    """Where the graph check runs: dynamo breaks the graph on the emulated device's wrapper tensors, and graph
    breaks and recompiles are device-independent, so under emulation it runs on the plain CPU."""
    from ..emulation import is_emulated

    return torch.device("cpu") if is_emulated(device) else device


def scheduler_order(pipe: Any) -> int:
    """Steps a multistep scheduler needs before its state stops growing (its solver order)."""
    scheduler = getattr(pipe, "scheduler", None)
    config = getattr(scheduler, "config", None)
    return int(getattr(config, "solver_order", None) or getattr(scheduler, "order", 1) or 1)


def _call(pipe: Any, kwargs: dict[str, Any], guard: Guard | None = None) -> Any:
    """Call the pipeline with kwargs built beforehand: building them (host tensors copied to the device) is
    the harness's work, not the pipeline's, and must not happen inside a guard."""
    if guard is not None:
        kwargs = {**kwargs, "callback_on_step_end": guard.callback_on_step_end}
    with torch.no_grad():
        return pipe(**kwargs)


def _guard(pipe: Any, options: CheckOptions, checks: tuple[str, ...], **extra: Any) -> Guard:
    return Guard(
        pipe,
        checks=checks,
        backend=options.backend,
        mode=options.mode,
        profile=options.profile,
        policy=options.policy,
        known=options.known,
        denoiser=options.denoiser,
        name=options.name,
        limits=options.limits,
        trace=options.trace,
        **extra,
    )


def _finish(report: Report, check: str, options: CheckOptions) -> Report:
    report.check = check
    report.target = options.target
    report.test_id = options.name
    return report


def check_syncs(pipe: Any, options: CheckOptions) -> Report:
    """No device→host or blocking host→device sync inside the denoising steps."""
    _call(pipe, options.call_kwargs(options.steps))
    kwargs = options.call_kwargs(options.steps)
    guard = _guard(pipe, options, ("syncs",))
    with guard:
        _call(pipe, kwargs, guard)
    report = guard.report
    outside = sum(f.count for f in report.findings if f.phase != "step")
    if outside:
        report.summary = (
            f"{outside} sync(s) before/after the denoising loop are reported and allowed "
            "(set count_outside_steps to count them)"
        )
    return _finish(report, "syncs", options)


def check_alloc_growth(pipe: Any, options: CheckOptions) -> Report:
    """Steady-state steps must not leave memory behind; the scheduler's first `order` steps may."""
    warmup = scheduler_order(pipe)
    steps = max(options.steps, warmup + 2)  # two judged steps after the scheduler filled its history
    _call(pipe, options.call_kwargs(steps))
    kwargs = options.call_kwargs(steps)
    guard = _guard(pipe, options, ("alloc_growth",), warmup_steps=warmup)
    with guard:
        _call(pipe, kwargs, guard)
    return _finish(guard.report, "alloc_growth", options)


def check_host_overhead(pipe: Any, options: CheckOptions) -> Report:
    """No module-tree walk in a steady-state step; host ms per step reported."""
    steps = max(options.steps, 2)
    _call(pipe, options.call_kwargs(steps))
    kwargs = options.call_kwargs(steps)
    guard = _guard(pipe, options, ("host_overhead",), warmup_steps=1)
    with guard:
        _call(pipe, kwargs, guard)
    return _finish(guard.report, "host_overhead", options)


def check_graph_breaks(pipe: Any, options: CheckOptions) -> Report:
    """No graph break in the denoiser (dynamo explain on a real step's inputs) and no recompile
    between steps of a compiled run."""
    from ..detectors.graph_breaks import capture_inputs, explain_graph_breaks

    denoiser = getattr(pipe, options.denoiser)
    with capture_inputs(denoiser) as captured:
        _call(pipe, options.call_kwargs(options.steps))
    breaks, metrics = explain_graph_breaks(denoiser, captured["args"], captured["kwargs"])
    kwargs = options.call_kwargs(options.steps)
    guard = _guard(pipe, options, ("recompiles",))
    try:
        with guard:
            _call(pipe, kwargs, guard)
    except RuntimeError as exc:
        if "Detected recompile" not in str(exc):
            raise
    judged, passed = rejudge(breaks + guard.report.findings, options.policy, options.known)
    # the guard's report, updated in place: a trace held for later (on-failure) is attached to this object
    report = guard.report
    report.findings, report.passed = judged, passed
    report.metrics = {**metrics, **report.metrics}
    return _finish(report, "graph_breaks", options)


RUNNERS: dict[str, Callable[[Any, CheckOptions], Report]] = {
    "syncs": check_syncs,
    "graph_breaks": check_graph_breaks,
    "alloc_growth": check_alloc_growth,
    "host_overhead": check_host_overhead,
}


def run_check(check: str, pipe: Any, options: CheckOptions) -> Report:
    if check not in RUNNERS:
        raise ValueError(f"unknown check {check!r}; choose from {', '.join(CHECKS)}")
    return RUNNERS[check](pipe, options)
