"""The device counters every memory figure and the device-work check read, on each backend."""

from __future__ import annotations

import pytest
import torch

from pytest_nosync.detection import devices

SIZE = 1 << 20


def test_the_counters_see_one_allocation(backend: str, device: torch.device) -> None:
    count, in_use = devices.allocations(backend), devices.allocated_bytes(backend)
    live, _ = devices.live_and_block_bytes(backend)
    devices.reset_peak(backend)
    block = torch.empty(SIZE, dtype=torch.uint8, device=device)
    assert devices.allocations(backend) == count + 1
    assert devices.allocated_bytes(backend) == in_use + SIZE
    assert devices.live_and_block_bytes(backend) == (live + SIZE, in_use + SIZE)
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
    live, blocks = stats["requested_bytes.all.current"], stats["allocated_bytes.all.current"]
    assert devices.live_and_block_bytes("cuda") == (live, blocks)
    assert devices.peak_bytes("cuda") == torch.cuda.max_memory_allocated() == stats["allocated_bytes.all.peak"]
    del block


@pytest.mark.gpu
def test_live_bytes_count_what_was_asked_where_a_larger_cached_block_serves_it() -> None:
    # The caching allocator serves a 5 MiB request with a free 5.5 MiB block whole (a remainder under 1 MiB is not
    # split off): its block figure grows by 5.5 MiB. Which block serves a request depends on the process's history.
    if not devices.cuda_available():
        pytest.skip(devices.CUDA_ONLY)
    with torch.cuda.use_mem_pool(torch.cuda.MemPool()):  # blocks of its own: what serves the request is this test's
        hole = torch.empty(11 * SIZE // 2, dtype=torch.uint8, device="cuda")
        wall = torch.empty(11 * SIZE // 2, dtype=torch.uint8, device="cuda")  # the hole stays a block of its own
        del hole
        live, blocks = devices.live_and_block_bytes("cuda")
        state = torch.empty(5 * SIZE, dtype=torch.uint8, device="cuda")
        now = devices.live_and_block_bytes("cuda")
        grew = now[0] - live, now[1] - blocks
        del state, wall
    assert grew == (5 * SIZE, 11 * SIZE // 2)
