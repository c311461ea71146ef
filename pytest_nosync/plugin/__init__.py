"""The pytest side of pytest-nosync (entry point `nosync`): hooks here; options, the session, fixtures and xdist in
the modules beside this one. The checks themselves live in the library (guard, detectors, policy)."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import pytest

from . import graph_helpers, options, suite_collection, usage, xdist
from .fixtures import add_suite_to_args, generate_target_params, marker_values
from .fixtures import nosync as nosync  # fixtures, exported to pytest through this entry-point module
from .fixtures import nosync_call_context as nosync_call_context
from .fixtures import nosync_check as nosync_check
from .fixtures import nosync_device as nosync_device
from .fixtures import nosync_guard_kwargs as nosync_guard_kwargs
from .fixtures import nosync_pipeline as nosync_pipeline
from .fixtures import nosync_step_metrics as nosync_step_metrics
from .fixtures import nosync_target as nosync_target
from .session import BASELINE, NosyncSession, NotRun


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    xdist.pin_worker(config)  # first: before anything can initialise CUDA in an xdist worker
    config.addinivalue_line("markers", options.MARKER_HELP)
    config.addinivalue_line("markers", options.GPU_MARKER_HELP)
    settings = options.read(config)
    usage.check_targets(settings)
    config.pluginmanager.register(NotRun(usage.unused_outputs(settings)), "nosync-not-run")
    if settings.suite:
        add_suite_to_args(config)
    if not settings.enabled:
        config.stash[options.SETTINGS] = settings
        return  # off means off: no detector, no hook beyond marker bookkeeping
    settings = replace(settings, backend=usage.resolve_backend(settings))  # resolved once, for the run
    config.stash[options.SETTINGS] = settings
    controller = not hasattr(config, "workerinput")
    if controller:
        usage.check_rootdir(config)
        usage.check_outputs(settings)
    known = usage.load_baseline(config, settings)
    if known is not None:
        config.stash[BASELINE] = known
    if controller and config.pluginmanager.hasplugin("xdist"):
        xdist.check_worker_count(config)
    config.pluginmanager.register(NosyncSession(config, settings), "nosync-session")
    if graph_helpers.wanted(config):
        config.pluginmanager.register(graph_helpers.GraphHelperRun(config), "nosync-graph-helpers")


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own answer (the CPU count)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    return xdist.auto_workers(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    xdist.assign_gpu(node)
    known = node.config.stash.get(BASELINE, None)
    if known is not None:
        node.workerinput[xdist.BASELINE_KEY] = os.path.abspath(known.path)


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Any, parent: pytest.Collector) -> pytest.Collector | None:
    return suite_collection.directory(path, parent)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Any, parent: pytest.Collector) -> pytest.Module | None:
    return suite_collection.module(module_path, parent)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    generate_target_params(metafunc)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Validate every marker up front: a typo fails the run at once, not only on the GPU runner.
    for item in items:
        try:
            marker_values(item)
        except options.OptionError as exc:
            raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
    cache = getattr(config, "cache", None)
    if options.of(config).enabled and cache is not None and xdist.distributing(config):
        items[:] = xdist.longest_first(items, cache.get(xdist.COSTS_KEY, {}))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is None:
        return
    settings = options.of(item.config)
    if not settings.enabled:
        from .. import devices  # imports torch: only for a test marked gpu

        if not devices.cuda_available():
            pytest.skip(
                "needs a CUDA device: run `pytest -m gpu --nosync` on a GPU runner "
                "(or `--nosync --nosync-backend emulate` on the CPU)"
            )
        return
