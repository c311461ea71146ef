"""The trace reader on a trace the CPU profiler writes here: nesting lookups, ranges, memory samples."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, record_function

from pytest_nosync.findings import Phase
from pytest_nosync.profiling.trace import Trace, phase_at


def _work(x: torch.Tensor) -> torch.Tensor:
    time.sleep(0.002)
    return (x @ x).relu().sum(dim=0)


@pytest.fixture(scope="module")
def cpu_trace(tmp_path_factory: pytest.TempPathFactory) -> Trace:
    x = torch.randn(32, 32)
    path = Path(tmp_path_factory.mktemp("trace")) / "cpu.json"
    with profile(activities=[ProfilerActivity.CPU], with_stack=True, profile_memory=True) as prof:
        for step in range(2):
            with record_function(f"nosync::step{step}"), record_function("nosync::region::transformer_forward"):
                _work(x)
    prof.export_chrome_trace(str(path))
    return Trace.load(str(path))


def _brute_enclosing(trace: Trace, cat: str, tid: object, ts: float) -> list:
    return [e for e in trace.of(cat) if e.tid == tid and e.contains(ts)]


def test_enclosing_is_the_chain_a_scan_finds(cpu_trace: Trace) -> None:
    tid = cpu_trace.host_tid()
    probes = [e.ts + e.dur / 3 for e in cpu_trace.of("cpu_op")[:40]]
    for cat in ("python_function", "cpu_op", "user_annotation"):
        for ts in probes:
            assert cpu_trace.enclosing(cat, tid, ts) == _brute_enclosing(cpu_trace, cat, tid, ts)


def test_overlapping_is_what_a_scan_finds(cpu_trace: Trace) -> None:
    tid = cpu_trace.host_tid()
    for start, end, _ in cpu_trace.step_ranges():
        found = cpu_trace.overlapping("cpu_op", tid, start, end)
        expected = [e for e in cpu_trace.of("cpu_op") if e.tid == tid and e.end > start and e.ts <= end]
        assert sorted(found, key=id) == sorted(expected, key=id)


def test_steps_regions_and_host_thread(cpu_trace: Trace) -> None:
    steps = cpu_trace.step_ranges()
    assert [s[2] for s in steps] == [0, 1]
    regions = cpu_trace.region_ranges()
    assert [r.name for r in regions] == ["nosync::region::transformer_forward"] * 2
    assert all(steps[i][0] <= regions[i].ts and regions[i].end <= steps[i][1] for i in range(2))
    assert cpu_trace.host_tid() == regions[0].tid


def test_memory_samples_are_read(cpu_trace: Trace) -> None:
    assert cpu_trace.memory, "profile_memory records [memory] events"
    assert {m.device for m in cpu_trace.memory} == {"cpu"}
    assert any(m.delta > 0 for m in cpu_trace.memory) and any(m.delta < 0 for m in cpu_trace.memory)


def test_phase_at_follows_the_guard_rule() -> None:
    steps = [(10.0, 20.0, 0), (30.0, 40.0, 1)]
    assert phase_at(5, steps) == (Phase.BEFORE_STEPS, None)
    assert phase_at(15, steps) == (Phase.IN_STEP, 0)
    assert phase_at(25, steps) == (Phase.IN_STEP, 1)  # between two steps: the next one
    assert phase_at(45, steps) == (Phase.AFTER_STEPS, None)


def test_moved_ranges_keep_their_host_thread() -> None:
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "nosync::step0",
            "ts": 0,
            "dur": 10,
            "pid": 1,
            "tid": 99,
            "args": {"host tid": 7},
        },
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "pid": 1, "tid": 7},
    ]
    trace = Trace(events)
    assert trace.host_tid() == 7
    assert trace.annotation_at(7, 1.5, "nosync::step").name == "nosync::step0"
