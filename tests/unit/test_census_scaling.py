"""benchmarks/census_scaling.py: the multi-GPU simulation schedules classes as xdist's loadgroup does."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "census_scaling.py"
spec = importlib.util.spec_from_file_location("census_scaling", SCRIPT)
census_scaling = importlib.util.module_from_spec(spec)
spec.loader.exec_module(census_scaling)


def test_each_class_goes_to_the_worker_that_frees_up_first() -> None:
    assert census_scaling.makespan([4, 1, 1, 1, 1], 2) == 4  # the four short ones fill the other worker
    assert census_scaling.makespan([1, 1, 1, 1, 4], 2) == 6  # the long one last: it starts at 2
    assert census_scaling.makespan([3, 3, 3], 1) == 9


def test_class_costs_sum_a_classes_checks_also_under_loadgroup_ids() -> None:
    report = {"tests": [
        {"test_id": "t.py::A::nosync[syncs]@t.py::A", "metrics": {"duration_s": 2.0}},
        {"test_id": "t.py::A::nosync[graph_breaks]", "metrics": {"duration_s": 1.5}},
        {"test_id": "t.py::B::nosync[syncs]", "metrics": {"duration_s": 1.0}},
        {"test_id": "t.py::test_plain", "metrics": {"duration_s": 9.0}},
    ]}  # fmt: skip
    assert census_scaling.class_costs(report) == {"t.py::A": 3.5, "t.py::B": 1.0}


def test_the_speed_up_is_bounded_by_the_longest_class_and_the_start_up() -> None:
    rows = census_scaling.table([10.0] + [1.0] * 30, workers_per_gpu=2, gpus=[1, 4], startup=5.0)
    (_, wall_one, _), (_, wall_four, speedup) = rows
    assert (wall_one, wall_four) == (25.0, 15.0)  # 40 s over 2 workers; over 8 the 10 s class is the floor
    assert speedup == 25.0 / 15.0
