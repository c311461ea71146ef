"""Wall time of the built-in suite, process start to end, run N times as a subprocess.

    python benchmarks/suite_wall.py [--runs 3] [--json out.json] [-- extra pytest arguments]
    python benchmarks/suite_wall.py --contributor     # `pytest -m gpu --nosync --nosync-suite`, all of it

Prints min/median/max of the wall time, pytest's own figure, and the median seconds per check (syncs,
graph_breaks, alloc_growth, host_overhead, ...) and per target, read from each run's --nosync-report, with the
machine and versions. `--contributor` runs the contributor's command as the README gives it (targets, regression
cases, distributed cases), from an empty directory as a diffusers checkout's root would be for it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SUITE = str(Path(__file__).resolve().parents[1] / "pytest_nosync" / "suite" / "test_targets.py")


def run_once(extra: list[str], contributor: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cwd = Path(tmp) / "project"
        cwd.mkdir()
        what = ["--nosync-suite", *extra] if contributor else (extra or [SUITE])
        command = [sys.executable, "-m", "pytest", "-m", "gpu", "--nosync", "-q", "-p", "no:cacheprovider",
                   f"--nosync-report={report}", *what]  # fmt: skip
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=cwd if contributor else None)
        wall = time.perf_counter() - start
        doc = json.loads(report.read_text()) if report.exists() else {"tests": []}
    per_check: dict[str, float] = {}
    for test in doc["tests"]:
        per_check[test["check"]] = per_check.get(test["check"], 0.0) + test["metrics"].get("duration_s", 0.0)
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    return {"wall_s": wall, "rc": done.returncode, "summary": tail, "per_check_s": per_check,
            "per_target_s": doc.get("seconds_per_target", {})}  # fmt: skip


def python_loop_seconds(iterations: int = 10_000_000) -> float:
    """Seconds of a plain Python loop (the best of 3): the machine's speed at what the suite mostly does. Machines of
    one 2-core kind differ: one that took 1.75 s here ran the contributor command in 55-63 s, where an earlier one of
    the same kind had taken 21 s with the same code, so a wall time is read beside this figure."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        total = 0
        for i in range(iterations):
            total += i
        best = min(best, time.perf_counter() - start)
    return round(best, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--contributor", action="store_true", help="the whole `--nosync-suite` command")
    parser.add_argument("extra", nargs="*", help="pytest arguments (default: the target suite)")
    args = parser.parse_args()
    runs = [run_once(args.extra, args.contributor) for _ in range(args.runs)]
    walls = [r["wall_s"] for r in runs]

    def medians(key: str) -> dict[str, float]:
        names = {k for r in runs for k in r[key]}
        return {k: round(statistics.median(r[key].get(k, 0.0) for r in runs), 2) for k in sorted(names)}

    import platform

    import diffusers
    import torch

    result = {
        "command": " ".join(["pytest -m gpu --nosync", *(["--nosync-suite"] if args.contributor else []), *args.extra]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        + (torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU (CPU emulation)"),
        "python_loop_s": python_loop_seconds(),
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "diffusers": diffusers.__version__,
        },
        "runs": args.runs,
        "wall_s": {
            "min": round(min(walls), 1),
            "median": round(statistics.median(walls), 1),
            "max": round(max(walls), 1),
        },
        "pytest": [r["summary"] for r in runs],
        "per_check_s": medians("per_check_s"),
        "per_target_s": medians("per_target_s"),
        "exit_codes": [r["rc"] for r in runs],
    }
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
