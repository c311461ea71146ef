"""The one path a pipeline takes to be checked, for the built-in suite and the census of diffusers' tester classes
alike: build → the scenario turned on (suite.scenarios) → what the caller does before its first call (the census's
prelude, the profile command's compiling) → the check (suite.checks.run_check: a warm-up call on first use, then the
measured call under a guard), or, for the profile command, its own warm-up calls and one call under a guard of its
options as they are (`call`).

What a scenario does to a pipeline is data of the result, not an exception the caller must route: `Prepared` says
whether the scenario does not apply (a reason, counted) or raised while it was turned on (the checks' `error`
finding, judged against the baseline like any other). A build that fails is the caller's to report (a target the
installed diffusers lacks, a tester that cannot be driven), or, where the caller says so, the pipeline's finding too
(the census: a tester's pipeline whose constructor raises).

The suite's tests (plugin.suite_run), a marked test's own pipeline (plugin.run_hooks: its scenario), the census's
plain and scenario pipelines (census.building), the graph helpers (plugin.graph_helpers.helper) and the profile
command (cli_profile) all come here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from ..checks import CHECKS
from ..detection.guard_options import GuardOptions
from ..findings import Kind, Report
from ..scenarios import PLAIN, SCENARIOS, Scenario
from ..source_identity import short_place
from .checks import CallKwargs, plan, run_check, warm_calls
from .guarded_call import error_report, guarded_call
from .scenarios import NotApplicable, apply, calls_context, kept_process_wide
from .shared_traces import TraceStore, run_shared


class Uncallable(Exception):
    """The pipeline raised in its plain call: a finding of the check (kind `error`), not a reason to skip it."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class Prepared:
    """A built pipeline with its scenario on, or why it has none to check."""

    scenario: Scenario
    pipe: Any = None
    error: BaseException | None = None  # the scenario (or what followed it) raised: every check reports it
    not_applicable: str = ""  # the scenario does not apply here: every check is skipped with this reason
    device: torch.device | None = None  # where it runs (a warm-up call on a GPU is waited for: `call`)


class FixedSteps(NamedTuple):
    """A pipeline whose every call runs `steps` denoising steps whatever num_inference_steps asks (`because`):
    a check that needs more is not applicable to it (`pipeline` names it in the reason)."""

    steps: int
    pipeline: str
    because: str


def prepare(
    build: Callable[[], Any],
    scenario: Scenario | None,
    denoiser: str,
    device: torch.device,
    then: Callable[[Any], None] | None = None,
    *,
    callers: tuple[type[Exception], ...] | None = None,
) -> Prepared:
    """`build()`, then `scenario` turned on, then `then(pipe)`; see the module doc. A raise in `build()` is the
    caller's (a target the installed diffusers lacks, a checkpoint that does not load) unless `callers` names the
    raises that are: then any other is the pipeline's finding (`Prepared.error`), as a scenario's raise is."""
    scenario = scenario or SCENARIOS[PLAIN]
    try:
        pipe = build()
    except Exception as exc:
        if callers is None or isinstance(exc, callers):
            raise
        # the pipeline's own constructor, move or first call raised
        return Prepared(scenario, error=_raised(exc), device=device)
    try:
        with kept_process_wide():
            apply(scenario, pipe, denoiser, device)
        if then is not None:
            then(pipe)
    except NotApplicable as exc:
        return Prepared(scenario, not_applicable=str(exc), device=device)
    except Exception as exc:  # the feature itself raised on this pipeline: an upstream bug to report
        return Prepared(scenario, pipe, error=_raised(exc), device=device)
    return Prepared(scenario, pipe, device=device)


def _raised(exc: Exception) -> BaseException:
    """The exception to report, at its raise site: the pipeline's own, where a call raised it (Uncallable)."""
    return exc.error if isinstance(exc, Uncallable) else exc


def check(
    prepared: Prepared,
    check: str,
    call_kwargs: Callable[[Any], CallKwargs],
    options: GuardOptions,
    *,
    steps: int = 2,
    test_id: str = "",
    target: str = "",
    share: TraceStore | None = None,
    steps_are_calls: bool = False,
    fixed_steps: FixedSteps | None = None,
) -> Report:
    """`check` on the prepared pipeline (`call_kwargs(pipe)`: steps → a call's kwargs), or the error its scenario
    raised, as the report of that check. NotApplicable where a call raised what the scenario's registry entry says
    means no support for the pipeline's inputs (`Scenario.unsupported`): the pipeline's later checks under it are not
    applicable for the same reason, without a call. `share`: a dynamo check's verdict may come from another
    pipeline's trace with the same key (suite.shared_traces). `steps_are_calls`: a pipeline without a denoising
    loop, each of its calls one step (run_check). `fixed_steps`: the pipeline runs that many steps whatever the count
    asks, and a check that needs more is NotApplicable (its later checks are still made)."""
    report = _refused(prepared, options, test_id=test_id, check=check, target=target)
    if report is None:
        _within(fixed_steps, check, prepared.pipe, steps)
        kwargs = call_kwargs(prepared.pipe)

        def compute() -> Report:
            return run_check(check, prepared.pipe, kwargs, options, steps=steps, test_id=test_id, target=target,
                             steps_are_calls=steps_are_calls)  # fmt: skip

        with calls_context(prepared.scenario):
            if share is not None and CHECKS[check].dynamo and not steps_are_calls:  # keys know a loop's steps
                report = run_shared(share, prepared.scenario, check, prepared.pipe, kwargs, options, compute,
                                    steps=steps, test_id=test_id, target=target)  # fmt: skip
            else:
                report = compute()
    return _under_scenario(prepared, report)


def call(
    prepared: Prepared,
    call_kwargs: Callable[[Any], dict[str, Any]],
    options: GuardOptions,
    *,
    warmup: int,
    test_id: str = "",
    check: str = "",
    target: str = "",
) -> Report:
    """One call of the prepared pipeline (`call_kwargs(pipe)`: a call's kwargs) under a guard of `options` as they
    are, after `warmup` plain calls (each waited for on a GPU): the profile command's, whose guard is its own (a
    trace, the sync check where syncs exist) rather than one check's with the suite's plan. A raise in the scenario,
    a warm-up call or the call is the report's `error` finding, as in `check`."""
    report = _refused(prepared, options, test_id=test_id, check=check, target=target)
    if report is None:
        pipe = prepared.pipe
        with calls_context(prepared.scenario):
            try:
                warm_calls(pipe, lambda: call_kwargs(pipe), warmup, prepared.device)
            except Exception as exc:  # the pipeline itself fails before the guarded call: that is the finding
                report = error_report(exc, options, test_id=test_id, check=check, target=target)
            else:
                report = guarded_call(pipe, lambda: call_kwargs(pipe), options, test_id=test_id, check=check,
                                      target=target)  # fmt: skip
    return _under_scenario(prepared, report)


def _refused(prepared: Prepared, options: GuardOptions, *, test_id: str, check: str, target: str) -> Report | None:
    """Before a call: NotApplicable where the scenario does not apply, the report of the error it raised while the
    pipeline was prepared (its `error` finding), or None: the pipeline is there to call."""
    if prepared.not_applicable:
        raise NotApplicable(prepared.not_applicable)
    if prepared.error is not None:
        return error_report(prepared.error, options, test_id=test_id, check=check, target=target)
    return None


def _within(fixed: FixedSteps | None, check: str, pipe: Any, steps: int) -> None:
    """NotApplicable where the pipeline runs fewer steps than `check` needs whatever num_inference_steps asks: a
    property of the pipeline (SanaSprint's SCM schedule is capped at two), one reason for every check it stops."""
    if fixed is not None and fixed.steps < plan(check, pipe, steps)[0]:
        raise NotApplicable(  # the check's name and need left out: one reason for all of a pipeline's checks it stops
            f"{fixed.pipeline} runs {fixed.steps} denoising step(s) a call whatever num_inference_steps asks "
            f"({fixed.because}), fewer than the check needs"
        )


def _under_scenario(prepared: Prepared, report: Report) -> Report:
    """After a call: the report named by its scenario, or NotApplicable where its raise says the scenario has no
    support for the pipeline (the pipeline then goes: its later checks are not applicable for the same reason)."""
    report.scenario = prepared.scenario.name
    reason = unsupported(prepared.scenario, report)
    if reason:
        prepared.not_applicable, prepared.pipe = reason, None
        raise NotApplicable(reason)
    return report


def unsupported(scenario: Scenario, report: Report) -> str:
    """Why `scenario` has no support for the pipeline, where the report's raise says so (`Scenario.unsupported`),
    else ""."""
    for finding in report.of_kind(Kind.ERROR):
        said = f"{finding.data.get('exception', '')}: {finding.data.get('message', '')}".strip()
        if any(re.search(pattern, said, re.MULTILINE) for pattern in scenario.unsupported):
            first, where = said.splitlines()[0][:200], short_place(finding.where)
            return f"{scenario.name} has no support for this pipeline's inputs here: {first} (at {where})"
    return ""
