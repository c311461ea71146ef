"""The detectors behind the checks (pytest_nosync.checks.CHECKS names each check's module here).

A detector module has a class deriving from `base.Detector` and a function `detectors(options: GuardOptions) ->
list[Detector]`. Modules are imported when a guard first runs their check, so a check nobody asks for costs nothing.

Syncs: syncs (which detectors see them on each backend), cuda_sync (torch's sync debug mode), emulated (the stand-in
device), explicit_sync (synchronize() calls), device_work (whether the device ran anything), profiler_sync (opt-in,
from a trace). Graphs: dynamo (graph breaks, recompiles), cudagraphs (capture). Per step: memory (allocation
growth), host_overhead, denoiser_clock (host time inside the denoiser), step_metrics (a step's cost as numbers).
Tracing: tracer (the trace of a guarded block), profiler_session (its one torch.profiler session), profiler_ranges
(named ranges for steps and regions).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from ...checks import CHECKS
from ..guard_options import GuardOptions
from .base import Detector
from .tracer import TraceDetector


def detectors_for(options: GuardOptions, extra: Iterable[Detector] = ()) -> list[Detector]:
    """The detectors that run `options.checks` (backend already resolved), then `extra` ones; a tracer first when
    the block is traced or a detector reads the profiler's trace (one profiler session per guard)."""
    built: list[Detector] = []
    for module in dict.fromkeys(CHECKS[c].detector for c in options.checks):  # graph_breaks + recompiles: one pass
        built.extend(importlib.import_module(f"{__name__}.{module}").detectors(options))
    built.extend(extra)
    readers = [d for d in built if d.uses_profiler]
    if options.traces or readers:
        # first: disarmed last, once the sync detectors are off (stopping the profiler synchronizes)
        built.insert(0, TraceDetector(options, readers))
    return built
