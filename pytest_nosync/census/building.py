"""A census item's run without pytest (`run`): its tester's pipeline built and calibrated, its scenario turned on, its
check, from what the pytest side (plugin.census) passes in: the item's parts (its tester's state, which makes the
driver collection chose for it), the call context its check runs in, a maker of its guard options, and the block that
records the code the plain build ran.

The plain pipeline is built and calibrated first, once per run, under the checks' torch defaults and inside that
block (census.changed records its executed code for --nosync-changed); a scenario's pipeline is built afresh, its
calibration the plain one's. Both take the suite's path (suite.pipelines.prepare), where a raise while building,
calibrating or turning the scenario on is the checks' finding. What cannot be checked here raises NotChecked with its
sentence, which the pytest side skips the item with and counts.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from ..detection.guard_options import GuardOptions
from ..findings import Report
from ..scenarios import PLAIN, SCENARIOS, Scenario
from ..suite import process_caches
from ..suite.checks import plan, warmed
from ..suite.pipelines import Prepared, check, prepare
from ..suite.scenarios import NotApplicable
from ..suite.shared_traces import TraceStore
from ..suite.targets.base import CallContext
from ..suite.torch_defaults import torch_defaults
from .testers import NotDrivable, Tester


class NotChecked(Exception):
    """A census item this run does not check: "not checked: <why>" (its tester cannot be driven here) or "not
    checkable: <why>" (its pipeline cannot take the check or the scenario)."""


@dataclass
class Built:
    """A tester's state in this run: what makes its driver (chosen at collection), the driver once made, and its
    pipeline per device (or why it cannot be driven)."""

    driver: Callable[[], Tester]
    tester: Tester | None = None
    pipelines: dict[tuple, Prepared] = field(default_factory=dict)  # (device, scenario, its settings) → pipeline
    not_drivable: str = ""
    error: BaseException | None = None  # the plain call raised: every check reports it as its finding

    def release(self) -> None:
        """After the tester's last check: its pipelines and test instance go."""
        self.pipelines.clear()
        if self.tester is not None:
            self.tester.release()

    def release_scenario(self, scenario: str) -> None:
        """After a scenario's last check: its pipeline (built afresh) goes."""
        for key in [key for key in self.pipelines if key[1] == scenario]:
            del self.pipelines[key]
        gc.collect()  # its hooks hold it in reference cycles; the heap collection left is frozen, so this is quick

    @property
    def denoiser(self) -> str:
        calibration = self.tester.calibration if self.tester is not None else None
        return calibration.denoiser if calibration is not None else "transformer"


# The block the plain build and calibration run in, which records the code they ran for a later --nosync-changed
# (census.changed.recorded, with where it records: given by the pytest side, which knows pytest's cache)
Recording = Callable[[], AbstractContextManager]


Options = Callable[[str, str], GuardOptions]  # (the tester's target name, its denoiser) → the item's GuardOptions


def run(
    built: Built,
    scenario: Scenario,
    check_name: str,
    *,
    ctx: CallContext,
    dtype: str | None,
    options: Options,
    recording: Recording,
    test_id: str,
    share: TraceStore | None = None,
) -> Report:
    """A census item's report: `check_name` on its tester's pipeline with `scenario` (`built`: the tester's state in
    this run), in the suite's call context for the check `ctx` (float32 unless `dtype`), under
    `options(target, denoiser)` once the tester is built (`share`: the run's store of graph verdicts,
    suite.shared_traces). NotChecked for what cannot be checked here."""
    ctx = census_context(ctx, dtype)
    pipeline = prepared(built, scenario, ctx, recording)
    return checked(built, pipeline, check_name, ctx, options(built.tester.name, built.denoiser), test_id, share)


def census_context(ctx: CallContext, dtype: str | None) -> CallContext:
    """The suite's call context for a check, in float32 unless --nosync-dtype (`dtype`) says otherwise: the testers
    build their components for it, as their own tests run them."""
    return ctx if dtype else replace(ctx, dtype=torch.float32)


def prepared(
    built: Built,
    scenario: Scenario,
    ctx: CallContext,
    recording: Recording,
) -> Prepared:
    """The tester's pipeline on ctx's device with `scenario` (see the module doc; the plain build and calibration run
    inside `recording()`). NotChecked for a tester that cannot be driven here, or a scenario that does not apply."""
    if built.not_drivable:
        raise NotChecked(f"not checked: {built.not_drivable}")
    plain = (str(ctx.device), PLAIN, ())
    if plain not in built.pipelines and built.error is None:

        def calibrated() -> Any:
            # built and calibrated under the checks' torch defaults: a module's determinism decides no call
            with recording(), torch_defaults():
                built.tester = built.tester or built.driver()
                pipe = built.tester.build(ctx.device, ctx.dtype)
                # a class's checks start from empty class-level caches, whatever the worker built before; its
                # scenarios' pipelines then add a few entries each, in the same order every run
                process_caches.forget(pipe)
                built.tester.prelude(pipe, ctx)
                built.tester.calibrate(pipe, ctx)
            return pipe

        try:  # the pipeline's own constructor, move or calibrating call raised: the checks' finding (its error)
            result = prepare(calibrated, SCENARIOS[PLAIN], built.denoiser, ctx.device, then=warmed,
                             callers=(NotDrivable,))  # fmt: skip
        except NotDrivable as exc:
            built.not_drivable = str(exc)
            raise NotChecked(f"not checked: {built.not_drivable}") from None
        if result.error is not None:
            built.error = result.error
        else:
            built.pipelines[plain] = result
    if built.error is not None:
        return Prepared(scenario, error=built.error)
    scenario = built.tester.documented(scenario)  # the parameters the tester sets for its pipeline
    key = (str(ctx.device), scenario.name, tuple(scenario.settings().items()))
    if key not in built.pipelines:
        tester = built.tester
        with torch_defaults():
            built.pipelines[key] = prepare(
                lambda: tester.build(ctx.device, ctx.dtype),
                scenario,
                built.denoiser,
                ctx.device,
                then=lambda pipe: tester.prelude(pipe, ctx),
            )
    result = built.pipelines[key]
    if result.not_applicable:
        raise NotChecked(f"not checkable: {result.not_applicable}")
    return result


def checked(
    built: Built,
    pipeline: Prepared,
    check_name: str,
    ctx: CallContext,
    options: GuardOptions,
    test_id: str,
    share: TraceStore | None = None,
) -> Report:
    """`check_name` on the prepared pipeline (suite.pipelines.check: the suite's check), its report naming the
    pipeline and its denoiser. NotChecked where the pipeline cannot take the check or the scenario. `share`: the
    run's store of graph verdicts (suite.shared_traces), None to trace every class."""
    tester = built.tester
    if pipeline.error is None:
        _beyond_fixed_steps(tester, check_name, pipeline.pipe, ctx.steps)
    target = tester.target()
    try:
        report = check(pipeline, check_name, lambda pipe: target.kwargs_by_steps(pipe, ctx), options,
                       steps=ctx.steps, test_id=test_id, target=target.name, share=share,
                       steps_are_calls=target.steps_are_calls)  # fmt: skip
    except NotApplicable as exc:  # a call showed the scenario has no support for the pipeline's inputs
        raise NotChecked(f"not checkable: {exc}") from None
    report.metrics["pipeline"] = target.pipeline_class
    report.metrics["denoiser"] = target.denoiser
    report.metrics.update(tester.report_facts())  # a stand-in tester, generated inputs or components: said so
    return report


def _beyond_fixed_steps(tester: Tester, check_name: str, pipe: Any, steps: int) -> None:
    """A check that needs more steps than the pipeline runs whatever num_inference_steps says is not checkable: a
    property of the pipeline (SanaSprint's SCM schedule is capped at two), skipped with that reason and counted."""
    calibration = tester.calibration
    fixed = calibration.fixed_steps if calibration is not None else None
    needed = plan(check_name, pipe, steps)[0]
    if fixed is not None and fixed < needed:
        raise NotChecked(  # the check's name and need left out: one reason for all of a class's checks it stops
            f"not checkable: {tester.pipeline_class.__name__} runs {fixed} denoising step(s) a call whatever "
            f"num_inference_steps asks ({calibration.fixed_because}), fewer than the check needs"
        )
