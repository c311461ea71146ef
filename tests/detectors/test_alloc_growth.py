"""alloc_growth: cheap amounts from the device's counters while steps are clean, the growing line when asked,
and no verdict where nothing was allocated on the device."""

from __future__ import annotations

import inspect
import os

import pytest
import torch

from pytest_nosync import nosync_guard


def leaky_loop(g, device: torch.device, steps: int = 4) -> list[torch.Tensor]:
    kept = []
    x = torch.ones(256, device=device)
    for _ in range(steps):
        with g.step():
            y = x * 2
            kept.append(y + 1)  # leak
    return kept


def clean_loop(g, device: torch.device, steps: int = 4) -> None:
    x = torch.ones(256, device=device)
    for _ in range(steps):
        with g.step():
            x = x * 2 + 1


def _leak_line() -> str:
    lines, start = inspect.getsourcelines(leaky_loop)
    return f"{os.path.realpath(__file__)}:{start + next(i for i, t in enumerate(lines) if '# leak' in t)}"


def test_growth_is_seen_from_the_devices_counter_without_a_dispatch_mode(backend: str, device) -> None:
    with nosync_guard(checks=("alloc_growth",), backend=backend) as g:
        assert torch.utils._python_dispatch._get_current_dispatch_mode() is None  # the cheap path
        leaky_loop(g, device)
    (finding,) = g.report.failures
    assert (finding.kind, finding.where) == ("alloc_growth", "<unattributed>:0")
    assert "alloc_sites=True" in finding.detail and finding.data["bytes_per_step"] == [1024, 1024, 1024]


def test_with_sites_the_growing_line_is_named(backend: str, device) -> None:
    with nosync_guard(checks=("alloc_growth",), backend=backend, alloc_sites=True) as g:
        leaky_loop(g, device)
    (finding,) = g.report.failures
    assert (finding.kind, f"{os.path.realpath(finding.filename)}:{finding.lineno}") == ("alloc_growth", _leak_line())


@pytest.mark.parametrize("sites", [False, True])
def test_the_clean_twin_passes(backend: str, device, sites: bool) -> None:
    with nosync_guard(checks=("alloc_growth",), backend=backend, alloc_sites=sites) as g:
        clean_loop(g, device)
    assert g.report.passed and g.report.findings == []


def test_nothing_allocated_on_the_device_is_not_a_pass(backend: str) -> None:
    with nosync_guard(checks=("alloc_growth",), backend=backend) as g:
        clean_loop(g, torch.device("cpu"))  # host tensors: the device never sees them
    assert g.report.passed is False
    assert "nothing was allocated on the" in g.report.not_checked[0]
