"""The tracer on the CPU: ranges in the trace, export modes, schedule, nsys call sequence, restoring state."""

from __future__ import annotations

import gzip
import importlib
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_nosync import nosync_guard
from pytest_nosync.detection import devices
from pytest_nosync.detection.detectors.base import Detector
from pytest_nosync.detection.detectors.profiler_ranges import NvtxRanges
from pytest_nosync.detection.guard_options import GuardOptions
from pytest_nosync.profiling.config import ProfilerOptions, TraceBudgets, TraceConfig
from pytest_nosync.profiling.diagnose import TraceDiagnosis
from pytest_nosync.profiling.export import NOSYNC_TRACK, file_stem
from pytest_nosync.profiling.trace import Trace

from .tiny_pipeline import TinyPipeline

STACKS = ProfilerOptions(with_stack=True, profile_memory=True)


def _run(pipe: TinyPipeline, config: TraceConfig, steps: int = 3, name: str = "tests/t.py::test_x", **kw: Any):
    with torch.no_grad(), nosync_guard(pipe, checks=("host_overhead",), trace=config, test_id=name, **kw) as g:
        pipe(num_inference_steps=steps, callback_on_step_end=g.callback_on_step_end)
    return g.report


def _profiler_enabled() -> bool:
    return torch._C._autograd._profiler_enabled()


@pytest.fixture
def pipe() -> TinyPipeline:
    pipe = TinyPipeline()
    with torch.no_grad():
        pipe(num_inference_steps=2)  # warm-up: first-call work is not what a step costs
    return pipe


def test_always_writes_a_trace_with_steps_and_regions_on_their_own_track(pipe: TinyPipeline, tmp_path: Path) -> None:
    pipe.scheduler.stall = {1: 0.02}
    report = _run(pipe, TraceConfig(mode="always", directory=str(tmp_path), profiler=STACKS))
    path = report.artifacts["trace"]
    assert path == str(tmp_path / "tests_t.py__test_x.json")
    doc = json.loads(Path(path).read_text())
    tracks = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
    ranges = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("nosync::")]
    assert {tracks[e["tid"]] for e in ranges} == {NOSYNC_TRACK}
    trace = Trace.load(path)
    assert [s[2] for s in trace.step_ranges()] == [0, 1, 2]
    regions = [r.name.rsplit("::", 1)[-1] for r in trace.region_ranges()]
    assert regions.count("transformer_forward") == 3 and regions.count("scheduler_step") == 3
    assert {"encode_prompt", "vae_decode"} <= set(regions)
    assert trace.host_tid() == trace.of("cpu_op")[0].tid  # read back on the thread they ran on
    assert report.metrics["profiled"] is True  # its step timings were taken under the profiler


def test_the_planted_sleep_is_the_longest_host_work_of_its_step(pipe: TinyPipeline, tmp_path: Path) -> None:
    pipe.scheduler.stall = {1: 0.02}
    report = _run(pipe, TraceConfig(mode="always", directory=str(tmp_path), profiler=STACKS))
    diagnosis = TraceDiagnosis.from_dict(report.metrics["diagnosis"])
    assert [s.step for s in diagnosis.steps] == [0, 1, 2]
    hot = diagnosis.step(1).hotspots[0]
    assert hot.name == "<built-in function sleep>" and hot.self_ms >= 19
    assert hot.host.where.endswith("tiny_pipeline.py:22")  # slow_host_work's def line
    assert hot.host.region == "scheduler_step"
    assert hot.name not in {h.name for h in diagnosis.step(0).hotspots}  # step 1's alone (no time bound: load varies)
    assert diagnosis.step(1).max_ms_between_denoiser_calls >= 20
    assert {r.name for r in diagnosis.regions} >= {"transformer_forward", "scheduler_step", "vae_decode"}
    assert not diagnosis.gpu and any("no GPU activity" in n for n in diagnosis.notes)
    assert diagnosis.step(0).memory and diagnosis.step(0).memory[0].device == "cpu"


def test_on_failure_keeps_only_a_failing_blocks_trace(pipe: TinyPipeline, tmp_path: Path) -> None:
    budgets = TraceBudgets(max_cpu_ms_between_denoiser_calls=10.0)
    config = TraceConfig(directory=str(tmp_path), profiler=STACKS)
    passing = _run(pipe, config, name="tests/t.py::test_passes", trace_budgets=budgets)
    assert passing.passed and passing.artifacts == {} and not list(tmp_path.iterdir())
    pipe.scheduler.stall = {1: 0.02}
    failing = _run(pipe, config, name="tests/t.py::test_fails", trace_budgets=budgets)
    assert failing.passed is False
    (finding,) = failing.failures
    assert (finding.kind, finding.step, finding.region) == ("host_overhead", 1, "scheduler_step")
    assert str(finding.where).endswith("tiny_pipeline.py:22")
    assert Path(failing.artifacts["trace"]).name == "tests_t.py__test_fails.json"
    assert "diagnosis" in failing.metrics


def test_never_profiles_only_for_budgets(pipe: TinyPipeline, tmp_path: Path) -> None:
    config = TraceConfig(mode="never", directory=str(tmp_path))
    assert not config.active
    report = _run(pipe, config)
    assert report.artifacts == {} and "diagnosis" not in report.metrics and "profiled" not in report.metrics
    budgets = TraceBudgets(max_cpu_ms_between_denoiser_calls=1000.0)
    report = _run(pipe, TraceConfig(mode="never", directory=str(tmp_path)), trace_budgets=budgets)
    assert report.passed and report.artifacts == {} and "diagnosis" in report.metrics
    assert not list(tmp_path.iterdir())


def test_gzip_and_a_second_block_of_the_same_test(pipe: TinyPipeline, tmp_path: Path) -> None:
    config = TraceConfig(mode="always", directory=str(tmp_path), gzip=True)
    first = _run(pipe, config, name="tests/t.py::test_twice")
    second = _run(pipe, config, name="tests/t.py::test_twice")
    assert first.artifacts["trace"].endswith("tests_t.py__test_twice.json.gz")
    assert second.artifacts["trace"].endswith("tests_t.py__test_twice-2.json.gz")
    with gzip.open(second.artifacts["trace"], "rt") as fh:
        assert json.load(fh)["traceEvents"]
    assert [s[2] for s in Trace.load(first.artifacts["trace"]).step_ranges()] == [0, 1, 2]


def test_schedule_steps_the_profiler_at_each_step_end(pipe: TinyPipeline, tmp_path: Path) -> None:
    # wait 1, warm up 1, record 1: only step 2 is in the trace
    config = TraceConfig(mode="always", directory=str(tmp_path), profiler=ProfilerOptions(schedule=(1, 1, 1)))
    report = _run(pipe, config, steps=4)
    trace = Trace.load(report.artifacts["trace"])
    assert [s[2] for s in trace.step_ranges()] == [2]
    assert not _profiler_enabled()


class FakeCuda:
    """Records cudart and NVTX calls in order (no CUDA here)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def cudaProfilerStart(self) -> int:
        self.calls.append("start")
        return 0

    def cudaProfilerStop(self) -> int:
        self.calls.append("stop")
        return 0

    def range_push(self, name: str) -> None:
        self.calls.append(f"push {name}")

    def range_pop(self) -> None:
        self.calls.append("pop")


def _nsys_run(pipe: TinyPipeline, schedule: tuple[int, int, int] | None, steps: int) -> FakeCuda:
    # the guard's (pytester may re-import it)
    tracer = importlib.import_module("pytest_nosync.detection.detectors.tracer")

    fake = FakeCuda()
    config = TraceConfig(nsys=True, profiler=ProfilerOptions(schedule=schedule))
    original = tracer.TraceDetector.__init__

    def with_fakes(self: Any, options: GuardOptions, readers: Any = (), **kw: Any) -> None:
        original(self, options, readers, cudart=fake, nvtx=fake)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tracer.TraceDetector, "__init__", with_fakes)
        report = _run(pipe, config, steps=steps)
    assert report.artifacts == {} and "diagnosis" not in report.metrics  # no torch.profiler in nsys mode
    return fake


def test_nsys_mode_call_sequence(pipe: TinyPipeline) -> None:
    calls = _nsys_run(pipe, None, steps=2).calls
    step0, step1 = calls.index("push nosync::step0"), calls.index("push nosync::step1")
    assert calls.index("start") < step0  # capture opens with the first step
    assert calls[-1] == "stop" and calls.count("start") == calls.count("stop") == 1
    assert calls[step0 + 1] == "push nosync::region::transformer_forward"
    assert "push nosync::region::scheduler_step" in calls[step0:step1]
    assert "push nosync::region::vae_decode" in calls[step1:]
    assert calls.count("pop") == sum(c.startswith("push") for c in calls)  # balanced


def test_nsys_capture_window_follows_the_schedule(pipe: TinyPipeline) -> None:
    calls = _nsys_run(pipe, (1, 0, 2), steps=4).calls  # capture steps 1 and 2
    start, stop = calls.index("start"), calls.index("stop")
    assert calls[start + 1] == "push nosync::step1"
    assert "push nosync::step2" in calls[start:stop] and "push nosync::step3" in calls[stop:]
    assert calls[stop - 1] == "pop"  # stopped right after step 2's range closed
    assert calls.count("pop") == sum(c.startswith("push") for c in calls)


def test_nvtx_out_of_order_close_keeps_the_stack_balanced() -> None:
    fake = FakeCuda()
    ranges = NvtxRanges(fake)
    for name in ("a", "b", "c"):
        ranges.push(name)
    ranges.pop("b")  # b closes while c is open: c is popped and pushed again
    assert ranges.stack == ["a", "c"]
    ranges.close_all()
    assert fake.calls == ["push a", "push b", "push c", "pop", "pop", "push c", "pop", "pop"]


def test_state_is_restored_when_the_block_raises(pipe: TinyPipeline, tmp_path: Path) -> None:
    # the guard's (pytester may re-import it)
    tracer = importlib.import_module("pytest_nosync.detection.detectors.tracer")

    step, hooks = type(pipe.scheduler).step, dict(pipe.transformer._forward_pre_hooks)
    pipe.scheduler.fail_at = 1
    fake = FakeCuda()
    original = tracer.TraceDetector.__init__

    def with_fakes(self: Any, options: GuardOptions, readers: Any = (), **kw: Any) -> None:
        original(self, options, readers, cudart=fake, nvtx=fake)

    for config in (TraceConfig(mode="always", directory=str(tmp_path)), TraceConfig(nsys=True)):
        with pytest.MonkeyPatch.context() as mp, pytest.raises(ValueError, match="scheduler failed"):
            mp.setattr(tracer.TraceDetector, "__init__", with_fakes)
            _run(pipe, config)
        assert not _profiler_enabled()
        assert type(pipe.scheduler).step is step and dict(pipe.transformer._forward_pre_hooks) == hooks
    assert fake.calls.count("pop") == sum(c.startswith("push") for c in fake.calls)
    assert fake.calls.count("start") == fake.calls.count("stop") == 1
    # the failing block's trace was kept, up to the raise
    (kept,) = tmp_path.iterdir()
    assert [s[2] for s in Trace.load(str(kept)).step_ranges()] == [0, 1]


def test_a_running_profiler_is_left_alone(pipe: TinyPipeline, tmp_path: Path) -> None:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]):
        report = _run(pipe, TraceConfig(mode="always", directory=str(tmp_path)))
        assert _profiler_enabled()
    assert "another torch.profiler session is running" in report.metrics["trace_skipped"]
    assert report.artifacts == {}


class TraceReader(Detector):
    uses_profiler = True

    def __init__(self) -> None:
        super().__init__(GuardOptions())
        self.tracer: Any = None
        self.steps: list[int] = []

    def use_trace_from(self, tracer: Any) -> None:
        self.tracer = tracer

    def findings(self) -> list:
        self.steps = [s[2] for s in self.tracer.load_trace().step_ranges()]
        return []


def test_profiler_detectors_read_the_tracers_trace(pipe: TinyPipeline, tmp_path: Path) -> None:
    reader = TraceReader()
    _run(pipe, TraceConfig(mode="on-failure", directory=str(tmp_path)), detectors=[reader])
    assert reader.tracer.profiler_options.with_stack  # they need Python stacks
    assert reader.steps == [0, 1, 2]
    assert not list(tmp_path.iterdir())  # a passing block: read, not kept


def test_file_names() -> None:
    assert file_stem("tests/test_x.py::test_y[a-1]") == "tests_test_x.py__test_y_a-1"
    long = file_stem("tests/t.py::test_y[" + "x" * 300 + "]")
    assert len(long) == 120 and long != file_stem("tests/t.py::test_y[" + "x" * 299 + "]")


def test_the_profilers_own_synchronize_is_no_finding(
    pipe: TinyPipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopping torch.profiler synchronizes the device (at a schedule's end: in the middle of the run). The
    explicit-sync detector must not see it; a synchronize of the block's own it still sees."""
    from pytest_nosync.detection.detectors.explicit_sync import ExplicitSyncDetector
    from pytest_nosync.detection.detectors.profiler_session import ProfilerSession

    synced: list[str] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: synced.append("sync"))  # no device: a stand-in
    for name in ("step", "stop"):
        original = getattr(ProfilerSession, name)

        def and_sync(self: ProfilerSession, original: Any = original) -> None:
            torch.cuda.synchronize()  # what torch.profiler does when it stops recording
            original(self)

        monkeypatch.setattr(ProfilerSession, name, and_sync)
    config = TraceConfig(mode="always", directory=str(tmp_path), profiler=ProfilerOptions(schedule=(0, 1, 1)))
    # map_cuda=False: the stand-in is this test's torch.cuda.synchronize (the emulation's CUDA mapping has its own)
    report = _run(pipe, config, detectors=[ExplicitSyncDetector(GuardOptions(mode="error"))], map_cuda=False)
    assert report.passed and not report.of_kind("device_sync")
    assert len(synced) == 4  # three step ends and the stop at the end
    with (
        pytest.raises(RuntimeError, match="explicit synchronize"),
        nosync_guard(
            pipe,
            checks=("host_overhead",),
            detectors=[ExplicitSyncDetector(GuardOptions(mode="error"))],
            trace=config,
            map_cuda=False,
        ) as g,
    ):
        g.begin_step()
        torch.cuda.synchronize()


def test_the_tracer_is_armed_first_and_disarmed_last(pipe: TinyPipeline, tmp_path: Path) -> None:
    with nosync_guard(
        pipe, checks=("host_overhead", "alloc_growth"), trace=TraceConfig(mode="always", directory=str(tmp_path))
    ) as g:
        assert g._detectors[0].name == "trace"


def test_for_perfetto_moves_host_ranges_only() -> None:
    from pytest_nosync.profiling.export import for_perfetto

    events = [
        {"ph": "X", "cat": "user_annotation", "name": "nosync::step0", "pid": 5, "tid": 5, "ts": 0, "dur": 9},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "nosync::step0", "pid": 0, "tid": 7, "ts": 1, "dur": 8},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 5, "tid": 5, "ts": 1, "dur": 2},
    ]
    doc = for_perfetto({"traceEvents": [dict(e) for e in events]})
    moved, gpu, op = doc["traceEvents"][:3]
    assert (moved["tid"], moved["args"]["host tid"]) == (1, 5)
    assert gpu == events[1] and op == events[2]
    names = [e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"]
    assert names == [NOSYNC_TRACK]


def test_a_schedule_that_never_records_says_so(pipe: TinyPipeline, tmp_path: Path) -> None:
    config = TraceConfig(mode="always", directory=str(tmp_path), profiler=ProfilerOptions(schedule=(3, 1, 1)))
    report = _run(pipe, config, steps=2)
    assert report.artifacts == {} and "schedule's active steps" in report.metrics["trace_skipped"]
    assert not _profiler_enabled()


def test_nsys_mode_without_cuda_fails_at_entry(pipe: TinyPipeline) -> None:
    if devices.cuda_available():
        pytest.skip("this machine has CUDA")
    before = type(pipe.scheduler).step
    with pytest.raises(RuntimeError, match="nsys mode needs a CUDA device"):
        _run(pipe, TraceConfig(nsys=True))
    assert type(pipe.scheduler).step is before


def _crossings(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Complete events that start inside another on the same track and end after it: Perfetto drops them."""
    tracks: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for e in events:
        if e.get("ph") == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    bad = []
    for track in tracks.values():
        track.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict[str, Any]] = []
        for e in track:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"] + 1e-3:
                bad.append((stack[-1]["name"], e["name"]))
            stack.append(e)
    return bad


def test_the_written_trace_nests_on_every_track(pipe: TinyPipeline, tmp_path: Path) -> None:
    report = _run(pipe, TraceConfig(mode="always", directory=str(tmp_path), profiler=STACKS))
    events = json.loads(Path(report.artifacts["trace"]).read_text())["traceEvents"]
    assert _crossings(events) == []
    for e in events:  # on the host thread, the ranges would cross the hooks' Python functions
        if "host tid" in e.get("args", {}):
            e["tid"] = e["args"]["host tid"]
    assert any(name.startswith("nosync::") for pair in _crossings(events) for name in pair)
