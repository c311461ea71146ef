"""Tests written for a GPU, with one planted sync each (the line marked `# expect: <kind>`), or none (clean twins).

Nothing here knows about emulation: the tensors say "cuda". Under the emulate backend the plugin maps CUDA onto the
emulated device, and each test must get the same verdict, at the same line, as on a real GPU.
"""

import numpy as np
import pytest
import torch

DEVICE = "cuda"
pytestmark = [pytest.mark.gpu, pytest.mark.nosync]


@pytest.fixture
def x():
    return torch.linspace(-1.0, 2.5, 8, device=DEVICE)


# ---- device -> host reads ---------------------------------------------------------------------------------
def test_item(x):
    x.sum().item()  # expect: dtoh_sync


def test_float_of_a_device_scalar(x):
    float(x[0])  # expect: dtoh_sync


def test_int_of_argmax(x):
    int(x.argmax())  # expect: dtoh_sync


def test_if_on_a_device_value(x):
    if (x > 10).any():  # expect: dtoh_sync
        x = x * 2


def test_tolist(x):
    x.tolist()  # expect: dtoh_sync


def test_cpu_copy(x):
    x.cpu()  # expect: dtoh_sync


def test_nonzero(x):
    torch.nonzero(x > 0)  # expect: dtoh_sync


def test_mask_index(x):
    mask = x > 0
    x[mask]  # expect: dtoh_sync


def test_unique(x):
    torch.unique(x.round())  # expect: dtoh_sync


def test_repeat_interleave_with_tensor_repeats(x):
    repeats = torch.ones(8, dtype=torch.long, device=DEVICE)
    x.repeat_interleave(repeats)  # expect: dtoh_sync


def test_shape_from_a_device_value(x):
    n = (x.abs() > -1).sum()
    torch.zeros(n, device=DEVICE)  # expect: dtoh_sync


def test_torch_equal(x):
    torch.equal(x, x * 1)  # expect: dtoh_sync


# ---- host -> device blocking copies ------------------------------------------------------------------------
def test_tensor_from_a_python_list(x):
    x * torch.tensor([0.5], device=DEVICE)  # expect: htod_sync


def test_to_cuda_of_a_pageable_host_tensor(x):
    host = torch.arange(8, dtype=x.dtype)
    x + host.to(DEVICE)  # expect: htod_sync


def test_dot_cuda_of_a_host_tensor(x):
    host = torch.arange(8, dtype=x.dtype)
    x + host.cuda()  # expect: htod_sync


def test_as_tensor_of_numpy(x):
    torch.as_tensor(np.ones(4, dtype=np.float32), device=DEVICE)  # expect: htod_sync


# ---- explicit synchronization -------------------------------------------------------------------------------
def test_cuda_synchronize(x):
    y = x * 2
    torch.cuda.synchronize()  # expect: device_sync
    return y


def test_event_synchronize(x):
    done = torch.cuda.Event()
    y = x * 2
    done.record()
    done.synchronize()  # expect: device_sync
    return y


# ---- clean twins: no finding ----------------------------------------------------------------------------------
def test_clean_stack_of_device_scalars(x):
    torch.stack([x[0], x[1], x.sum()])


def test_clean_device_only_math(x):
    y = torch.where(x > 0, x, torch.zeros_like(x))
    torch.cat([y.masked_fill(y > 1, 1.0), x.sort().values]).mean()


def test_clean_repeat_interleave_with_output_size(x):
    repeats = torch.full((8,), 2, dtype=torch.long, device=DEVICE)
    x.repeat_interleave(repeats, output_size=16)


def test_clean_non_blocking_copy_from_pinned_memory(x):
    host = torch.arange(8, dtype=x.dtype).pin_memory()
    x + host.to(DEVICE, non_blocking=True)


def test_clean_generator_on_the_device(x):
    generator = torch.Generator(DEVICE).manual_seed(0)
    x + torch.randn(8, generator=generator, device=DEVICE)


def test_clean_model_moved_before_the_step():
    model = MODEL  # moved to the GPU once, at import
    model(torch.ones(2, 8, device=DEVICE))


def test_clean_memory_statistics(x):
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    (x * 2).sum()
    assert torch.cuda.max_memory_allocated() >= before


MODEL = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8)).cuda()
