"""A checking run's start, at configure time: its options read and checked (each problem one sentence, before anything
runs), its NosyncSession made, and the hook objects that answer pytest registered: the session's by phase
(collection, xdist, run, output), then the parts' (GPU sharing, the census, the heap freeze, the graph helpers).

heap_freeze imports torch and is imported after the option checks, so that a usage error stays quick.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from . import graph_helpers, usage, xdist
from . import options as table
from .census import Census
from .census_shard import CensusShards
from .collection_hooks import CollectionHooks
from .gpu_sharing import GpuSharing
from .output_hooks import OutputHooks
from .run_hooks import RunHooks
from .session import NosyncSession
from .xdist_hooks import XdistHooks


def start(config: pytest.Config) -> NosyncSession:
    """Read and check the run's options and register the session's hooks. (An xdist worker's GPU is already in its
    environment: the controller's spec put it there.)"""
    role = xdist.role(config)
    xdist.share_cores(config)
    settings = table.read(config)
    usage.check_targets(settings)
    if settings.suite:
        usage.add_suite_to_args(config)
    controllers = xdist.controllers_backend(config)
    unreachable = ""
    try:
        backend = usage.resolve_backend(settings, controllers)  # resolved once, for the run
    except pytest.UsageError as exc:
        if controllers is None:
            raise
        # a worker's usage error is a traceback on the controller and a worker started again, over and over: each
        # of its tests fails with the sentence instead
        backend, unreachable = controllers, str(exc)
    settings = replace(settings, backend=backend)
    usage.check_scenarios(settings)
    usage.check_pipeline_checks(settings)
    if role is xdist.Role.ALONE:  # a controller runs nothing (and touches no GPU before its workers share it)
        usage.check_dtype(settings)
    if role is not xdist.Role.WORKER:
        usage.check_rootdir(config)
        usage.check_outputs(settings)
    known = usage.load_baseline(config, settings)
    if role is xdist.Role.CONTROLLER:
        xdist.check_worker_count(config, settings.share_gpus)
    session = NosyncSession(config, settings, role, known)
    session.unreachable = unreachable
    # One hook object per phase (no two answer the same hook), registered where the one session object was: where a
    # part below answers the same hook, pluggy calls them in the same order as before (the later registered first).
    run = RunHooks(session)  # maps CUDA to the emulated device where asked: before anything below imports torch
    for name, hooks in (
        ("nosync-collection", CollectionHooks(session)),
        ("nosync-xdist", XdistHooks(session)),
        ("nosync-run", run),
        ("nosync-output", OutputHooks(session)),
    ):
        config.pluginmanager.register(hooks, name)
    if role is xdist.Role.CONTROLLER:
        config.pluginmanager.register(GpuSharing(settings.mps, settings.share_gpus), "nosync-gpu-sharing")
    from .heap_freeze import HeapFreeze  # imports torch: after option checks

    session.census = Census(session)
    config.pluginmanager.register(session.census, "nosync-census")
    session.shards = CensusShards(config, settings, role, session.durations, session.unwritten)
    config.pluginmanager.register(session.shards, "nosync-census-shards")
    config.pluginmanager.register(HeapFreeze(), "nosync-heap-freeze")
    if graph_helpers.wanted(session):
        session.suite.helpers = graph_helpers.GraphHelperRun(session)
        config.pluginmanager.register(session.suite.helpers, "nosync-graph-helpers")
    return session
