"""Fixtures of the target suite, usable with your own pipelines too.

    @pytest.mark.parametrize("nosync_target", [MY_TARGET], indirect=True)
    def test_my_pipeline(nosync_pipeline, nosync_check, nosync):
        nosync.add_report(nosync_check("syncs"))

A test that takes `nosync_target` without parametrizing it runs once per selected built-in target.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from .. import devices
from ..findings import Report
from ..suite.checks import CheckOptions, dynamo_device, run_check
from ..suite.targets.base import CallContext, Target
from . import options as settings
from .fixtures import guard_options, trace_config

SUITE_DIR = Path(__file__).parent.parent / "suite"
_PIPELINES = pytest.StashKey[dict[tuple, Any]]()


def selected_targets(config: pytest.Config) -> list[Target]:
    from ..suite.targets.registry import TARGETS

    names = settings.of(config).targets or tuple(TARGETS)
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


def _dtype(opts: settings.Settings, backend: str) -> torch.dtype:
    if opts.dtype:
        return getattr(torch, opts.dtype)
    return torch.bfloat16 if backend == "cuda" else torch.float32


@pytest.fixture
def nosync_target(request: pytest.FixtureRequest) -> Target:
    """The Target under test (a built-in one by name, or your own Target object)."""
    from ..suite.targets.registry import TARGETS, missing_classes

    target = request.param if hasattr(request, "param") else None
    if isinstance(target, str):
        if target not in TARGETS:
            raise pytest.UsageError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
        selected = settings.of(request.config).targets
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


@pytest.fixture
def nosync_call_context(request: pytest.FixtureRequest) -> CallContext:
    opts = settings.of(request.config)
    try:
        backend = devices.resolve(opts.backend)
    except devices.BackendUnavailable as exc:
        pytest.skip(str(exc))
    device = torch.device(opts.device) if opts.device else devices.execution_device(backend)
    return CallContext(device=device, dtype=_dtype(opts, backend), steps=opts.steps)


def _pipeline(request: pytest.FixtureRequest, target: Target, device: torch.device, dtype: torch.dtype) -> Any:
    """The target's pipeline on `device` in `dtype`, built once per session."""
    from ..suite.targets.registry import TargetUnavailable, build_pipeline

    checkpoint = settings.of(request.config).checkpoints.get(target.name)
    key = (target.name, id(target), str(device), str(dtype), checkpoint)
    cache = request.config.stash.setdefault(_PIPELINES, {})
    if key not in cache:
        try:
            cache[key] = build_pipeline(target, device, dtype, checkpoint=checkpoint)
        except TargetUnavailable as exc:
            pytest.skip(str(exc))
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
    opts = settings.of(request.config)
    ctx = nosync_call_context

    def run(check: str) -> Report:
        device, pipe = ctx.device, nosync_pipeline
        if check == "graph_breaks" and dynamo_device(device) != device:
            device = dynamo_device(device)
            pipe = _pipeline(request, nosync_target, device, ctx.dtype)

        def call_kwargs(steps: int) -> dict[str, Any]:
            return nosync_target.call_kwargs(pipe, CallContext(device, ctx.dtype, steps, ctx.seed))

        options = CheckOptions(
            **guard_options(request.node, check, nosync_target.name),
            call_kwargs=call_kwargs,
            steps=ctx.steps,
            profile=opts.profile,
            denoiser=nosync_target.denoiser,
            target=nosync_target.name,
            trace=trace_config(request.node) if opts.enabled else None,
        )
        return run_check(check, pipe, options)

    return run


@pytest.fixture
def nosync_guard_options(request: pytest.FixtureRequest) -> Callable[..., dict[str, Any]]:
    """Guard options for a regression case: backend, mode, policy, the baseline matcher for this test.

    Call it with the check name (and target) the baseline should scope the case by.
    """

    def options(check: str, target: str = "") -> dict[str, Any]:
        return guard_options(request.node, check, target)

    return options
