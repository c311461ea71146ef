"""The suite's part of a checking run: the selected targets, where and how their pipelines are called, the pipelines
built once per run, and what the suite's fixtures do (a check, the step metrics). Owned by the NosyncSession (its
`suite`), which it asks only for a test's options (parts.RunOptions); the graph helpers, when the run has them, are
asked here for the graph checks they traced.

What imports torch (the targets' registry, devices, suite.pipelines, scenarios and measure) is imported inside the
functions that use it: the session imports this module before the run's options are checked."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pytest

from ..checks import PIPELINE_CHECKS
from ..findings import Report
from ..ids import plain_nodeid, target_param
from ..scenarios import PLAIN, SCENARIOS, Scenario
from ..step_cost import default_rounds, identify_sites
from ..suite import TARGETS_MODULE
from ..suite.targets.base import CallContext, Target
from .benchmark import EXTRA_KEY, benchmark_repeat, judge_step_metrics, saving

if TYPE_CHECKING:
    import torch

    from ..suite.pipelines import Prepared
    from .graph_helpers import GraphHelperRun
    from .parts import RunOptions


class SuiteRun:
    def __init__(self, session: RunOptions) -> None:
        self.session = session
        self.helpers: GraphHelperRun | None = None  # set when the run hands graph checks to helper processes
        self._pipelines: dict[tuple, Any] = {}

    @property
    def settings(self) -> Any:
        return self.session.settings

    # ---- targets -------------------------------------------------------------------------------------------------
    def selected(self) -> list[Target]:
        """The targets --nosync-targets selects (all by default), validated at configure time."""
        from ..suite.targets.registry import TARGETS, lookup  # imports torch: after option checks

        return lookup(self.settings.targets) if self.settings.targets else list(TARGETS.values())

    def scenarios(self) -> tuple[Scenario, ...]:
        """The scenarios --nosync-scenarios selects (plain alone by default)."""
        return self.settings.scenarios or (SCENARIOS[PLAIN],)

    def generate_target_params(self, metafunc: pytest.Metafunc) -> None:
        """A test that takes `nosync_target` without parametrizing it runs once per selected built-in target, and per
        selected scenario where it takes `nosync_scenario` too (the suite's checks do): `test_syncs[flux]`,
        `test_syncs[flux-first_block_cache]`."""
        if any(m.args and m.args[0] == "nosync_target" for m in metafunc.definition.iter_markers("parametrize")):
            return  # the test parametrizes its own targets
        # the checks take every scenario; a test of its own pipeline (a regression case) takes the plain one
        own = set(inspect.signature(metafunc.function).parameters)
        if not ({"nosync_check", "nosync_step_metrics"} & set(metafunc.fixturenames) or "nosync_scenario" in own):
            metafunc.parametrize(
                "nosync_target",
                [pytest.param(t, id=t.name, marks=pytest.mark.xdist_group(t.name)) for t in self.selected()],
                indirect=True,
            )
            return
        # a scenario builds a pipeline of its own: its checks are a work unit of their own, so that xdist spreads the
        # scenarios of one target over the workers (six targets were six units whatever -n said)
        metafunc.parametrize(
            ("nosync_target", "nosync_scenario"),
            [
                pytest.param(t, s, id=(unit := target_param(t.name, s.name)), marks=pytest.mark.xdist_group(unit))
                for t in self.selected()
                for s in self.scenarios()
            ],
            indirect=True,
        )  # fmt: skip

    def deselect_checks(self, items: list[pytest.Item]) -> None:
        """The suite's tests of checks --nosync-checks does not select (cudagraphs, unless named) are deselected."""
        chosen = {f"test_{c}" for c in self.settings.pipeline_checks}
        others = {f"test_{c}" for c in PIPELINE_CHECKS} - chosen
        dropped = [
            item for item in items
            if getattr(item, "originalname", None) in others and str(item.path) == str(TARGETS_MODULE)
        ]  # fmt: skip
        if dropped:
            self.session.config.hook.pytest_deselected(items=dropped)
            kept = set(map(id, dropped))
            items[:] = [item for item in items if id(item) not in kept]

    def target(self, request: pytest.FixtureRequest) -> Target:
        """The Target of a test: a built-in one by name, or the test's own Target object. A target this diffusers
        lacks the classes of is skipped, and counted in the summary."""
        # imports torch: after option checks
        from ..suite.targets.registry import UnknownTarget, lookup, missing_classes

        target = getattr(request, "param", None)
        if isinstance(target, str):
            try:
                (target,) = lookup([target])
            except UnknownTarget as exc:
                raise pytest.UsageError(str(exc)) from None
            if self.settings.targets and target.name not in self.settings.targets:
                pytest.skip(f"target {target.name} is not selected by --nosync-targets")
        if not isinstance(target, Target):
            raise pytest.UsageError("nosync_target needs a parameter: a target name or a pytest_nosync Target")
        missing = missing_classes(target)
        if missing:
            import diffusers  # imports diffusers: only where a target lacks its classes

            pytest.skip(
                f"target {target.name}: diffusers {diffusers.__version__} has no {', '.join(missing)} "
                "(needs a newer diffusers)"
            )
        return target

    # ---- pipelines -----------------------------------------------------------------------------------------------
    @cached_property
    def call_context(self) -> CallContext:
        """Where and how the suite calls pipelines: the backend's device (or --nosync-device), dtype and steps."""
        import torch  # after option checks

        from ..detection import devices  # imports torch: after option checks

        settings = self.settings
        device = torch.device(settings.device) if settings.device else devices.execution_device(settings.backend)
        return CallContext(device=device, dtype=getattr(torch, settings.suite_dtype), steps=settings.steps)

    def check_context(self, check: str) -> CallContext:
        """The call context `check` runs in: the suite's, on the plain CPU under the emulation where the check runs
        there (devices.for_checks: dynamo cannot trace the stand-in's tensors)."""
        from ..detection import devices  # imports torch: after option checks

        ctx = self.call_context
        return replace(ctx, device=devices.for_checks(ctx.device, (check,)))

    def _key(self, target: Target, device: torch.device, dtype: torch.dtype, scenario: Scenario | None = None) -> tuple:
        checkpoint = self.settings.checkpoint.get(target.name)
        scenario = scenario or SCENARIOS[PLAIN]
        return (target.name, id(target), str(device), str(dtype), scenario.name, tuple(scenario.settings().items()),
                checkpoint)  # fmt: skip

    def built(self, target: Target, device: torch.device, dtype: torch.dtype) -> Any:
        """The target's plain pipeline if a test of this run has built it, else None (builds nothing)."""
        prepared = self._pipelines.get(self._key(target, device, dtype))
        return prepared.pipe if prepared is not None else None

    def prepared(
        self, target: Target, device: torch.device, dtype: torch.dtype, scenario: Scenario | None = None
    ) -> Prepared:
        """The target's pipeline on `device` in `dtype` with `scenario` turned on, built once per run (suite.pipelines:
        the one path of the suite and the census). A checkpoint asked for that does not load fails the test; a target
        the installed diffusers cannot build, or a scenario that does not apply to it, is skipped, and counted; a
        scenario that raises is the checks' `error` finding."""
        from ..suite.pipelines import prepare  # imports torch: after option checks
        from ..suite.targets.registry import CheckpointError, TargetUnavailable, build_pipeline  # torch, as above
        from . import heap_freeze  # imports torch (devices): after option checks

        key = self._key(target, device, dtype, scenario)
        if key not in self._pipelines:
            try:
                self._pipelines[key] = prepare(
                    lambda: build_pipeline(target, device, dtype, checkpoint=key[-1]), scenario, target.denoiser, device
                )
                heap_freeze.freeze_what_lives_for_the_run()  # kept to the run's end: no collection need scan it again
            except TargetUnavailable as exc:
                pytest.skip(str(exc))
            except CheckpointError as exc:
                pytest.fail(str(exc), pytrace=False)
        prepared = self._pipelines[key]
        if prepared.not_applicable:
            pytest.skip(f"not checkable: {prepared.not_applicable}")
        return prepared

    def pipeline(self, target: Target, device: torch.device, dtype: torch.dtype, scenario: Scenario | None = None
                 ) -> Any:  # fmt: skip
        """The target's pipeline (see `prepared`); a scenario that raised fails the test with its exception."""
        prepared = self.prepared(target, device, dtype, scenario)
        if prepared.error is not None:
            raise prepared.error
        return prepared.pipe

    def pipeline_for(self, item: pytest.Item, target: Target, scenario: Scenario | None = None) -> Any:
        return self.pipeline(target, self.call_context.device, self.call_context.dtype, scenario)

    # ---- what the suite's fixtures do ----------------------------------------------------------------------------
    def check(self, item: pytest.Item, target: Target, scenario: Scenario, check: str) -> Report:
        """One of the suite's checks on the target's pipeline with `scenario`; a graph check a helper traced is its
        report."""
        from ..suite.pipelines import check as checked  # imports torch: after option checks
        from ..suite.scenarios import NotApplicable  # imports torch: after option checks

        if check == "graph_breaks" and self.helpers is not None and scenario.name == PLAIN:
            traced = self.helpers.outcome(item)
            if traced is not None and traced.report is not None:
                return traced.report
            if traced is not None and traced.skipped:
                pytest.skip(traced.skipped)
            # no helper has it, or its helper failed (the summary says why): traced here
        ctx = self.check_context(check)
        prepared = self.prepared(target, ctx.device, ctx.dtype, scenario)
        options = self.session.guard_options(item, check, target.name, scenario.name, denoiser=target.denoiser)
        try:
            return checked(prepared, check, lambda pipe: target.kwargs_by_steps(pipe, ctx), options, steps=ctx.steps,
                           test_id=plain_nodeid(item.nodeid), target=target.name,
                           steps_are_calls=target.steps_are_calls)  # fmt: skip
        except NotApplicable as exc:  # a call showed the scenario has no support for the pipeline's inputs
            pytest.skip(f"not checkable: {exc}")

    def step_metrics(self, item: pytest.Item, target: Target, scenario: Scenario, benchmark: Any) -> Report:
        """The target's step metrics, timed through pytest-benchmark's `benchmark` fixture and judged against the
        run loaded by --benchmark-compare (plugin.benchmark)."""
        from ..suite.measure import loop_place, measure, metrics_steps  # imports torch: after option checks
        from ..suite.scenarios import calls_context  # imports torch: after option checks

        ctx, config = self.call_context, self.session.config
        pipe = self.pipeline(target, ctx.device, ctx.dtype, scenario)
        options = self.session.guard_options(item, "step_metrics", target.name, scenario.name, denoiser=target.denoiser)
        steps = metrics_steps(ctx.steps)
        counted = self.helpers.counted(item.nodeid, options, steps) if self.helpers is not None else None
        with calls_context(scenario):
            report = measure(
                pipe, target.kwargs_by_steps(pipe, ctx), options, steps=steps,
                rounds=self.settings.metrics_rounds or default_rounds(options.backend),
                repeat=benchmark_repeat(benchmark), counted=counted, test_id=plain_nodeid(item.nodeid),
                target=target.name, steps_are_calls=target.steps_are_calls,
            )  # fmt: skip
        if "step_metrics" in report.metrics:
            if saving(config):
                identify_sites(report.metrics["step_metrics"])
            benchmark.extra_info[EXTRA_KEY] = report.metrics["step_metrics"]
        return judge_step_metrics(report, config, self.settings, options, item.name, loop_place(pipe))

    def kwargs_for(self, target: Target) -> Callable[[Any], Callable[[int], dict[str, Any]]]:
        """The call kwargs by steps of `target` on a pipeline, in this run's call context."""
        return lambda pipe: target.kwargs_by_steps(pipe, self.call_context)
