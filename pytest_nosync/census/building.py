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
from ..suite.checks import warmed
from ..suite.pipelines import FixedSteps, Prepared, check, prepare
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
    suite.shared_traces), through the suite's check (suite.pipelines.check), its report naming the pipeline and its
    denoiser. NotChecked for what cannot be checked here: the tester, the scenario or the check (a pipeline whose
    steps are fixed at fewer than the check needs)."""
    ctx = census_context(ctx, dtype)
    pipeline = prepared(built, scenario, ctx, recording)
    tester = built.tester
    target, guard_options = tester.target(), options(tester.name, built.denoiser)
    try:
        report = check(pipeline, check_name, lambda pipe: target.kwargs_by_steps(pipe, ctx), guard_options,
                       steps=ctx.steps, test_id=test_id, target=target.name, share=share,
                       steps_are_calls=target.steps_are_calls, fixed_steps=fixed_steps(tester))  # fmt: skip
    except NotApplicable as exc:  # the check or the scenario cannot be checked on this pipeline (see suite.pipelines)
        raise NotChecked(f"not checkable: {exc}") from None
    report.metrics["pipeline"] = target.pipeline_class
    report.metrics["denoiser"] = target.denoiser
    report.metrics.update(tester.report_facts())  # a stand-in tester, generated inputs or components: said so
    return report


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


def fixed_steps(tester: Tester) -> FixedSteps | None:
    """The steps every call of the tester's pipeline runs whatever num_inference_steps asks, where its calibration
    found them fixed (None: they follow it)."""
    calibration = tester.calibration
    fixed = calibration.fixed_steps if calibration is not None else None
    if fixed is None:
        return None
    return FixedSteps(fixed, tester.pipeline_class.__name__, calibration.fixed_because)
