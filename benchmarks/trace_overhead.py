"""What tracing costs a guarded call: the default on-failure mode on a passing block, and always.

    python benchmarks/trace_overhead.py [--calls 24] [--steps 4] [--json out.json]

Variants, each a guarded call of the same workload (a small transformer stack, a few steps, with the
pipeline's regions): `guard` (no trace), `on-failure, passing` (what every passing guarded test pays by default:
nothing is profiled, a failing suite call is re-run under the profiler), `always` (profiled, exported, diagnosed,
written), and `always +stack` (with Python stacks). Ratios are to `guard`, medians of interleaved rounds. The first
traced block of a process also pays torch.profiler's import of torch._inductor; that one-off cost is measured
separately.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import torch
from _measure import emit, timed

from pytest_nosync import nosync_guard
from pytest_nosync.profiling.config import ProfilerOptions, TraceConfig


class Pipeline:
    """The shape of a diffusers call: a denoiser called once a step, a scheduler step, callback_on_step_end."""

    class Scheduler:
        def step(self, noise: torch.Tensor, latents: torch.Tensor) -> torch.Tensor:
            return latents * 0.5 + noise * 0.5

    def __init__(self, device: torch.device) -> None:
        layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
        self.transformer = torch.nn.TransformerEncoder(layer, 6, enable_nested_tensor=False).to(device).eval()
        self.scheduler = self.Scheduler()
        self.x = torch.randn(2, 128, 256, device=device)

    def __call__(self, steps: int, callback_on_step_end: Callable[..., Any] | None = None) -> torch.Tensor:
        latents = self.x
        with torch.no_grad():
            for i in range(steps):
                latents = self.scheduler.step(self.transformer(latents), latents)
                if callback_on_step_end is not None:
                    callback_on_step_end(self, i, None, {})
        if latents.is_cuda:
            torch.cuda.synchronize()
        return latents


def first_trace_import_ms() -> float:
    """A fresh process: the first profiled block's extra cost (torch.profiler imports torch._inductor)."""
    code = (
        "import time, torch; from torch.profiler import profile, ProfilerActivity\n"
        "t = time.perf_counter(); p = profile(activities=[ProfilerActivity.CPU]); p.start(); p.stop()\n"
        "print((time.perf_counter() - t) * 1e3)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return round(float(out.strip().splitlines()[-1]), 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=24)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--json")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    pipe = Pipeline(device)
    directory = tempfile.mkdtemp(prefix="nosync-bench-")

    def guarded(trace: TraceConfig | None) -> Callable[[], None]:
        def run() -> None:
            with nosync_guard(pipe, checks=("host_overhead",), trace=trace, name="bench") as g:
                pipe(args.steps, callback_on_step_end=g.callback_on_step_end)
            assert g.report.passed, g.report.findings

        return run

    variants = {
        "guard": guarded(None),
        "on-failure, passing": guarded(TraceConfig(mode="on-failure", directory=directory)),
        "always": guarded(TraceConfig(mode="always", directory=directory)),
        "always +stack": guarded(
            TraceConfig(mode="always", directory=directory, profiler=ProfilerOptions(with_stack=True))
        ),
    }
    for fn in variants.values():
        timed(fn, 2)  # warm-up
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(4):  # interleaved rounds: drift hits every variant alike
        for name, fn in variants.items():
            samples[name] += timed(fn, max(1, args.calls // 4))
    base = statistics.median(samples["guard"])
    results: dict[str, object] = {}
    for name, values in samples.items():
        med = statistics.median(values)
        results[name] = {
            "median_ms": round(med, 2),
            "extra_ms": round(med - base, 2),
            "ratio": round(med / base, 3),
            "calls": len(values),
        }
    results["first traced block, one-off ms"] = first_trace_import_ms()
    emit(results, device, args.json)


if __name__ == "__main__":
    main()
