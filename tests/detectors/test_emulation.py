"""The emulate backend: residency (which tensors live on the device), tiny real pipelines, restored state.

Residency is whatever the code's own `.to(device)` calls make it, as on a GPU: a constant the code keeps on
the host is read for free, its copy to the device is a sync, and everything computed from parameters or
inputs on the device stays there.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable

import pytest
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from pytest_nosync import nosync_guard
from pytest_nosync.detection import devices
from pytest_nosync.emulation import syncs
from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline
from tests.releases import diffusers_before


@pytest.fixture(scope="module")
def device() -> torch.device:
    try:
        return devices.execution_device("emulate")
    except devices.BackendUnavailable as exc:
        pytest.skip(str(exc))


def _line(fn: Callable, marker: str) -> int:
    """The line of `fn` that carries `# <marker>`."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if f"# {marker}" in text)


def _failures(report) -> list[tuple[str, int, str]]:
    return [(f.kind, f.lineno, f.data["op"]) for f in report.failures]


# ---- residency ---------------------------------------------------------------------------------
SIGMAS = torch.linspace(1.0, 0.0, 9)  # a schedule kept on the host, as UniPC keeps its sigmas


def read_host_sigma(x: torch.Tensor, device: torch.device) -> torch.Tensor:
    sigma = float(SIGMAS[2])  # host read
    return x * sigma


def copy_host_sigma(x: torch.Tensor, device: torch.device) -> torch.Tensor:
    sigma = SIGMAS[2].to(device)  # htod
    return x * sigma


def test_reading_a_host_constant_is_not_a_sync(device: torch.device) -> None:
    x = torch.ones(4, device=device)
    with nosync_guard(backend="emulate") as g, g.step():
        read_host_sigma(x, device)
        fresh = torch.linspace(1.0, 0.0, 9)  # made inside the block, still on the host
        x * fresh[3].item()
    assert g.report.findings == []


def test_copying_a_host_constant_to_the_device_is_an_htod_sync(device: torch.device) -> None:
    x = torch.ones(4, device=device)
    with nosync_guard(backend="emulate") as g, g.step():
        copy_host_sigma(x, device)
    assert _failures(g.report) == [("htod_sync", _line(copy_host_sigma, "htod"), "aten::copy_")]
    assert g.report.failures[0].data["pattern"] == "to_device"
    assert os.path.samefile(g.report.failures[0].filename, __file__)


def use_module(model: torch.nn.Module, device: torch.device) -> None:
    out = model(torch.ones(1, 4, device=device))  # created on the device: no copy
    out.item()  # output read
    model[0].weight[0, 0].item()  # parameter read


def test_parameters_and_what_is_computed_from_them_live_on_the_device(device: torch.device) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.SiLU(), torch.nn.Linear(8, 1)).to(device)
    assert {p.device for p in model.parameters()} == {device}
    with nosync_guard(backend="emulate") as g, g.step():
        use_module(model, device)
    read = "aten::_local_scalar_dense"
    assert _failures(g.report) == [
        ("dtoh_sync", _line(use_module, "output read"), read),
        ("dtoh_sync", _line(use_module, "parameter read"), read),
    ]
    assert {f.data["pattern"] for f in g.report.failures} == {"item"}


def test_a_module_cast_after_the_move_keeps_its_values(device: torch.device) -> None:
    model = torch.nn.Linear(4, 2)
    expected = model.weight.detach().to(torch.bfloat16)
    model.to(device).to(torch.bfloat16)  # Module.to(dtype) swaps each parameter's .data
    assert model.weight.dtype == torch.bfloat16
    assert torch.equal(model.weight.detach().cpu(), expected)


def onload_and_offload(model: torch.nn.Module, device: torch.device) -> torch.Tensor:
    """What diffusers' group offloading does around each group's forward, without streams."""
    for param in model.parameters():
        param.data = param.data.to(device)  # onload
    out = model(torch.ones(1, 4, device=device))
    for param in model.parameters():
        param.data = param.data.to("cpu")  # offload
    return out


def test_a_parameter_handed_device_data_moves_whole_and_its_copies_are_syncs(device: torch.device) -> None:
    """Group offloading moves parameters by setting their data (`param.data = param.data.to(device)`), and its hooks
    find them again by identity: under the emulation the same Parameter object goes to the device and back, keeping
    its values and requires_grad, and the blocking copies either way are syncs at their lines, as on a GPU."""
    model = torch.nn.Linear(4, 2)
    weight, expected = model.weight, model.weight.detach().clone()
    with nosync_guard(backend="emulate") as g, g.step():
        out = onload_and_offload(model, device)
    assert out.device == device and model.weight is weight and weight.device.type == "cpu"
    assert isinstance(weight, torch.nn.Parameter) and weight.requires_grad and torch.equal(weight.detach(), expected)
    onload, offload = _line(onload_and_offload, "onload"), _line(onload_and_offload, "offload")
    assert sorted({(kind, line) for kind, line, _ in _failures(g.report)}) == [
        ("dtoh_sync", offload), ("htod_sync", onload)
    ]  # fmt: skip
    for param in model.parameters():  # clean twin: onloaded before the step, which then copies nothing
        param.data = param.data.to(device)
    assert weight.device == device and isinstance(weight, torch.nn.Parameter) and weight.requires_grad
    with nosync_guard(backend="emulate") as g, g.step():
        model(torch.ones(1, 4, device=device))
    assert g.report.failures == []


def prefetch(x: torch.Tensor, device: torch.device, wait: bool) -> torch.Tensor:
    """What diffusers' group offloading with use_stream=True does: prefetch on a side stream of the device's own
    module (`torch.get_device_module`), then wait for it, on the host or as a stream wait."""
    module = torch.get_device_module(device.type)
    side = module.Stream()
    with module.stream(side):
        y = x * 2
    if wait:
        side.synchronize()  # host waits
        module.Event().synchronize()  # host waits for an event
    else:
        module.current_stream().wait_stream(side)  # the device waits: no sync
    return y


@pytest.mark.parametrize("map_cuda", [True, False])  # torch.cuda.Event is the device's Event class under the mapping
def test_a_stream_of_the_device_module_synchronized_in_a_step_is_a_device_sync(
    device: torch.device, map_cuda: bool
) -> None:
    x = torch.ones(4, device=device)
    with nosync_guard(backend="emulate", map_cuda=map_cuda) as g, g.step():
        prefetch(x, device, wait=True)
    assert [(f.kind, f.lineno) for f in g.report.failures] == [
        ("device_sync", _line(prefetch, "host waits")), ("device_sync", _line(prefetch, "host waits for an event"))
    ]  # fmt: skip
    with nosync_guard(backend="emulate", map_cuda=map_cuda) as g, g.step():  # clean twin: a stream wait (PR #13502)
        prefetch(x, device, wait=False)
    assert g.report.failures == []


class SlottedParameter(torch.nn.Parameter):
    __slots__ = ("tag",)  # another layout than the emulated device's tensors: Python refuses to swap their classes


def test_a_tensor_that_cannot_move_whole_is_left_as_it_was(device: torch.device) -> None:
    param = SlottedParameter(torch.ones(3))
    with pytest.raises(TypeError):
        param.data = torch.zeros(3, device=device)
    assert type(param) is SlottedParameter and param.device.type == "cpu" and param.requires_grad
    assert torch.equal(param.detach() * 2, torch.full((3,), 2.0))  # still a working host tensor


def test_group_offloading_on_a_stream_needs_the_cuda_mapping_to_pin(device: torch.device) -> None:
    """diffusers pins host memory for the stream's prefetch; the emulated device pins only under the CUDA mapping
    (which this test process does not install): not applicable, with the reason and the option that makes it run."""
    from pytest_nosync.emulation import cuda_map
    from pytest_nosync.scenarios import SCENARIOS
    from pytest_nosync.suite.scenarios import NotApplicable, apply

    assert not cuda_map.active()
    pipe = build_pipeline(TARGETS["flux"], device, torch.float32)
    with pytest.raises(NotApplicable, match=r"pins host memory.*--nosync-map-cuda on"):
        apply(SCENARIOS["group_offload_leaf_stream"], pipe, "transformer", device)


def test_sequential_offloading_copies_each_weight_in_and_reads_none_back(device: torch.device) -> None:
    """accelerate's sequential offloading, run for real: each weight kept on `meta`, copied in from the host before
    its module's forward (an htod sync in accelerate, as on a GPU), put back on `meta` after (no sync), the parameter
    rebuilt by its own class each way (`type(param)(value, requires_grad=...)`)."""
    accelerate = pytest.importorskip("accelerate")
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1))
    accelerate.cpu_offload(model, execution_device=device)
    with nosync_guard(backend="emulate") as g, g.step():
        out = model(torch.ones(1, 4, device=device))
    assert out.device == device and {p.device.type for p in model.parameters()} == {"meta"}
    assert isinstance(model[0].weight, torch.nn.Parameter)
    places = {(f.kind, f.filename.replace(os.sep, "/").rsplit("/", 3)[-3:][0]) for f in g.report.failures}
    assert places == {("htod_sync", "accelerate")}, g.report.failures
    assert sum(f.count for f in g.report.failures) == 4  # two weights and two biases, each copied in once


def test_a_copy_to_the_meta_device_reads_no_value(device: torch.device) -> None:
    """accelerate's sequential offloading puts each weight back on `meta` after its forward: no value is read (on a
    GPU no copy runs), so no sync, where a copy to the host is one."""
    x = torch.ones(4, device=device)
    with nosync_guard(backend="emulate") as g, g.step():
        x.to("meta")
    assert g.report.failures == []
    with nosync_guard(backend="emulate") as g, g.step():
        x.to("cpu")
    assert [f.kind for f in g.report.failures] == ["dtoh_sync"]


# ---- transfers the emulation must judge like a GPU ------------------------------------------------
def test_non_blocking_copies(device: torch.device) -> None:
    x = torch.ones(4, device=device)
    host = torch.ones(4)
    with nosync_guard(backend="emulate") as g, g.step():
        x.to("cpu", non_blocking=True)  # torch pins the host copy: no wait
        host.to(device, non_blocking=True)  # pageable source: the copy still waits
    assert [(f.kind, f.data["pattern"]) for f in g.report.failures] == [("htod_sync", "non_blocking_pageable")]


# (what, expected (kind, pattern) or None for no sync); x: 8 values in [0, 1) on the device
OPS: list[tuple[str, Callable[[torch.Tensor], object], tuple[str, str] | None]] = [
    ("histc without a range", lambda x: torch.histc(x), ("dtoh_sync", "histc_range")),
    ("histc with a range", lambda x: torch.histc(x, bins=4, min=0, max=1), None),
    ("bincount", lambda x: torch.bincount((x * 4).long()), ("dtoh_sync", "data_dependent_shape")),
    ("allclose", lambda x: torch.allclose(x, x), ("dtoh_sync", "scalar_cast")),
    ("linalg.solve", lambda x: torch.linalg.solve(torch.diag(x[:3] + 1), x[:3]), ("dtoh_sync", "linalg_check")),
    ("linalg.solve_ex", lambda x: torch.linalg.solve_ex(torch.diag(x[:3] + 1), x[:3]), None),
    ("mask assignment", lambda x: x.clone().__setitem__(x > 0.5, 0.0), ("dtoh_sync", "mask_index")),
    ("host indices", lambda x: x[torch.arange(2)], ("htod_sync", "host_operand")),
    ("device indices into a host tensor", lambda x: torch.ones(8)[x.argsort()], ("dtoh_sync", "device_index")),
    ("f-string of a device scalar", lambda x: f"{x.sum():.2f}", ("dtoh_sync", "format")),
    ("masked_fill", lambda x: x.masked_fill(x > 0.5, 0.0), None),
    (
        "topk, sort, cumsum, searchsorted",
        lambda x: torch.searchsorted(x.sort().values, x.topk(2).values.cumsum(0)),
        None,
    ),
]


@pytest.mark.parametrize(("name", "op", "expected"), OPS, ids=[name for name, _, _ in OPS])
def test_what_each_op_would_do_on_a_gpu(device: torch.device, name: str, op: Callable, expected) -> None:
    x = torch.rand(8, generator=torch.Generator().manual_seed(0)).to(device)
    with nosync_guard(backend="emulate") as g, g.step():
        op(x)
    assert [(f.kind, f.data["pattern"]) for f in g.report.findings] == ([expected] if expected else [])


def test_host_and_device_tensors_do_not_mix(device: torch.device) -> None:
    x = torch.ones(4, device=device)
    with pytest.raises(RuntimeError, match="same device"):
        x + torch.ones(4)
    assert (x * torch.tensor(2.0)).device == device  # a 0-dim host tensor is a scalar operand, as in CUDA


def test_the_device_is_never_taken_for_an_accelerator(device: torch.device) -> None:
    assert device.type == "emu"
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        assert not accelerator.is_available()


def empty_the_device_cache_after_a_move(device: torch.device) -> None:
    """What diffusers main's offloading runs after moving a model (utils.torch_utils.empty_device_cache)."""
    device_mod = getattr(torch, device.type, torch.cuda)
    device_mod.empty_cache()


def test_the_device_module_empties_its_cache_as_an_accelerators_does(device: torch.device) -> None:
    """Model and sequential CPU offloading raised AttributeError on the emulated device for 197 of main's tester
    classes each (`torch.emu` had no `empty_cache`); the GPU checked them. Emptying a cache is no sync."""
    x = torch.ones(4, device=device)
    with nosync_guard(checks=("syncs",), backend="emulate") as guard:
        empty_the_device_cache_after_a_move(device)
        x = x * 2
    assert guard.report.findings == [], guard.report.findings


def test_a_saved_model_loads_with_its_non_persistent_buffers(device: torch.device, tmp_path) -> None:
    # transformers builds the model under `with torch.device("meta")` and reads that device back with
    # torch.tensor([]); taken for the CPU, it "initialized" the meta model, and the non-persistent buffers
    # it re-creates empty after loading were never filled (CLIP's position_ids held garbage).
    from transformers import CLIPTextConfig, CLIPTextModel

    config = CLIPTextConfig(
        hidden_size=32, intermediate_size=37, num_attention_heads=4, num_hidden_layers=2, vocab_size=1000
    )
    saved = CLIPTextModel(config)
    saved.save_pretrained(tmp_path)
    loaded = CLIPTextModel.from_pretrained(tmp_path)
    expected = dict(saved.named_buffers())
    assert {name for name, _ in loaded.named_buffers()} == set(expected)
    for name, buffer in loaded.named_buffers():
        assert torch.equal(buffer, expected[name]), name
    with torch.device("meta"):
        assert torch.tensor([]).device.type == "meta"


# ---- modes, placement, restored state -----------------------------------------------------------
def test_error_mode_raises_only_inside_steps(device: torch.device) -> None:
    x = torch.ones(4, device=device)
    with nosync_guard(backend="emulate", mode="error") as g:
        x.sum().item()  # outside a step: recorded, not raised
        with pytest.raises(RuntimeError, match="fail-fast"), g.step():
            x.max().item()
    assert [(f.phase, f.kind) for f in g.report.findings] == [("before_steps", "dtoh_sync"), ("step", "dtoh_sync")]


def test_a_pipeline_left_on_the_cpu_is_not_checked_and_fails(device: torch.device) -> None:
    pipe, kwargs = _tiny("flux")
    with nosync_guard(pipe, backend="emulate") as g:
        pipe(**kwargs(torch.device("cpu")))  # its steps ran where the emulation does not look
    assert g.report.passed is False and g.report.steps == 2
    assert any("the pipeline's transformer was on cpu" in r and "execution_device" in r for r in g.report.not_checked)


@pytest.mark.parametrize("mode", ["warn", "error"])
def test_every_global_is_restored_when_the_block_raises(device: torch.device, mode: str) -> None:
    pipe = _tiny("flux")[0].to(device)
    scheduler_step = type(pipe.scheduler).step
    synchronize = torch.cuda.synchronize
    x = torch.ones(4, device=device)
    with pytest.raises((ValueError, RuntimeError)), nosync_guard(pipe, backend="emulate", mode=mode) as g, g.step():
        x.sum().item()  # raises in error mode
        raise ValueError("the block fails")
    assert syncs.listener is None
    assert not torch._C._is_torch_function_mode_enabled()
    assert _get_current_dispatch_mode() is None
    assert torch.cuda.synchronize is synchronize
    assert type(pipe.scheduler).step is scheduler_step
    recorded = list(g.report.findings)
    x.sum().item()  # the device still works, and nobody listens any more
    # the sync; in warn mode the block's own raise too, an `error` finding at its line (error mode raised at the sync)
    kinds = ["dtoh_sync", "error"] if mode == "warn" else ["dtoh_sync"]
    assert g.report.findings == recorded and sorted(f.kind for f in recorded) == kinds


# ---- tiny real pipelines --------------------------------------------------------------------------
def _tiny(name: str):
    """The target's tiny pipeline, on the CPU (move it yourself), and its call kwargs for a device."""
    target = TARGETS[name]
    pipe = build_pipeline(target, torch.device("cpu"), torch.float32)

    def kwargs(device: torch.device) -> dict:
        return target.call_kwargs(pipe, CallContext(device, torch.float32, 2))

    return pipe, kwargs


def _guarded_call(pipe, make_kwargs: Callable[[], dict]):
    pipe(**make_kwargs())  # warm-up, unguarded, as the suite does
    with nosync_guard(pipe, backend="emulate") as g:
        out = pipe(**make_kwargs(), callback_on_step_end=g.callback_on_step_end)
    return g.report, out


def _image(out) -> torch.Tensor:
    return (out.images if hasattr(out, "images") else out.frames).cpu()


def test_flux_runs_on_the_emulated_device_and_its_steps_are_clean(device: torch.device) -> None:
    pipe, kwargs = _tiny("flux")
    cpu = pipe(**kwargs(torch.device("cpu")))
    report, out = _guarded_call(pipe.to(device), lambda: kwargs(device))
    assert report.steps == 2
    assert report.metrics["emulated_ops"] > 500
    assert report.failures == [], report.findings
    # Before the loop, the pipeline copies host-made ids and the scheduler's numpy sigmas to the device.
    assert {f.kind for f in report.findings} == {"htod_sync"}
    assert torch.allclose(_image(out), _image(cpu), atol=1e-5)  # same numbers as the plain CPU run


def test_wan_with_unipc_copies_host_values_to_the_device_every_step(device: torch.device) -> None:
    pipe, kwargs = _tiny("wan")
    cpu = pipe(**kwargs(torch.device("cpu")))
    report, out = _guarded_call(pipe.to(device), lambda: kwargs(device))
    assert report.steps == 2
    unipc = "scheduling_unipc_multistep.py"
    if diffusers_before("0.38"):
        # UniPC builds `rks` and `b` from Python lists in every step, and Wan's pipeline does not call
        # set_begin_index: step 0 looks its index up on the device (nonzero, then item).
        expected = {("htod_sync", unipc, 0), ("htod_sync", unipc, 1), ("dtoh_sync", unipc, 0)}
        patterns = {"tensor_from_data", "data_dependent_shape", "item"}
    else:  # UniPC keeps `self.sigmas` on the host and copies sigma_t/sigma_s0 in every step
        expected, patterns = {("htod_sync", unipc, 0), ("htod_sync", unipc, 1)}, {"to_device"}
    in_steps = {(f.kind, os.path.basename(f.filename), f.step) for f in report.failures}
    assert in_steps == expected, report.findings
    assert {f.data["pattern"] for f in report.failures} == patterns
    assert torch.allclose(_image(out), _image(cpu), atol=1e-5)
