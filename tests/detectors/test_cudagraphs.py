"""The cudagraphs check (detectors.cudagraphs): on a GPU, a denoiser that mutates its input in every step cannot be
captured, and one that makes a CPU tensor in every step is captured in pieces around it: the skip, the partition, is
named at that line; its clean twin is captured whole and replayed, and passes. Under the emulation the check says it
did not run, and asking a run for it there is a usage error."""

from __future__ import annotations

import inspect

import pytest
import torch

from pytest_nosync import nosync_guard
from tests.detectors.test_sync_twins import CUDA_BACKEND_ONLY
from tests.twins import loop_pipeline

# Inductor compiles these: the first compile of a process pays its cold start (36.6 s of the main job's 95.6 on an
# H200, the rest of the file 2.5 s), so they run where a marker expression names slow tests: `-m "gpu and slow"`.
COMPILES = pytest.mark.slow


class MutatesInput(torch.nn.Module):
    """A denoiser that scales its input latents in place in every call: inductor will not capture a graph that
    mutates one of its inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        latents.mul_(0.5)  # twin: mutates its input
        return self.linear(latents)


class MakesCpuTensor(torch.nn.Module):
    """A denoiser that draws a CPU tensor in every call and moves it to the device: a graph with a CPU node is run
    without a CUDA graph. (A constant such as `torch.tensor([0.5])` would be folded away by inductor; random numbers
    cannot be.)"""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        return self.linear(latents) + torch.rand(8).to(latents.device) * 1e-3  # twin: a CPU tensor every step


def _guarded(pipe, device: torch.device, backend: str):
    x = loop_pipeline.latents(device)
    with nosync_guard(pipe, checks=("cudagraphs",), backend=backend) as g, torch.no_grad():
        pipe(x, num_inference_steps=4)
    return g.report


@COMPILES
@CUDA_BACKEND_ONLY
def test_an_input_mutated_in_every_step_is_a_skip_at_its_line(backend: str, device: torch.device) -> None:
    pipe = loop_pipeline.build(device)
    pipe.transformer = MutatesInput().to(device)
    report = _guarded(pipe, device, backend)
    assert report.passed is False
    line = inspect.getsourcelines(MutatesInput.forward)[1] + 1
    assert {(f.kind, f.where.line) for f in report.failures} == {("cudagraph_skip", line)}, report.findings
    assert "mutated inputs" in report.failures[0].detail


@COMPILES
@CUDA_BACKEND_ONLY
@pytest.mark.parametrize("run", ["compiled", "from inductor's cache"])
def test_a_cpu_tensor_made_in_every_step_is_a_partition_at_its_line(run: str, backend: str, device: torch.device
                                                                    ) -> None:  # fmt: skip
    """Since torch 2.9 inductor cuts the CPU ops out of the graph (graph partitioning) and captures the rest in
    pieces, silently: the cut is the finding. In the second run the same graph was compiled just before, so it is in
    inductor's caches, which must not hide it."""
    pipe = loop_pipeline.build(device)
    pipe.transformer = MakesCpuTensor().to(device)
    if run == "from inductor's cache":  # the same graph compiled ahead, outside the check, inductor's caches on
        from torch._inductor import cudagraph_trees

        with torch.no_grad():
            torch.compile(MakesCpuTensor().to(device), mode="reduce-overhead")(loop_pipeline.latents(device))
        torch._dynamo.reset()
        cudagraph_trees.reset_cudagraph_trees()
    report = _guarded(pipe, device, backend)
    assert report.passed is False
    first = inspect.getsourcelines(MakesCpuTensor.forward)[1]
    line = first + 1
    assert {f.kind for f in report.failures} == {"cudagraph_partition"}, report.findings
    assert line in {f.where.line for f in report.failures} <= {first, line}, report.findings
    assert any("cpu ops" in f.detail for f in report.failures if f.where.line == line), report.findings


@COMPILES
@CUDA_BACKEND_ONLY
def test_the_clean_twin_is_captured_and_passes(backend: str, device: torch.device) -> None:
    report = _guarded(loop_pipeline.build(device), device, backend)
    assert report.passed, report.findings


def test_under_the_emulation_the_check_did_not_run() -> None:
    from pytest_nosync import execution_device

    device = execution_device("emulate")
    report = _guarded(loop_pipeline.build(device), device, "emulate")
    assert report.passed is False and [f.kind for f in report.findings] == ["not_checked"]
    assert "cudagraphs needs a GPU" in report.not_checked[0]


def test_asking_a_run_for_it_without_a_gpu_is_one_sentence(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-m", "gpu", "--nosync", "--nosync-suite", "--nosync-backend", "emulate",
                                "--nosync-checks", "syncs,cudagraphs")  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--nosync-checks: cudagraphs needs a GPU" in result.stderr.str()


def test_a_check_that_fails_to_arm_leaves_nothing_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard disarms only the detectors that armed: one that raised halfway must take off what it had put on
    (inductor's scheduler wrapped, its caches off), or every later compile of the process runs with them."""
    from types import SimpleNamespace

    from torch._inductor import scheduler

    from pytest_nosync.detection.detectors.cudagraphs import CudaGraphsDetector
    from pytest_nosync.detection.guard_options import GuardOptions

    original = scheduler.Scheduler.should_partition
    cache = torch._inductor.config.fx_graph_cache

    def refused(*args: object, **kwargs: object) -> None:
        raise RuntimeError("compile refused")  # a double: what arming does last fails

    monkeypatch.setattr(torch, "compile", refused)
    detector = CudaGraphsDetector(GuardOptions(checks=("cudagraphs",), backend="cuda"))
    with pytest.raises(RuntimeError, match="compile refused"):
        detector.arm(SimpleNamespace(denoiser=torch.nn.Linear(2, 2), current_step=None))
    assert scheduler.Scheduler.should_partition is original
    assert torch._inductor.config.fx_graph_cache == cache


def test_the_compiled_forward_keeps_the_denoisers_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    """A modular denoise block passes the denoiser only the fields `inspect.signature(transformer.forward)` names
    (QwenImage's, LTX2's, Cosmos3's): a forward of `*args, **kwargs` in its place names none, and the call raised.
    Armed here without a GPU, the compile a double, the forward put in the denoiser's place is what is read."""
    from types import SimpleNamespace

    from pytest_nosync.detection.detectors.cudagraphs import CudaGraphsDetector
    from pytest_nosync.detection.guard_options import GuardOptions

    monkeypatch.setattr(torch, "compile", lambda fn, **kwargs: fn)  # a double: no inductor, no GPU
    denoiser = loop_pipeline.Denoiser()
    detector = CudaGraphsDetector(GuardOptions(checks=("cudagraphs",), backend="cuda"))
    detector.arm(SimpleNamespace(denoiser=denoiser, current_step=None))
    try:
        assert list(inspect.signature(denoiser.forward).parameters) == ["latents"]
        assert denoiser(latents=torch.ones(1, 8)).shape == (1, 8) and detector.calls == 1
    finally:
        detector.disarm()
    assert "forward" not in vars(denoiser)  # the class's own forward again
