"""The tracer and the diagnosis on real CUDA traces: what the synthetic traces stand in for on the CPU.

    pytest tests/profiling -m gpu      # on a GPU runner; skipped without CUDA

Each test plants what it then expects the diagnosis to find: a host stall between two kernels, an .item(),
copies; and checks what only kineto on CUDA produces: launch correlation, Triton launches, memory events,
NVTX and cudaProfilerStart/Stop, one profiler session shared with the profiler sync detector.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_nosync import nosync_guard
from pytest_nosync.detection import devices
from pytest_nosync.profiling.config import ProfilerOptions, TraceConfig
from pytest_nosync.profiling.diagnose import TraceDiagnosis
from pytest_nosync.profiling.trace import Trace

from . import tiny_pipeline
from .tiny_pipeline import TinyPipeline

pytestmark = pytest.mark.gpu


def _def_line(fn: Any) -> str:
    return f"tiny_pipeline.py:{inspect.getsourcelines(fn)[1]}"


@pytest.fixture
def pipe() -> TinyPipeline:
    if not devices.cuda_available():
        pytest.skip(devices.CUDA_ONLY)
    pipe = TinyPipeline("cuda", torch.float32)
    with torch.no_grad():
        pipe(num_inference_steps=2)
    torch.cuda.synchronize()
    return pipe


def _run(pipe: TinyPipeline, config: TraceConfig, steps: int = 3, **options: Any) -> Any:
    options.setdefault("checks", ("host_overhead",))
    with torch.no_grad(), nosync_guard(pipe, trace=config, test_id="tests/gpu.py::test", **options) as g:
        pipe(num_inference_steps=steps, callback_on_step_end=g.callback_on_step_end)
    return g.report


def test_eager_cuda_trace(pipe: TinyPipeline, tmp_path: Path) -> None:
    pipe.scheduler.stall = {1: 0.02}
    pipe.scheduler.item_at = 2
    pipe.scheduler.copy_at = {1, 2}
    options = ProfilerOptions(with_stack=True, profile_memory=True)
    report = _run(pipe, TraceConfig(mode="always", directory=str(tmp_path), profiler=options))
    d = TraceDiagnosis.from_dict(report.metrics["diagnosis"])
    print(report.metrics["diagnosis"])
    assert d.gpu and d.python_stacks and d.memory
    for step in d.steps:
        assert step.kernels > 0 and step.compiled_kernels == 0 and step.gpu_ms > 0
        regions = {r.name: r for r in step.regions}
        assert regions["transformer_forward"].kernels > 0 and regions["scheduler_step"].kernels > 0
    # the planted host stall: step 1's largest GPU gap, filled by slow_host_work in the scheduler step
    gap = d.step(1).gaps[0]
    assert gap.ms >= 19.0
    assert gap.host.where.endswith(_def_line(tiny_pipeline.slow_host_work))
    assert gap.host.region == "scheduler_step"
    assert d.step(1).gpu_idle_fraction > 0.5
    # the planted .item(): one device-to-host sync, in step 2, at read_back; the profiler's own stop is not listed
    in_steps = [s for s in d.syncs if s.phase == "step"]
    assert [(s.step, s.kind, s.op) for s in in_steps] == [(2, "dtoh_sync", "aten::item")]
    assert in_steps[0].where.endswith(_def_line(tiny_pipeline.read_back))
    # launch delays: one per kernel launched by a recorded runtime call
    kernels = sum(s.kernels for s in d.steps)
    assert d.launch_delay_us is not None and d.launch_delay_us.count >= kernels
    assert d.launch_delay_us.median > 0
    # the planted copies: none in step 0, .contiguous()'s direct_copy kernel in steps 1 and 2
    assert d.step(0).copies == 0 and d.step(0).layout_transforms == 0
    for n in (1, 2):
        assert any("direct_copy" in k and "aten::contiguous" in k for k in d.step(n).copy_kernels), d.step(n)
    # memory per step on the device
    assert any(m.device == "cuda:0" for m in d.step(1).memory)
    # the written file: Perfetto-ready, read back with the ranges on the host thread
    trace = Trace.load(report.artifacts["trace"])
    assert [s[2] for s in trace.step_ranges()] == [0, 1, 2]
    assert trace.of("kernel") and trace.of("cuda_runtime")


@pytest.mark.slow  # inductor's cold start, as the cudagraphs twins (tests/detectors/test_cudagraphs.py)
def test_compiled_denoiser_kernels_count_as_compiled(pipe: TinyPipeline, tmp_path: Path) -> None:
    pipe.transformer = torch.compile(pipe.transformer)  # inductor: Triton kernels, launched by cuLaunchKernel
    with torch.no_grad():
        pipe(num_inference_steps=2)  # compiles
    torch.cuda.synchronize()
    report = _run(pipe, TraceConfig(mode="always", directory=str(tmp_path)))
    d = TraceDiagnosis.from_dict(report.metrics["diagnosis"])
    print(report.metrics["diagnosis"])
    for step in d.steps:
        regions = {r.name: r for r in step.regions}
        forward = regions["transformer_forward"]
        # every kernel of the compiled forward is found in its region, launch call and all
        assert forward.kernels > 0 and forward.compiled_kernels == forward.kernels
        assert regions["scheduler_step"].compiled_kernels == 0
        assert step.launch_delay_us is not None and step.launch_delay_us.count >= step.kernels


def test_nsys_mode_with_real_nvtx_and_cudart(pipe: TinyPipeline, monkeypatch: pytest.MonkeyPatch) -> None:
    # the guard's (pytester may re-import it)
    tracer = importlib.import_module("pytest_nosync.detection.detectors.tracer")

    calls: list[str] = []

    class Spy:
        def __init__(self, real: Any) -> None:
            self.real = real

        def cudaProfilerStart(self) -> Any:
            calls.append("start")
            return self.real.cudaProfilerStart()

        def cudaProfilerStop(self) -> Any:
            calls.append("stop")
            return self.real.cudaProfilerStop()

    original = tracer.TraceDetector.__init__

    def with_spy(self: Any, options: Any, readers: Any = (), **kw: Any) -> None:
        original(self, options, readers, cudart=Spy(torch.cuda.cudart()))

    monkeypatch.setattr(tracer.TraceDetector, "__init__", with_spy)
    report = _run(pipe, TraceConfig(nsys=True, profiler=ProfilerOptions(schedule=(1, 0, 1))))
    assert calls == ["start", "stop"]  # real calls, returning success (else the tracer raises)
    assert report.artifacts == {} and not torch._C._autograd._profiler_enabled()


def test_profiler_sync_detector_shares_the_trace(pipe: TinyPipeline, tmp_path: Path) -> None:
    pipe.scheduler.item_at = 1
    config = TraceConfig(mode="always", directory=str(tmp_path))
    report = _run(pipe, config, steps=2, checks=("syncs",), backend="cuda", profile=True)
    syncs = [f for f in report.of_kind("dtoh_sync") if f.phase == "step"]
    assert syncs and all(f.step == 1 for f in syncs)
    assert any("profiler" in f.source for f in syncs), [f.source for f in syncs]  # confirmed from the one trace
    assert not report.of_kind("device_sync")  # stopping the profiler synchronizes: not the pipeline's
    assert report.artifacts["trace"]
