"""What emulation costs: a tiny pipeline's call on the CPU, on the emulated device, and guarded there.

    PYTHONPATH=. python benchmarks/emulation_overhead.py [--rounds 9] [--threads 1]

Calls are interleaved and timed in process CPU time as well as wall time (medians), so that other work on
a shared machine skews them less. The overhead per aten op is (emulated - plain) / ops of a plain call.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from pytest_nosync import nosync_guard
from pytest_nosync.detection import devices
from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline


class _CountOps(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.ops += 1
        return func(*args, **(kwargs or {}))


def _time(fn: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(name: str, rounds: int) -> None:
    target = TARGETS[name]
    cpu, device = torch.device("cpu"), devices.execution_device("emulate")
    plain = build_pipeline(target, cpu, torch.float32)
    emulated = build_pipeline(target, device, torch.float32)

    def make_kwargs(on: torch.device) -> dict:
        return target.call_kwargs(plain if on == cpu else emulated, CallContext(on, torch.float32, 2))

    def guarded() -> None:
        kwargs = make_kwargs(device)
        with nosync_guard(emulated, backend="emulate") as g:
            emulated(**kwargs, callback_on_step_end=g.callback_on_step_end)

    runs = {
        "cpu": lambda: plain(**make_kwargs(cpu)),
        "emulated": lambda: emulated(**make_kwargs(device)),
        "guarded": guarded,
    }
    with _CountOps() as counter:
        runs["cpu"]()
    for run in runs.values():  # warm-up
        run()
    times: dict[str, list[tuple[float, float]]] = {key: [] for key in runs}
    for _ in range(rounds):
        for key, run in runs.items():
            times[key].append(_time(run))
    base = statistics.median(c for _, c in times["cpu"])
    print(f"{name}: {counter.ops} aten ops per call, {rounds} rounds, {torch.get_num_threads()} thread(s)")
    for key, samples in times.items():
        wall = statistics.median(w for w, _ in samples)
        cpu_time = statistics.median(c for _, c in samples)
        per_op = (cpu_time - base) / counter.ops * 1e6
        ratio = cpu_time / base
        print(f"  {key:9s} wall {wall * 1e3:7.1f} ms  cpu {cpu_time * 1e3:7.1f} ms  x{ratio:.2f}  +{per_op:.1f} us/op")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for name in ("flux", "wan"):
        measure(name, args.rounds)


if __name__ == "__main__":
    main()
