"""Guard overhead on the suite's targets: each guard configuration as a ratio of interleaved medians to the plain call.

    python benchmarks/guard_overhead.py [--targets flux,wan,ltx2] [--calls 100] [--steps 4] [--json out.json]
                                        [--freeze-at-start]

For each target, a warm tiny pipeline (the execution device of the backend: cuda on a GPU, the emulated device
otherwise) is called plain and under each configuration, one call of each per round, and each ratio is the median
of a variant's call over the plain call of its round; tiny calls vary ±25% between rounds, hence many rounds. On
CUDA it first reports a sync's cost under sync debug mode and under the guard, and an empty guard's, in µs. It runs
against an earlier checkout of pytest-nosync too (its package first on PYTHONPATH), so before and after are measured
alike. Configurations:
  sync debug mode  torch's own `set_sync_debug_mode("warn")`, warnings recorded, no guard: the floor of a sync check
                   (CUDA only)
  syncs            the sync check alone (what every suite sync test pays)
  all guard checks syncs + alloc_growth + host_overhead
  on-failure trace syncs with --nosync-trace on-failure (the default) on a passing call
  profiler confirm syncs with --nosync-profile (opt-in; fewer calls)
`--freeze-at-start`: the process calls gc.freeze() before it imports anything else, as a serving runtime (or an
interpreter that starts with objects frozen) does: the growth check's collections must not scan the heap.
"""

from __future__ import annotations

import gc
import sys

if "--freeze-at-start" in sys.argv:  # before torch and diffusers are imported, as a serving runtime or Python 3.12 does
    gc.freeze()

import argparse
import statistics
import warnings
from collections.abc import Callable
from typing import Any

import torch
from _measure import emit, timed

from pytest_nosync import nosync_guard
from pytest_nosync.profiling.config import TraceConfig

try:
    from pytest_nosync.suite.targets.base import CallContext
    from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline
except ImportError:  # the first release's layout: the same script measures it side by side (docs/validation.md)
    from pytest_nosync.targets.base import CallContext  # type: ignore[no-redef]
    from pytest_nosync.targets.registry import TARGETS, build_pipeline  # type: ignore[no-redef]
try:
    from pytest_nosync.detection import devices
except ImportError:  # before the twelfth session's detection/ (devices), or the first release (backends)
    try:
        from pytest_nosync import devices  # type: ignore[no-redef]
    except ImportError:
        from pytest_nosync import backends as devices  # type: ignore[no-redef]

CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "syncs": {"checks": ("syncs",)},
    "all guard checks": {"checks": ("syncs", "alloc_growth", "host_overhead")},
    "on-failure trace": {"checks": ("syncs",), "trace": TraceConfig(mode="on-failure")},
    "profiler confirm": {"checks": ("syncs",), "profile": True},
}


def under_sync_debug_mode(fn: Callable[[], None]) -> None:
    """fn under torch's sync debug mode alone, its warnings recorded: the floor of a sync check."""
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode(previous)


def variants(name: str, backend: str, steps: int) -> dict[str, Callable[[], None]]:
    target = TARGETS[name]
    device = devices.execution_device(backend)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    pipe = build_pipeline(target, device, dtype)

    def call(guard: Any = None) -> None:
        kwargs = target.call_kwargs(pipe, CallContext(device, dtype, steps))  # built outside the guard
        if guard is not None:
            kwargs["callback_on_step_end"] = guard.callback_on_step_end
            with guard, torch.no_grad():
                pipe(**kwargs)
        else:
            with torch.no_grad():
                pipe(**kwargs)
        if device.type == "cuda":
            torch.cuda.synchronize()  # outside the guard: the device's time counts in every variant

    def guarded(options: dict[str, Any]) -> Callable[[], None]:
        return lambda: call(nosync_guard(pipe, backend=backend, denoiser=target.denoiser, **options))

    floor = {"sync debug mode": lambda: under_sync_debug_mode(call)} if device.type == "cuda" else {}
    return {"plain": call, **floor, **{label: guarded(options) for label, options in CONFIGURATIONS.items()}}


def measure(name: str, backend: str, calls: int, steps: int) -> dict[str, Any]:
    """Paired: each round calls every variant once, in a rotated order, and a variant's ratio is the median over
    rounds of its call over the plain call of the same round (drift between rounds cancels; a tiny call moves by
    ±25% between rounds)."""
    runs = variants(name, backend, steps)
    for fn in runs.values():
        timed(fn, 2)  # warm-up: first-call work, the profiler's first start
    labels = list(runs)
    samples: dict[str, list[float]] = {label: [] for label in runs}
    ratios: dict[str, list[float]] = {label: [] for label in runs}
    for round_ in range(calls):
        shift = round_ % len(labels)
        this_round: dict[str, float] = {}
        for label in labels[shift:] + labels[:shift]:
            if label == "profiler confirm" and round_ % 4:
                continue  # the profiler's start and stop are slow: a quarter of the calls
            this_round[label] = timed(runs[label], 1)[0]
        for label, ms in this_round.items():
            samples[label].append(ms)
            ratios[label].append(ms / this_round["plain"])
    return {
        label: {"median_ms": round(statistics.median(v), 3), "ratio": round(statistics.median(ratios[label]), 3),
                "calls": len(v)}
        for label, v in samples.items()
    }  # fmt: skip


def per_sync(syncs: int = 50, calls: int = 100) -> dict[str, float]:
    """What a sync costs under torch's sync debug mode alone and under the guard, and an empty guard's own cost
    (arm and disarm), in microseconds: the parts of a guarded call's overhead, without the call's noise. A sync's
    figure under the guard includes the guard's own cost spread over the `syncs` syncs."""
    x = torch.ones(4, device="cuda")

    def loop() -> None:
        for _ in range(syncs):
            x.sum().item()

    def guarded() -> None:
        with nosync_guard(None, checks=("syncs",), backend="cuda", whole_block=True):
            loop()

    def empty() -> None:
        with nosync_guard(None, checks=("syncs",), backend="cuda", whole_block=True, device_work=False):
            pass

    runs = {
        "loop": loop,
        "sync debug mode": lambda: under_sync_debug_mode(loop),
        "guard": guarded,
        "empty guard": empty,
    }
    for fn in runs.values():
        timed(fn, 3)
    samples: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(calls):
        for label, fn in runs.items():
            samples[label] += timed(fn, 1)
    ms = {label: statistics.median(v) for label, v in samples.items()}
    return {
        "sync_us, sync debug mode": round((ms["sync debug mode"] - ms["loop"]) / syncs * 1e3, 2),
        "sync_us, guard": round((ms["guard"] - ms["loop"]) / syncs * 1e3, 2),
        "empty guard_us": round(ms["empty guard"] * 1e3, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", default="flux,wan,ltx2")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--json")
    parser.add_argument("--freeze-at-start", action="store_true", help="gc.freeze() before any import (see above)")
    args = parser.parse_args()
    backend = devices.resolve(args.backend)
    results: dict[str, Any] = {"backend": backend, "steps": args.steps}
    if backend == "cuda":
        try:
            results["per sync"] = per_sync()
        except TypeError as exc:  # an earlier package measured side by side: its guard lacks whole_block/device_work
            results["per sync"] = f"not measured: {exc}"
    for name in args.targets.split(","):
        results[name] = measure(name, backend, args.calls, args.steps)
    emit(results, devices.execution_device(backend), args.json)


if __name__ == "__main__":
    main()
