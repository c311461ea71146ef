"""The CUDA mapping of the emulation: what CUDA-written code reaches, and that undoing it restores every global."""

from __future__ import annotations

import contextlib
import sys

import pytest
import torch

from pytest_nosync import nosync_guard
from pytest_nosync.detection import devices
from pytest_nosync.emulation import cuda_map, tensor


@pytest.fixture
def mapped():
    if devices.cuda_available():
        pytest.skip("this machine has CUDA: the mapping is for machines without one")
    device = devices.execution_device("emulate")
    undo = cuda_map.install(device)
    try:
        yield device
    finally:
        undo()


def test_cuda_code_lands_on_the_emulated_device(mapped: torch.device) -> None:
    assert torch.cuda.is_available() and torch.cuda.device_count() == 1
    assert torch.ones(2, device="cuda").device == mapped
    assert torch.ones(2, device=torch.device("cuda", 0)).device == mapped
    assert torch.ones(2).to("cuda").device == mapped
    assert torch.ones(2).to(0).device == mapped
    assert torch.ones(2).cuda().device == mapped
    assert torch.nn.Linear(2, 2).cuda().weight.device == mapped
    assert torch.nn.Linear(2, 2).to("cuda:0").weight.device == mapped
    generator = torch.Generator("cuda")
    assert generator.device == mapped and isinstance(generator, torch.Generator)
    assert isinstance(torch.Generator(), torch.Generator) and torch.Generator().device.type == "cpu"
    # a generator on the emulated device itself (a pipeline's on its execution device): torch makes none for it
    assert torch.Generator(device=mapped).device == mapped and torch.Generator(device=str(mapped)).device == mapped
    assert torch.ones(2).to(torch.float16).device.type == "cpu"  # only device arguments move


def test_memory_statistics_follow_the_live_device_storages(mapped: torch.device) -> None:
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    x = torch.ones(1024, device="cuda")  # 4 KiB
    view = x[:3]
    assert torch.cuda.memory_allocated() - before == 4096
    y = x * 2
    del y
    assert torch.cuda.max_memory_allocated() - before == 8192
    del x
    assert torch.cuda.memory_allocated() - before == 4096  # the view keeps the storage alive
    del view
    assert torch.cuda.memory_allocated() == before == tensor.memory.allocated


def test_device_properties_answer_for_the_host(mapped: torch.device) -> None:
    """Test suites read them to decide what fits (diffusers' require_big_accelerator, at collection)."""
    properties = torch.cuda.get_device_properties(0)
    assert properties.total_memory > 2**30 and properties.name.startswith("pytest-nosync")
    free, total = torch.cuda.mem_get_info()
    assert total == properties.total_memory and 0 < free <= total


def test_explicit_synchronizations_are_findings_as_on_a_gpu(mapped: torch.device) -> None:
    x = torch.ones(4, device="cuda")
    stream, event = torch.cuda.Stream(), torch.cuda.Event()
    with nosync_guard(backend="emulate") as g, g.step():
        y = x * 2
        torch.cuda.synchronize()
        event.record()
        event.synchronize()
        stream.synchronize()
        y.sum()
    lines = [f.detail for f in g.report.failures]
    assert [f.kind for f in g.report.failures] == ["device_sync"] * 3, g.report.findings
    assert lines == ["torch.cuda.synchronize()", "event.synchronize()", "stream.synchronize()"]


def test_a_pinned_host_tensor_copies_for_free(mapped: torch.device) -> None:
    pinned, pageable = torch.ones(4).pin_memory(), torch.ones(4)
    with nosync_guard(backend="emulate") as g, g.step():
        pinned.to("cuda", non_blocking=True)
        pageable.to("cuda", non_blocking=True)
    assert [(f.kind, f.data["pattern"]) for f in g.report.findings] == [("htod_sync", "non_blocking_pageable")]


def test_undo_restores_every_global() -> None:
    if devices.cuda_available():
        pytest.skip("this machine has CUDA")
    before = {name: getattr(torch.cuda, name) for name in ("is_available", "synchronize", "Event", "Stream")}
    generator, stack = torch.Generator, torch._C._len_torch_function_stack()
    undo = cuda_map.install(devices.execution_device("emulate"))
    assert torch._C._len_torch_function_stack() == stack + 1 and torch.Generator is not generator
    undo()
    assert {name: getattr(torch.cuda, name) for name in before} == before
    assert torch.Generator is generator and torch._C._len_torch_function_stack() == stack
    assert not torch.cuda.is_available() and not cuda_map.active()


def test_paused_gives_dynamo_the_real_torch_cuda(mapped: torch.device) -> None:
    with cuda_map.paused():
        assert not torch.cuda.is_available()
        assert torch.ones(2, device="cpu").device.type == "cpu"
    assert torch.cuda.is_available()


OPT_OUT = """
import torch

def test_sees_the_real_torch_cuda():
    assert not torch.cuda.is_available()
"""


@pytest.mark.parametrize(("args", "outcome"), [([], {"failed": 1}), (["--nosync-map-cuda=off"], {"passed": 1})])
def test_on_by_default_and_an_option_turns_it_off(pytester: pytest.Pytester, args: list[str], outcome: dict) -> None:
    if devices.cuda_available():
        pytest.skip("this machine has CUDA")
    pytester.makepyfile(OPT_OUT)
    pytester.runpytest("--nosync", *args).assert_outcomes(**outcome)
    assert not torch.cuda.is_available() and not cuda_map.active()  # the session put everything back


LIBRARY_USE = """
import torch

from pytest_nosync import nosync_guard

model = torch.nn.Linear(8, 8).requires_grad_(False)
with nosync_guard(checks=("syncs",)) as g:
    model.to("cuda")  # CUDA-written code, in the block: on the emulated device
    x = torch.ones(2, 8, device="cuda")
    for _ in range(2):
        with g.step():
            x = model(x)
            float(x.sum())
print([(f.kind.value, f.status.value, f.step) for f in g.report.findings])
print(g.report.backend, torch.cuda.is_available(), model.weight.device.type)
"""


def test_a_library_guard_runs_cuda_code_emulated_in_its_block(pytester: pytest.Pytester) -> None:
    """Outside pytest, `.to("cuda")` in a guarded block stopped with "Torch not compiled with CUDA enabled" where the
    same code under the plugin ran emulated."""
    if devices.cuda_available():
        pytest.skip("this machine has CUDA")
    script = pytester.makepyfile(library_use=LIBRARY_USE)
    result = pytester.run(sys.executable, str(script))
    assert result.ret == 0, result.stderr.str()
    assert result.outlines[-2:] == [
        "[('htod_sync', 'outside_steps', None), ('dtoh_sync', 'fail', 0), ('dtoh_sync', 'fail', 1)]",
        "emulate False emu",  # the mapping ends with the block; what it moved stays on the emulated device
    ]


@pytest.mark.parametrize("raises", [False, True])
def test_a_library_guard_maps_cuda_for_its_block_only(raises: bool) -> None:
    if devices.cuda_available():
        pytest.skip("this machine has CUDA")
    stack = torch._C._len_torch_function_stack()
    with pytest.raises(ValueError) if raises else contextlib.nullcontext(), nosync_guard(backend="emulate") as g:
        assert torch.cuda.is_available() and torch.ones(1, device="cuda").device == devices.execution_device()
        if raises:
            raise ValueError("the block raised")
    assert g.report.backend == "emulate"
    assert not torch.cuda.is_available() and not cuda_map.active()
    assert torch._C._len_torch_function_stack() == stack
    with nosync_guard(backend="emulate", map_cuda=False):
        assert not torch.cuda.is_available()  # left alone when asked


def test_a_guard_inside_the_plugins_mapping_leaves_it_to_the_run(mapped: torch.device) -> None:
    with nosync_guard(backend="emulate"):
        assert cuda_map._active and len(cuda_map._active) == 1
    assert torch.cuda.is_available() and cuda_map.active()  # the run's mapping, still in place
