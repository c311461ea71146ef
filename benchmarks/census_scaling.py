"""How a census would spread over more GPUs: a simulation from one run's measured per-class costs.

    python benchmarks/census_scaling.py REPORT.json [--workers-per-gpu 4] [--gpus 1,2,4,8] [--wall SECONDS]

A SIMULATION, not a measurement: used where no machine with several GPUs is lent. It reads each tester class's
seconds from a census run's --nosync-report (the sum of its checks' durations, build and calibration included: what
`--dist loadgroup` keeps on one worker), then schedules the classes the way pytest-xdist's loadgroup does — each
class, in collection order, to the worker that frees up first — onto `gpus × workers-per-gpu` workers, and prints
the makespan and the speed-up over one GPU. The model assumes each GPU carries as many workers as the measured run
did (so a class costs what it cost there) and that a run's fixed start-up (`--wall` minus the simulated one-GPU
makespan, when the measured wall is given) is paid once per run.
"""

from __future__ import annotations

import argparse
import heapq
import json
from collections.abc import Iterable
from pathlib import Path

from pytest_nosync import ids


def class_costs(report: dict) -> dict[str, float]:
    """Seconds per tester class (its checks' durations), in the order the run collected them."""
    costs: dict[str, float] = {}
    for test in report["tests"]:
        item = ids.parse(test["test_id"])
        if item is not None:
            tester = item.tester
            costs[tester] = costs.get(tester, 0.0) + float(test["metrics"].get("duration_s", 0.0))
    return costs


def makespan(costs: Iterable[float], workers: int) -> float:
    """When the last worker finishes, each cost (in order) given to the worker that frees up first."""
    free_at = [0.0] * max(1, workers)
    for cost in costs:
        heapq.heapreplace(free_at, free_at[0] + cost)
    return max(free_at)


def table(costs: list[float], workers_per_gpu: int, gpus: list[int], startup: float) -> list[tuple[int, float, float]]:
    """(gpus, simulated wall, speed-up over one GPU) for each GPU count."""
    one = makespan(costs, workers_per_gpu) + startup
    rows = []
    for n in gpus:
        wall = makespan(costs, n * workers_per_gpu) + startup
        rows.append((n, wall, one / wall))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="census --nosync-report files (parts of one census)")
    parser.add_argument("--workers-per-gpu", type=int, default=4, help="workers per GPU in the measured run")
    parser.add_argument("--gpus", default="1,2,4,8")
    parser.add_argument("--wall", type=float, default=None, help="the measured run's wall, for its start-up")
    args = parser.parse_args()
    costs: dict[str, float] = {}
    for path in args.reports:
        costs.update(class_costs(json.loads(path.read_text())))
    values = list(costs.values())
    startup = max(0.0, args.wall - makespan(values, args.workers_per_gpu)) if args.wall else 0.0
    print(f"SIMULATION from {len(values)} tester classes, {sum(values):.0f} s of checks in all, "
          f"{args.workers_per_gpu} workers per GPU, start-up {startup:.0f} s")  # fmt: skip
    for n, wall, speedup in table(values, args.workers_per_gpu, [int(g) for g in args.gpus.split(",")], startup):
        print(f"  {n} GPU(s): {wall:7.1f} s  ×{speedup:.2f}")


if __name__ == "__main__":
    main()
