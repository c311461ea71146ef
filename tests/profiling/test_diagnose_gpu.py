"""The diagnosis on synthetic GPU traces (tests/profiling/data), whose answers are known by construction."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_nosync.profiling import classify
from pytest_nosync.profiling.diagnose import TraceDiagnosis, diagnose
from pytest_nosync.profiling.trace import Trace

from . import synthetic

DATA = Path(__file__).parent / "data"


def _diagnosis(name: str) -> TraceDiagnosis:
    return diagnose(Trace.load(str(DATA / name)))


@pytest.fixture(scope="module")
def eager() -> TraceDiagnosis:
    return _diagnosis("gpu_eager.json")


@pytest.fixture(scope="module")
def compiled() -> TraceDiagnosis:
    return _diagnosis("gpu_compiled.json")


@pytest.mark.parametrize("name", sorted(synthetic.TRACES))
def test_committed_data_is_what_the_generator_writes(name: str, tmp_path: Path) -> None:
    builder, _ = synthetic.TRACES[name]()
    builder.write(tmp_path / name)
    assert json.loads((tmp_path / name).read_text()) == json.loads((DATA / name).read_text())


def test_planted_sleep_is_the_largest_gap_filled_by_that_function(eager: TraceDiagnosis) -> None:
    answers = synthetic.answers("gpu_eager.json")
    gap = eager.step(1).gaps[0]
    assert gap.ms == pytest.approx(answers["gap_us"] / 1e3, abs=1e-3)
    assert eager.gaps[0] == gap  # the largest of the whole trace too
    assert gap.host.python[:2] == ("<built-in function sleep>", "pipe.py(80): slow_host_work")
    assert gap.host.where == "pipe.py:80"
    assert gap.host.region == "scheduler_step"
    assert gap.host.op is None  # no aten op ran for a quarter of it
    assert "in slow_host_work() at pipe.py:80" in gap.host.label()


def test_gpu_idle_is_the_time_between_device_activities_in_the_window(eager: TraceDiagnosis) -> None:
    doc = json.loads((DATA / "gpu_eager.json").read_text())
    gpu = [e for e in doc["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy")]
    answers = synthetic.answers("gpu_eager.json")
    for step, expected in answers["steps"].items():
        start, end = (synthetic.T0 + t for t in expected["window"])
        inside = [e for e in gpu if start <= e["ts"] and e["ts"] + e["dur"] <= end]  # none straddles a window
        first, last = min(e["ts"] for e in inside), max(e["ts"] + e["dur"] for e in inside)
        lo = max(start, min(e["ts"] for e in gpu))
        hi = min(end, max(e["ts"] + e["dur"] for e in gpu))
        busy = sum(e["dur"] for e in inside)
        assert first >= lo and last <= hi
        stats = eager.step(step)
        assert stats.gpu_busy_ms == pytest.approx(busy / 1e3, abs=2e-3)
        assert stats.gpu_idle_ms == pytest.approx((hi - lo - busy) / 1e3, abs=2e-3)
        assert stats.gpu_idle_fraction == pytest.approx((hi - lo - busy) / (hi - lo), abs=1e-3)


def test_planted_item_is_a_sync_in_its_step_with_its_stack(eager: TraceDiagnosis) -> None:
    (sync,) = eager.syncs
    assert (sync.step, sync.phase, sync.kind, sync.call, sync.op) == (
        2,
        "step",
        "dtoh_sync",
        "cudaStreamSynchronize",
        "aten::item",
    )
    assert sync.python == ("pipe.py(60): check_nan", "pipe.py(10): __call__")
    assert sync.where == "pipe.py:60"
    assert [eager.step(n).syncs for n in range(3)] == [0, 0, 1]


def _expected(delays: list[float]) -> tuple[float, float]:
    ordered = sorted(delays)
    return statistics.median(ordered), ordered[math.ceil(0.95 * len(ordered)) - 1]


def test_launch_delay_is_kernel_start_minus_its_launch(eager: TraceDiagnosis, compiled: TraceDiagnosis) -> None:
    answers = synthetic.answers("gpu_eager.json")
    for step, expected in answers["steps"].items():
        delay = eager.step(step).launch_delay_us
        assert (delay.median, delay.p95) == _expected(expected["delays"])
        assert delay.count == len(expected["delays"])
    whole = eager.launch_delay_us
    assert (whole.median, whole.p95, whole.count) == (*_expected(answers["delays"]), len(answers["delays"]))
    # compiled step 0: six launches of delays 10..50, 10 → median 25, p95 50
    assert (compiled.step(0).launch_delay_us.median, compiled.step(0).launch_delay_us.p95) == (25.0, 50.0)
    # a CUDA graph launch is one delay however many kernels it runs
    assert compiled.launch_delay_us.count == len(synthetic.answers("gpu_compiled.json")["delays"])


def test_kernels_layout_transforms_and_copies_per_step(eager: TraceDiagnosis) -> None:
    for step, expected in synthetic.answers("gpu_eager.json")["steps"].items():
        stats = eager.step(step)
        assert stats.kernels == expected["kernels"]
        assert stats.compiled_kernels == 0
        assert stats.layout_transforms == expected["layout_transforms"]
        assert stats.copies == expected["copies"]
        assert stats.transfers == expected["transfers"]
    stats = eager.step(1)
    assert stats.layout_kernels == {"nchwToNhwcKernel via aten::conv3d": 1, "nhwcToNchwKernel via aten::conv3d": 1}
    assert stats.copy_kernels == {
        "CatArrayBatchedCopy via aten::cat": 1,  # the loop's top belongs to the next step
        "elementwise_kernel[direct_copy] via aten::contiguous": 1,
        "elementwise_kernel via aten::to": 1,  # named like any pointwise kernel, but launched by copy_
        "Memcpy DtoD via aten::copy_": 1,
    }  # and no add: a vectorized_elementwise_kernel of aten::add is not a copy


def test_regions_and_what_lies_outside_the_steps(eager: TraceDiagnosis) -> None:
    per_step = {r.name: r for r in eager.step(0).regions}
    assert (per_step["transformer_forward"].kernels, per_step["scheduler_step"].kernels) == (8, 2)
    overall = {r.name: r for r in eager.regions}
    assert overall["transformer_forward"].calls == 3
    assert overall["vae_decode"].kernels == 2  # after the steps: in no step's count
    assert sum(s.kernels for s in eager.steps) == sum(r.kernels for r in eager.regions) - 2


def test_memory_per_step(eager: TraceDiagnosis) -> None:
    for step, expected in synthetic.answers("gpu_eager.json")["steps"].items():
        (window,) = eager.step(step).memory
        assert window.device == "cuda:0"
        assert window.growth_bytes == expected["memory_growth"]
        assert window.peak_bytes == expected["peak"]


def test_host_time_between_denoiser_calls(eager: TraceDiagnosis) -> None:
    answers = synthetic.answers("gpu_eager.json")["between_calls_us"]
    for step, us in answers.items():
        assert eager.step(step).max_ms_between_denoiser_calls == pytest.approx(us / 1e3, abs=1e-3)
    assert eager.step(2).max_ms_between_denoiser_calls is None  # no call after the last step's
    assert eager.step(1).between_calls.python[0] == "<built-in function sleep>"


def test_compiled_kernels_per_step(compiled: TraceDiagnosis) -> None:
    for step, expected in synthetic.answers("gpu_compiled.json")["steps"].items():
        stats = compiled.step(step)
        assert (stats.kernels, stats.compiled_kernels) == (expected["kernels"], expected["compiled"])
        assert (stats.layout_transforms, stats.copies) == (expected["layout"], expected["copies"])
    regions = {r.name: r for r in compiled.regions}
    assert regions["transformer_forward"].compiled_kernels == regions["transformer_forward"].kernels
    assert regions["scheduler_step"].compiled_kernels == 0


def test_diagnosis_survives_json(eager: TraceDiagnosis, compiled: TraceDiagnosis) -> None:
    for diagnosis in (eager, compiled):
        assert TraceDiagnosis.from_dict(json.loads(json.dumps(diagnosis.to_dict()))) == diagnosis


@pytest.mark.parametrize(
    ("cat", "name", "op", "kind"),
    [
        ("kernel", synthetic.TO_NHWC, "aten::cudnn_convolution", classify.LAYOUT),
        ("kernel", "nhwc_to_nchw_kernel", None, classify.LAYOUT),
        ("kernel", "ncdhw2ndhwc", None, classify.LAYOUT),
        ("kernel", "void transpose_readWrite_alignment_kernel<float>(...)", None, classify.LAYOUT),
        ("kernel", "triton_poi_fused_clone_0", None, classify.LAYOUT),
        ("kernel", "triton_poi_fused__to_copy_clone_3", None, classify.LAYOUT),
        ("kernel", "triton_poi_fused__to_copy_12", None, classify.COPY),
        ("kernel", synthetic.DIRECT_COPY, "aten::copy_", classify.COPY),
        ("kernel", synthetic.CAST, "aten::copy_", classify.COPY),
        ("kernel", synthetic.CAT, "aten::cat", classify.COPY),
        ("gpu_memcpy", "Memcpy DtoD (Device -> Device)", "aten::copy_", classify.COPY),
        ("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", "aten::copy_", classify.TRANSFER),
        ("gpu_memset", "Memset (Device)", "aten::zero_", classify.TRANSFER),
        ("kernel", synthetic.ADD, "aten::add", None),
        ("kernel", synthetic.CAST, "aten::add", None),  # the same template elsewhere is real work
        ("kernel", synthetic.CONV, "aten::cudnn_convolution", None),
        ("kernel", "triton_poi_fused_add_clone_mul_0", None, None),  # fused with compute: not pure movement
        ("kernel", "triton_red_fused_native_layer_norm_1", None, None),
    ],
)
def test_classification_is_narrow(cat: str, name: str, op: str | None, kind: str | None) -> None:
    assert classify.classify(cat, name, op) == kind


def test_short_names() -> None:
    assert classify.short_name(synthetic.TO_NHWC) == "nchwToNhwcKernel"
    assert classify.short_name(synthetic.DIRECT_COPY) == "elementwise_kernel[direct_copy]"
    assert classify.short_name(synthetic.CAT) == "CatArrayBatchedCopy"
    assert classify.short_name("triton_poi_fused_clone_0") == "triton_poi_fused_clone_0"


def test_the_profilers_stop_synchronize_is_not_the_pipelines() -> None:
    doc = json.loads((DATA / "gpu_eager.json").read_text())
    events = doc["traceEvents"]
    last = max(e["ts"] + e.get("dur", 0) for e in events if e.get("ph") == "X")
    stop = {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": synthetic.PID,
            "tid": synthetic.TID, "ts": last + 10, "dur": 50, "args": {"correlation": 99999}}  # fmt: skip
    mid = dict(stop, ts=synthetic.T0 + 60.0, args={"correlation": 99998})  # before step 0: the pipeline's own
    d = diagnose(Trace([*events, stop, mid]))
    assert [(s.call, s.phase) for s in d.syncs] == [
        ("cudaDeviceSynchronize", "before_steps"),
        ("cudaStreamSynchronize", "step"),
    ]


def test_the_profiler_sync_detector_leaves_the_profilers_stop_out_too() -> None:
    from pytest_nosync.detection.detectors.profiler_sync import ProfilerSyncDetector
    from pytest_nosync.detection.guard_options import GuardOptions

    events = json.loads((DATA / "gpu_eager.json").read_text())["traceEvents"]
    last = max(e["ts"] + e.get("dur", 0) for e in events if e.get("ph") == "X")
    stop = {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": synthetic.PID,
            "tid": synthetic.TID, "ts": last + 10, "dur": 50, "args": {"correlation": 99999}}  # fmt: skip
    detector = ProfilerSyncDetector(GuardOptions(profile=True))
    trace = Trace([*events, stop])
    detector.use_trace_from(SimpleNamespace(load_trace=lambda: trace))
    detector.findings()
    assert [(s.call, phase, step) for s, phase, step in detector.syncs] == [("cudaStreamSynchronize", "step", 2)]


def test_a_diagnosis_crosses_from_an_xdist_worker_as_plain_data(eager: TraceDiagnosis) -> None:
    """A failing check's report carries its trace's diagnosis to the xdist controller through execnet, which takes
    plain data only: an enum among it ended the worker with an internal error (seen on the H100)."""
    execnet = pytest.importorskip("execnet")
    assert eager.syncs  # a sync, with the phase it happened in
    doc = execnet.loads(execnet.dumps(eager.to_dict()))
    assert TraceDiagnosis.from_dict(doc) == eager
