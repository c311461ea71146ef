"""Guard overhead: the same workload with and without the guard, as a ratio of medians.

    python benchmarks/guard_overhead.py [--calls 40] [--target flux] [--json out.json]

The workload is a small transformer stack run for a few "steps" per call, with no sync in it, or, with
--target, a tiny target pipeline's whole call (its syncs outside the steps included). The ratio is the
cost of arming detection (sync debug mode + warning capture; the profiler separately). Median of many
interleaved calls: tiny calls vary ±25% between two plain runs.
"""

from __future__ import annotations

import argparse
import statistics

import torch
from _measure import emit, timed

from pytest_nosync import nosync_guard


def workload(device: torch.device) -> tuple[torch.nn.Module, torch.Tensor]:
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 6, enable_nested_tensor=False).to(device).eval()
    return model, torch.randn(2, 128, 256, device=device)


def call(model: torch.nn.Module, x: torch.Tensor, steps: int, guard=None) -> None:
    with torch.no_grad():
        for _ in range(steps):
            if guard is not None:
                guard.begin_step()
            x = model(x) * 0.5 + x * 0.5
            if guard is not None:
                guard.end_step()
    if x.is_cuda:
        torch.cuda.current_stream().synchronize()


def pipeline_workload(name: str, device: torch.device, steps: int, backend: str):
    from pytest_nosync.suite.targets.base import CallContext
    from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline

    target = TARGETS[name]
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    pipe = build_pipeline(target, device, dtype)

    def run_call(guard=None):
        kwargs = target.call_kwargs(pipe, CallContext(device, dtype, steps))
        if guard is not None:
            kwargs["callback_on_step_end"] = guard.callback_on_step_end
        with torch.no_grad():
            pipe(**kwargs)
        if device.type == "cuda":
            torch.cuda.current_stream().synchronize()

    def plain():
        run_call()

    def guarded(profile=False):
        def run():
            with nosync_guard(pipe, backend=backend, profile=profile) as g:
                run_call(g)

        return run

    return plain, guarded


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--target", help="time a tiny target pipeline's call instead of the synthetic stack")
    parser.add_argument("--json")
    args = parser.parse_args()
    from pytest_nosync import devices

    device = devices.execution_device(args.backend)
    if args.target:
        plain, guarded = pipeline_workload(args.target, device, args.steps, args.backend)
    else:
        model, x = workload(device)

        def plain():
            call(model, x, args.steps)

        def guarded(profile=False):
            def run():
                with nosync_guard(backend=args.backend, profile=profile) as g:
                    call(model, x, args.steps, g)
                assert g.report.passed, g.report.findings

            return run

    for fn in (plain, guarded(), guarded(True)):
        timed(fn, 5)  # warm-up
    results = {}
    # Interleave rounds so drift affects every variant alike.
    samples = {"plain": [], "guard": [], "guard+profiler": []}
    for _ in range(4):
        samples["plain"] += timed(plain, args.calls // 4)
        samples["guard"] += timed(guarded(), args.calls // 4)
        samples["guard+profiler"] += timed(guarded(True), max(2, args.calls // 8))
    base = statistics.median(samples["plain"])
    for name, values in samples.items():
        med = statistics.median(values)
        results[name] = {"median_ms": round(med, 3), "ratio": round(med / base, 3), "calls": len(values)}
    results["workload"] = args.target or "transformer stack"
    emit(results, device, args.json)


if __name__ == "__main__":
    main()
