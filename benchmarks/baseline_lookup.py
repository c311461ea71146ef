"""What judging a census by its baseline costs: one matcher per test (in the workers) and the end-of-run review (in the
controller), for a baseline and a run the size of one part of the scenario census of diffusers main (228 tester
classes, 13 scenarios, about 2,700 entries and 7,800 tests), built here from synthetic entries.

    python benchmarks/baseline_lookup.py [--classes 228] [--scenarios 13] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pytest_nosync.baseline import Baseline, Entry
from pytest_nosync.findings import Report

CHECKS = ("syncs", "graph_breaks", "alloc_growth", "host_overhead")


def census_like(classes: int, scenarios: int) -> tuple[Baseline, list[Report]]:
    entries, reports = [], []
    for c in range(classes):
        target = f"test_family_{c}::Pipeline{c}FastTests"
        for s in range(scenarios):
            scenario = "plain" if s == 0 else f"scenario_{s}"
            for check in CHECKS:
                reports.append(Report(test_id=f"{target}::nosync[{check}-{scenario}]", target=target, check=check,
                                      scenario=scenario))  # fmt: skip
            entries.append(Entry(where=f"*/scheduler_{c}.py:*", reason="r", target=target, check="syncs",
                                 scenario=scenario, diffusers=">=0.40.0.dev0"))  # fmt: skip
    return Baseline(entries), reports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classes", type=int, default=228)
    parser.add_argument("--scenarios", type=int, default=13)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    baseline, reports = census_like(args.classes, args.scenarios)
    start = time.perf_counter()
    for r in reports:
        baseline.matcher(r.test_id, r.target, r.check, "0.40.0.dev0", r.backend, r.scenario)
    matchers = time.perf_counter() - start
    start = time.perf_counter()
    baseline.review(reports, "0.40.0.dev0")
    review = time.perf_counter() - start
    result = {"entries": len(baseline.entries), "tests": len(reports), "matchers_s": round(matchers, 3),
              "review_s": round(review, 3)}  # fmt: skip
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
