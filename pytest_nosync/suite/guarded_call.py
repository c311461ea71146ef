"""One pipeline call under a guard: the single place the suite, the regression cases, the context-parallel ranks
and the profile command run a pipeline guarded. An exception the pipeline raises (diffusers' own, a cache
technique's) becomes a finding of kind `error` at the line that raised it, judged like any other: a failure naming
the exception and the diffusers version, or a known issue when the baseline lists it. Never a skip."""

from __future__ import annotations

import functools
import inspect
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from .. import attribution, suite
from ..detection.detectors.base import was_ended_by_check
from ..detection.guard import Guard
from ..detection.guard_options import GuardOptions
from ..findings import Finding, Phase, Report
from ..policy import judge
from .torch_defaults import torch_defaults

attribution.user_code(suite.user_code)  # the suite's test modules and target builders are blamed, not skipped

Kwargs = dict[str, Any] | Callable[[], dict[str, Any]]


@torch_defaults()
def guarded_call(
    pipe: Any,
    kwargs: Kwargs,
    options: GuardOptions,
    *,
    test_id: str = "",
    check: str = "",
    target: str = "",
    about: Callable[[Report], Report] | None = None,
    calls: int = 0,
) -> Report:
    """Call `pipe(**kwargs)` under a guard whose steps end at the pipeline's step callback, and return its report.
    `calls`: a pipeline with no denoising loop (a latent upsampler, an image-to-embedding prior) is called that many
    times instead, each call one step: its loop is its caller's, a serving loop calling it (0: one call, its loop's
    steps).

    `kwargs` is built before the guard is entered: making them (host tensors copied to the device) is the harness's
    work, not the pipeline's. Given as a function, each call gets fresh ones (a generator is consumed by a call).
    `about`: the part of a report the caller judges (a regression case keeps the findings it is about), applied to
    the report returned. In "on-failure" trace mode a call failing on that part is made again under the profiler
    and the trace attached: passing calls pay nothing for tracing, also when the guard saw findings the caller
    leaves out. A recompile under `fail_on_recompile` ends the call; the guard has recorded it. Fail-fast mode's
    raise goes on to the test, at the offending line.
    """
    make = kwargs if callable(kwargs) else lambda: kwargs
    keep = about or (lambda report: report)

    def each_call() -> list[dict[str, Any]]:
        return [make() for _ in range(max(calls, 1))]

    report = keep(_call(pipe, each_call(), options, test_id, check, target, calls > 0))
    trace = options.trace
    if report.passed is False and trace is not None and trace.mode == "on-failure" and not trace.nsys:
        always = replace(options, trace=replace(trace, mode="always"))
        traced = _call(pipe, each_call(), always, test_id, check, target, calls > 0)
        attach_trace(report, keep(traced))
    return report


def calls_for(steps: int, steps_are_calls: bool) -> int:
    """guarded_call's `calls` for a call of `steps` steps: a pipeline without a denoising loop is called `steps` times,
    each call a step; any other once (0)."""
    return steps if steps_are_calls else 0


def attach_trace(report: Report, traced: Report) -> None:
    """The trace of a re-run attached to the first run's report (whose findings stand), saying whether the re-run
    under the profiler failed at the same places."""
    if traced.artifacts.get("trace"):
        report.artifacts["trace"] = traced.artifacts["trace"]
    if "diagnosis" in traced.metrics:
        report.metrics["diagnosis"] = traced.metrics["diagnosis"]
    same = _failing(traced) == _failing(report)
    report.metrics["trace_rerun_reproduced"] = same
    if not same:
        report.summary = (
            "the re-run under the profiler did not fail at the same places (its trace is attached; the findings "
            "above are the first run's)"
        )


def _failing(report: Report) -> set[tuple]:
    return {(f.kind, f.where, f.step) for f in report.failures}


def _call(
    pipe: Any, calls: list[dict[str, Any]], options: GuardOptions, test_id: str, check: str, target: str,
    steps_are_calls: bool,
) -> Report:  # fmt: skip
    guard = Guard(pipe, options, test_id=test_id, check=check, target=target)
    if _takes_step_callback(type(pipe)):  # its step ends there; for the others at their scheduler's step (annotate)
        calls = [{**kwargs, "callback_on_step_end": guard.callback_on_step_end} for kwargs in calls]
    with guard:
        try:
            with torch.no_grad():
                for kwargs in calls:
                    if steps_are_calls:  # a raise leaves the step open: its error is that step's
                        guard.begin_step()
                    pipe(**kwargs)
                    if steps_are_calls:
                        guard.end_step()
        except Exception as exc:
            if not guard.absorb(exc):
                record_error(guard, exc)
            elif not was_ended_by_check(exc):
                raise  # fail-fast mode: the raise reaches the caller
    return guard.report


@functools.lru_cache(maxsize=512)
def _takes_step_callback(cls: type) -> bool:
    try:
        return "callback_on_step_end" in inspect.signature(cls.__call__).parameters
    except (TypeError, ValueError):
        return False


def record_error(guard: Guard, exc: BaseException) -> Finding:
    """An exception raised inside the guard, as an `error` finding at its raise site."""
    return guard.record_exception(exc)


def error_report(exc: BaseException, options: GuardOptions, *, test_id: str = "", check: str = "", target: str = ""
                 ) -> Report:  # fmt: skip
    """The report of a case that raised before its guard ran (a cache technique refusing the model, a warm-up
    call): one `error` finding, judged against the baseline."""
    guard = Guard(None, replace(options, checks=()), test_id=test_id, check=check, target=target)
    recorded = guard.record_exception(exc)  # recorded by a guard never entered: at its raise site, in no step
    finding = replace(recorded, step=0, phase=Phase.IN_STEP, region=None)
    judged, passed = judge([finding], options.policy, options.known)
    report = Report(judged, test_id, check, target, options.backend, passed=passed)
    report.summary = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:500]
    return report
