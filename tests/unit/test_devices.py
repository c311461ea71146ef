"""The device counters every memory figure and the device-work check read, on each backend."""

from __future__ import annotations

import pytest
import torch

from pytest_nosync import devices

SIZE = 1 << 20


def test_the_counters_see_one_allocation(backend: str, device: torch.device) -> None:
    count, in_use = devices.allocations(backend), devices.allocated_bytes(backend)
    devices.reset_peak(backend)
    block = torch.empty(SIZE, dtype=torch.uint8, device=device)
    assert devices.allocations(backend) == count + 1
    assert devices.allocated_bytes(backend) == in_use + SIZE
    assert devices.peak_bytes(backend) == in_use + SIZE
    del block
    assert devices.allocated_bytes(backend) == in_use
    assert devices.peak_bytes(backend) == in_use + SIZE


@pytest.mark.gpu
def test_cuda_counters_are_torchs_own() -> None:
    # Read from the nested stats, not the flattened ones behind torch.cuda.memory_allocated(): the same numbers.
    if not devices.cuda_available():
        pytest.skip(devices.CUDA_ONLY)
    block = torch.empty(SIZE, dtype=torch.uint8, device="cuda")
    stats = torch.cuda.memory_stats()
    assert devices.allocations("cuda") == stats["allocation.all.allocated"]
    assert devices.allocated_bytes("cuda") == torch.cuda.memory_allocated() == stats["allocated_bytes.all.current"]
    assert devices.peak_bytes("cuda") == torch.cuda.max_memory_allocated() == stats["allocated_bytes.all.peak"]
    del block
