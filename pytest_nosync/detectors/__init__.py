"""The one vocabulary of checks, shared by the marker, the guard and the suite, and the detectors behind each.

Adding a detector: write one module here with a class deriving from `base.Detector` and a function
`detectors(options: GuardOptions) -> list[Detector]`, then add one line to CHECKS naming that module. Modules are
imported when a guard first runs their check, so a check nobody asks for costs nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass

from ..guard_options import GuardOptions
from .base import Detector


@dataclass(frozen=True)
class Check:
    module: str  # a module of this package with `detectors(options) -> list[Detector]`
    help: str


CHECKS: dict[str, Check] = {
    "syncs": Check("syncs", "no device-to-host read or blocking host-to-device copy inside a denoising step"),
    "graph_breaks": Check("dynamo", "one dynamo pass over the denoiser: no graph break, no recompile between steps"),
    "recompiles": Check("dynamo", "no recompile of the compiled denoiser between steps"),
    "alloc_growth": Check("memory", "steady-state steps leave no memory behind (the line that allocated it)"),
    "host_overhead": Check("host_overhead", "no module-tree walk in a steady-state step; host ms per step"),
    "step_metrics": Check(
        "step_metrics",
        "records each step's host ms (outside the denoiser too), device ms and peak "
        "device memory, to compare with a saved run",
    ),
    "device_ops": Check(
        "step_metrics",
        "records the aten ops each step runs on the device, by op and source line "
        "(a dispatch mode: time figures of the same call are not taken)",
    ),
}


def unknown_checks(checks: tuple[str, ...]) -> list[str]:
    return [c for c in checks if c not in CHECKS]


def detectors_for(options: GuardOptions, extra: Iterable[Detector] = ()) -> list[Detector]:
    """The detectors that run `options.checks` (backend already resolved), then `extra` ones; a tracer first when
    the block is traced or a detector reads the profiler's trace (one profiler session per guard)."""
    built: list[Detector] = []
    for module in dict.fromkeys(CHECKS[c].module for c in options.checks):  # graph_breaks + recompiles: one pass
        built.extend(importlib.import_module(f"{__name__}.{module}").detectors(options))
    built.extend(extra)
    readers = [d for d in built if d.uses_profiler]
    if options.traces or readers:
        from .tracer import TraceDetector

        # first: disarmed last, once the sync detectors are off (stopping the profiler synchronizes)
        built.insert(0, TraceDetector(options, readers))
    return built
