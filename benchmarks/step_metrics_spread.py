"""Run-to-run spread of the suite's step metrics: the data behind the default tolerances of test_step_metrics.

    python benchmarks/step_metrics_spread.py [--runs 10] [--json out.json] [-- extra pytest arguments]

Runs `pytest -m gpu --nosync --nosync-suite -k test_step_metrics` N times, each a fresh process (as two CI runs
are), and reads each run's numbers from pytest-benchmark's JSON. Per target and metric it prints min/median/max
over the runs and the worst increase of one run over another (what a tolerance must absorb so that the same
commit never fails against itself): relative, and absolute in the metric's unit. Device ops and peak memory should
not vary at all; the script says whether they did. Times are shown both as each run's median over its rounds (what
the plugin keeps) and its minimum, to judge which aggregation is steadier.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def run_once(extra: list[str]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        command = [sys.executable, "-m", "pytest", "-m", "gpu", "--nosync", "--nosync-suite", "-k", "test_step_metrics",
                   "-q", "-p", "no:cacheprovider", f"--benchmark-json={out}", *extra]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp)
        if not out.exists():
            raise SystemExit(f"run failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
        return [b["extra_info"]["nosync"] for b in json.loads(out.read_text())["benchmarks"]]


def per_run_values(numbers: dict[str, Any]) -> dict[str, float | None]:
    steps = list(numbers["steps"].values())

    def mean(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return statistics.fmean(present) if present else None

    return {
        "device_ops": mean([s["device_ops"] for s in steps]),
        "peak_bytes": max(s["peak_bytes"] for s in steps),
        "host_ms (median of rounds)": mean([s["host_ms_outside_denoiser"] for s in steps]),
        "host_ms (min of rounds)": mean([min(s["host_ms_outside_denoiser_rounds"]) for s in steps]),
        "device_ms (median of rounds)": mean([s["device_ms"] for s in steps]),
        "device_ms (min of rounds)": mean([min(s["device_ms_rounds"] or [None]) for s in steps]),
    }


def spread(values: list[float]) -> dict[str, float]:
    low, high = min(values), max(values)
    return {"min": round(low, 4), "median": round(statistics.median(values), 4), "max": round(high, 4),
            "worst_increase_pct": round((high - low) / low * 100, 1) if low else 0.0,
            "worst_increase_abs": round(high - low, 4)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (e.g. --nosync-targets=flux,wan)")
    args = parser.parse_args()
    by_target: dict[str, dict[str, list[float]]] = {}
    about: dict[str, Any] = {}
    for i in range(args.runs):
        for numbers in run_once(args.extra):
            about = {k: numbers.get(k) for k in ("backend", "device", "torch", "diffusers", "rounds", "steps")}
            for metric, value in per_run_values(numbers).items():
                if value is not None:
                    by_target.setdefault(numbers["target"], {}).setdefault(metric, []).append(value)
        print(f"run {i + 1}/{args.runs} done", file=sys.stderr)
    results = {"runs": args.runs, **about, "targets": {}}
    for target, metrics in sorted(by_target.items()):
        results["targets"][target] = {metric: spread(values) for metric, values in metrics.items()}
    worst: dict[str, dict[str, float]] = {}
    for metrics in results["targets"].values():
        for metric, s in metrics.items():
            w = worst.setdefault(metric, {"worst_increase_pct": 0.0, "worst_increase_abs": 0.0})
            w["worst_increase_pct"] = max(w["worst_increase_pct"], s["worst_increase_pct"])
            w["worst_increase_abs"] = max(w["worst_increase_abs"], s["worst_increase_abs"])
    results["worst_over_targets"] = worst
    print(json.dumps(results, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
