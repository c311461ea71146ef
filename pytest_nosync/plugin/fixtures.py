"""The fixtures: `nosync` (guard blocks of a test yourself), and the suite's (targets, their pipelines, checks).

    def test_loop(nosync, pipe):
        with nosync.guard(pipe) as g:
            pipe(prompt_embeds=..., callback_on_step_end=g.callback_on_step_end)

    @pytest.mark.parametrize("nosync_target", [MY_TARGET], indirect=True)
    def test_my_pipeline(nosync_check, nosync):
        nosync.add_report(nosync_check("syncs"))

A test that takes `nosync_target` without parametrizing it runs once per selected built-in target.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..findings import Report
from ..guard_options import GuardOptions, split_options
from ..policy import KnownMatcher
from ..profiling.config import TraceConfig
from ..run_report import diffusers_version
from ..step_cost import default_rounds, identify_sites
from ..suite.targets.base import CallContext, Target
from . import graph_helpers
from . import options as table
from .benchmark import EXTRA_KEY, benchmark_repeat, judge_step_metrics, saving
from .count_ahead import COUNT_AHEAD, metrics_steps
from .session import BASELINE, ITEM_REPORTS, add_report

if TYPE_CHECKING:
    import torch

    from ..guard import Guard

# torch, the guard and the suite's checks are imported inside the fixtures that use them: pytest imports this module
# in every run of an environment that has the plugin, and a run that checks nothing should not import torch.

SUITE_DIR = Path(__file__).parent.parent / "suite"
_MARKER = pytest.StashKey[dict[str, Any]]()
_PIPELINES = pytest.StashKey[dict[tuple, Any]]()
_TRACE_DIR = pytest.StashKey[str]()


# ---- one test's GuardOptions -----------------------------------------------------------------------------------
def marker_values(item: pytest.Item) -> dict[str, Any]:
    """The validated arguments of the item's closest `nosync` marker ({} without one)."""
    cached = item.stash.get(_MARKER, None)
    if cached is None:
        marker = item.get_closest_marker("nosync")
        cached = item.stash[_MARKER] = table.parse_marker(marker.args, marker.kwargs) if marker else {}
    return cached


def known_matcher(config: pytest.Config, test_id: str, target: str, check: str) -> KnownMatcher | None:
    """The baseline's matcher for one test, or None without a baseline."""
    baseline = config.stash.get(BASELINE, None)
    if baseline is None:
        return None
    return baseline.matcher(test_id, target, check, diffusers_version(), table.of(config).backend)


def trace_directory(config: pytest.Config) -> str:
    """--nosync-trace-dir, else `nosync-traces` in pytest's cache directory: a run leaves no files in the directory
    it runs from (a diffusers checkout stays clean). Without the cache plugin: the temporary directory."""
    given = table.of(config).trace_dir
    if given:
        return given
    if _TRACE_DIR not in config.stash:
        cache = getattr(config, "cache", None)  # set by pytest's cache plugin, after the plugins' configure
        root = (
            cache.mkdir("nosync-traces") if cache is not None else Path(tempfile.gettempdir()) / "pytest-nosync-traces"
        )
        config.stash[_TRACE_DIR] = str(root)
    return config.stash[_TRACE_DIR]


def _trace(item: pytest.Item) -> TraceConfig | None:
    """The run's trace settings, with the directory decided (see trace_directory)."""
    settings = table.of(item.config)
    if not settings.enabled:
        return None
    return replace(settings.trace, directory=trace_directory(item.config))


def guard_options(item: pytest.Item, check: str = "", target: str = "", **fixed: Any) -> GuardOptions:
    """The test's GuardOptions (see plugin.options.resolve), with the baseline's matcher for (target, check);
    `check` defaults to the marker's checks."""
    settings = table.of(item.config)
    marker = marker_values(item)
    check = check or ",".join(marker.get("checks", GuardOptions.checks))
    known = known_matcher(item.config, item.nodeid, target, check)
    return table.resolve(settings, marker, backend=settings.backend, trace=_trace(item), known=known, **fixed)


# ---- nosync ----------------------------------------------------------------------------------------------------
class NosyncFixture:
    """What the `nosync` fixture gives a test: guards whose checks and policy come from the test's `nosync` marker
    and the command line. Without --nosync they are disarmed: the block runs as plain code, nothing is checked."""

    def __init__(self, item: pytest.Item) -> None:
        self.item = item

    @property
    def enabled(self) -> bool:
        return table.of(self.item.config).enabled

    def guard(self, pipeline: Any = None, **overrides: Any) -> Guard:
        """A guard for one block; its report is attached to the test when the block exits. `overrides`: GuardOptions
        fields, and the Guard's own arguments."""
        from ..guard import Guard

        fields, rest = split_options(overrides)
        options = replace(guard_options(self.item), **fields)
        return Guard(
            pipeline, options, test_id=self.item.nodeid, enabled=self.enabled, on_finish=self.add_report, **rest
        )

    def add_report(self, report: Report) -> None:
        add_report(self.item, report)

    @property
    def reports(self) -> list[Report]:
        return list(self.item.stash.get(ITEM_REPORTS, []))


@pytest.fixture
def nosync(request: pytest.FixtureRequest) -> NosyncFixture:
    """Guard blocks of the test and mark steps; see NosyncFixture."""
    return NosyncFixture(request.node)


def device_for(item: pytest.Item) -> torch.device:
    """The device a test's tensors and models go on: cuda on a GPU, the emulated device under emulation, the plain
    CPU for a test whose only checks are graph_breaks/recompiles under emulation (dynamo cannot trace the emulated
    device's tensors; graph breaks and recompiles do not depend on the device). Without --nosync: cuda when a GPU is
    visible, else the CPU."""
    import torch

    from .. import devices

    settings = table.of(item.config)
    if not settings.enabled:
        return torch.device("cuda" if devices.cuda_available() else "cpu")
    checks = marker_values(item).get("checks", GuardOptions.checks)
    return devices.for_checks(devices.execution_device(settings.backend), checks)


@pytest.fixture
def nosync_device(request: pytest.FixtureRequest) -> torch.device:
    """The device of the active backend, for tests written once for a GPU and for its emulation (see device_for)."""
    return device_for(request.node)


# ---- the suite ---------------------------------------------------------------------------------------------------
def selected_targets(config: pytest.Config) -> list[Target]:
    from ..suite.targets.registry import TARGETS

    names = table.of(config).targets or tuple(TARGETS)
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        raise pytest.UsageError(f"--nosync-targets: unknown target {unknown[0]!r}; known: {', '.join(TARGETS)}")
    return [TARGETS[n] for n in names]


def add_suite_to_args(config: pytest.Config) -> None:
    """--nosync-suite: collect the built-in suite; alone when no path was given on the command line."""
    suite = str(SUITE_DIR)
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        if suite not in config.args:
            config.args.append(suite)
    else:
        config.args[:] = [suite]


def generate_target_params(metafunc: pytest.Metafunc) -> None:
    if "nosync_target" not in metafunc.fixturenames:
        return
    if any(m.args and m.args[0] == "nosync_target" for m in metafunc.definition.iter_markers("parametrize")):
        return  # the test parametrizes its own targets
    targets = selected_targets(metafunc.config)
    metafunc.parametrize(
        "nosync_target",
        [pytest.param(t, id=t.name, marks=pytest.mark.xdist_group(t.name)) for t in targets],
        indirect=True,
    )


def _dtype(settings: table.Settings) -> torch.dtype:
    import torch

    if settings.dtype:
        return getattr(torch, settings.dtype)
    return torch.bfloat16 if settings.backend == "cuda" else torch.float32


@pytest.fixture
def nosync_target(request: pytest.FixtureRequest) -> Target:
    """The Target under test (a built-in one by name, or your own Target object)."""
    from ..suite.targets.registry import TARGETS, missing_classes

    target = request.param if hasattr(request, "param") else None
    if isinstance(target, str):
        if target not in TARGETS:
            raise pytest.UsageError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
        selected = table.of(request.config).targets
        if selected and target not in selected:
            pytest.skip(f"target {target} is not selected by --nosync-targets")
        target = TARGETS[target]
    if not isinstance(target, Target):
        raise pytest.UsageError("nosync_target needs a parameter: a target name or a pytest_nosync Target")
    missing = missing_classes(target)
    if missing:
        import diffusers

        pytest.skip(
            f"target {target.name}: diffusers {diffusers.__version__} has no {', '.join(missing)} "
            "(needs a newer diffusers)"
        )
    return target


def call_context(config: pytest.Config) -> CallContext:
    """Where and how the suite calls pipelines: the backend's device (or --nosync-device), dtype and steps."""
    import torch

    from .. import devices

    settings = table.of(config)
    device = torch.device(settings.device) if settings.device else devices.execution_device(settings.backend)
    return CallContext(device=device, dtype=_dtype(settings), steps=settings.steps)


@pytest.fixture
def nosync_call_context(request: pytest.FixtureRequest) -> CallContext:
    """Where and how the suite calls pipelines: the backend's device (or --nosync-device), dtype and steps."""
    return call_context(request.config)


def _pipeline_key(config: pytest.Config, target: Target, device: torch.device, dtype: torch.dtype) -> tuple:
    checkpoint = table.of(config).checkpoint.get(target.name)
    return (target.name, id(target), str(device), str(dtype), checkpoint)


def built_pipeline(config: pytest.Config, target: Target, device: torch.device, dtype: torch.dtype) -> Any:
    """The target's pipeline if a test of this session has built it, else None (builds nothing)."""
    return config.stash.get(_PIPELINES, {}).get(_pipeline_key(config, target, device, dtype))


def _pipeline(request: pytest.FixtureRequest, target: Target, device: torch.device, dtype: torch.dtype) -> Any:
    """The target's pipeline on `device` in `dtype`, built once per session. A checkpoint asked for that does not
    load fails the test; a target the installed diffusers cannot build is skipped, and counted in the summary."""
    from ..suite.targets.registry import CheckpointError, TargetUnavailable, build_pipeline

    key = _pipeline_key(request.config, target, device, dtype)
    checkpoint = key[-1]
    cache = request.config.stash.setdefault(_PIPELINES, {})
    if key not in cache:
        try:
            cache[key] = build_pipeline(target, device, dtype, checkpoint=checkpoint)
        except TargetUnavailable as exc:
            pytest.skip(str(exc))
        except CheckpointError as exc:
            pytest.fail(str(exc), pytrace=False)
    return cache[key]


@pytest.fixture
def nosync_pipeline(request: pytest.FixtureRequest, nosync_target: Target, nosync_call_context: CallContext) -> Any:
    """The target's pipeline on the suite's device and dtype, built once per session."""
    return _pipeline(request, nosync_target, nosync_call_context.device, nosync_call_context.dtype)


@pytest.fixture
def nosync_check(
    request: pytest.FixtureRequest, nosync_target: Target, nosync_pipeline: Any, nosync_call_context: CallContext
) -> Callable[[str], Report]:
    """Run one of the suite's checks on the test's target pipeline and return its Report."""
    ctx = nosync_call_context

    def run(check: str) -> Report:
        from .. import devices
        from ..suite.checks import run_check

        if check == "graph_breaks":
            traced = graph_helpers.outcome(request.node)
            if traced is not None and traced.report is not None:
                return traced.report
            if traced is not None and traced.skipped:
                pytest.skip(traced.skipped)
            # no helper has it, or its helper failed (the summary says why): traced here
        device, pipe = ctx.device, nosync_pipeline
        if devices.for_checks(device, (check,)) != device:
            device = devices.for_checks(device, (check,))
            pipe = _pipeline(request, nosync_target, device, ctx.dtype)
        call_kwargs = nosync_target.kwargs_by_steps(pipe, replace(ctx, device=device))
        options = guard_options(request.node, check, nosync_target.name, denoiser=nosync_target.denoiser)
        test_id, target = request.node.nodeid, nosync_target.name
        return run_check(check, pipe, call_kwargs, options, steps=ctx.steps, test_id=test_id, target=target)

    return run


@pytest.fixture
def nosync_step_metrics(
    request: pytest.FixtureRequest, nosync_target: Target, nosync_pipeline: Any, nosync_call_context: CallContext
) -> Callable[[Any], Report]:
    """Measure the target's step metrics, timed through pytest-benchmark's `benchmark` fixture (given by the test),
    and judge them against the run loaded by --benchmark-compare (see plugin.benchmark)."""
    ctx, pipe = nosync_call_context, nosync_pipeline
    call_kwargs = nosync_target.kwargs_by_steps(pipe, ctx)

    def run(benchmark: Any) -> Report:
        from ..suite.measure import loop_place, measure

        settings = table.of(request.config)
        options = guard_options(request.node, "step_metrics", nosync_target.name, denoiser=nosync_target.denoiser)
        rounds = settings.metrics_rounds or default_rounds(options.backend)
        steps = metrics_steps(ctx)
        ahead = request.config.stash.get(COUNT_AHEAD, None)
        counted = ahead.take(request.node.nodeid, options, steps) if ahead is not None else None
        report = measure(
            pipe, call_kwargs, options, steps=steps, rounds=rounds, repeat=benchmark_repeat(benchmark),
            counted=counted, test_id=request.node.nodeid, target=nosync_target.name,
        )  # fmt: skip
        if "step_metrics" in report.metrics:
            if saving(request.config):
                identify_sites(report.metrics["step_metrics"])
            benchmark.extra_info[EXTRA_KEY] = report.metrics["step_metrics"]
        return judge_step_metrics(report, request.config, settings, options, request.node.name, loop_place(pipe))

    return run


@pytest.fixture
def nosync_guard_kwargs(request: pytest.FixtureRequest) -> Callable[..., dict[str, Any]]:
    """The keyword arguments of a guard in this test for (check, target): its GuardOptions (with the baseline's
    matcher scoped to them) and the report's names. `fixed`: GuardOptions fields the case decides (denoiser, ...).

        regressions.unipc_case(config, device, **nosync_guard_kwargs("regression:unipc", "UniPCMultistepScheduler"))
    """

    def kwargs(check: str, target: str = "", **fixed: Any) -> dict[str, Any]:
        options = guard_options(request.node, check, target, **fixed)
        return {"options": options, "test_id": request.node.nodeid, "check": check, "target": target}

    return kwargs
