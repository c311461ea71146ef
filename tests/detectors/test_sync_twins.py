"""Every sync pattern is caught with the right kind at the twin's file:line; clean twins stay clean."""

from __future__ import annotations

import os

import pytest
import torch

from pytest_nosync import nosync_guard
from tests.twins.sync_patterns import BUG_TWINS, CLEAN_TWINS, Twin


def _norm(where: str) -> str:
    filename, _, line = where.rpartition(":")
    return f"{os.path.realpath(filename)}:{line}"


def _run(twin: Twin, backend: str, x: torch.Tensor, device: torch.device, **options):
    if twin.needs_cuda and backend != "cuda":
        pytest.skip(f"{twin.name} needs a real CUDA device")
    with nosync_guard(backend=backend, **options) as g, g.step():
        twin.fn(x, device)
    return g.report


@pytest.mark.parametrize("twin", BUG_TWINS, ids=lambda t: t.name)
def test_bug_twin_is_caught_at_its_line(twin: Twin, backend: str, x, device) -> None:
    report = _run(twin, backend, x, device)
    # A set: one line may hold two syncs (`(a == b).nonzero()[0].item()`), each its own finding.
    got = sorted({(f.kind, _norm(f.where), f.step) for f in report.failures})
    assert got == [(twin.kind, _norm(twin.expected_where), 0)], report.findings
    assert report.passed is False


@pytest.mark.parametrize("twin", CLEAN_TWINS, ids=lambda t: t.name)
def test_clean_twin_passes(twin: Twin, backend: str, x, device) -> None:
    report = _run(twin, backend, x, device)
    assert report.findings == []
    assert report.passed is True


@pytest.mark.parametrize("twin", [t for t in BUG_TWINS if t.name in ("item", "tensor_from_python_list", "mask_index")])
def test_error_mode_raises_on_the_offending_line(twin: Twin, backend: str, x, device) -> None:
    with pytest.raises(RuntimeError) as raised, nosync_guard(backend=backend, mode="error") as g, g.step():
        twin.fn(x, device)
    innermost = raised.traceback[-1]
    user = next(e for e in reversed(raised.traceback) if "sync_patterns" in str(e.path))
    assert _norm(f"{user.path}:{user.lineno + 1}") == _norm(twin.expected_where), innermost
    assert [(f.kind, _norm(f.where)) for f in g.report.failures] == [(twin.kind, _norm(twin.expected_where))]
