"""Every sync pattern is caught with the right kind at the twin's file:line; clean twins stay clean."""

from __future__ import annotations

import os

import pytest
import torch

from pytest_nosync import nosync_guard
from pytest_nosync.findings import Location
from tests.twins.sync_patterns import BUG_TWINS, CLEAN_TWINS, Twin

# A test that checks what only a GPU shows: the CUDA copy alone (an emulated one could only skip).
CUDA_BACKEND_ONLY = pytest.mark.parametrize(
    "backend", [pytest.param("cuda", marks=pytest.mark.gpu, id="cuda")], indirect=True
)


def _norm(where: Location | str) -> str:
    where = Location.parse(where)
    return str(Location(os.path.realpath(where.file), where.line))


def _run(twin: Twin, backend: str, x: torch.Tensor, device: torch.device, **options):
    if twin.needs_cuda and backend != "cuda":
        pytest.skip(f"{twin.name} needs a real CUDA device")
    with nosync_guard(backend=backend, **options) as g, g.step():
        twin.fn(x, device)
    return g.report


@pytest.mark.parametrize("twin", BUG_TWINS, ids=lambda t: t.name)
def test_bug_twin_is_caught_at_its_line(twin: Twin, backend: str, x, device) -> None:
    report = _run(twin, backend, x, device)
    got = {(f.kind, _norm(f.where), f.step) for f in report.failures}  # one line may sync twice
    assert got == {(twin.kind, _norm(twin.expected_where), 0)}, report.findings
    assert report.passed is False


@pytest.mark.parametrize(
    ("name", "pattern"), [("host_table_device_index", "device_index"), ("mask_index", "mask_index")]
)
def test_an_index_that_syncs_is_told_by_the_tensor_it_indexes(name: str, pattern: str, backend: str, x, device) -> None:
    """A host table indexed by a device timestep (DDIM's `self.alphas_cumprod[timestep]`) is no boolean mask: the same
    opcode, told apart by what it indexes, each with its own remedy."""
    twin = next(t for t in BUG_TWINS if t.name == name)
    (finding,) = _run(twin, backend, x, device).failures
    assert finding.data["pattern"] == pattern, finding
    assert ("timestep" in finding.hint) is (pattern == "device_index"), finding.hint


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


@CUDA_BACKEND_ONLY  # the profiler sees CUDA runtime calls only on a GPU
@pytest.mark.parametrize("twin", BUG_TWINS, ids=lambda t: t.name)
def test_profiler_confirms_the_sync(twin: Twin, backend: str, x, device) -> None:
    report = _run(twin, backend, x, device, profile=True)
    got = {(f.kind, _norm(f.where)) for f in report.failures}
    assert got == {(twin.kind, _norm(twin.expected_where))}, report.findings
    assert all("profiler" in f.source for f in report.failures), report.failures


@CUDA_BACKEND_ONLY
def test_profiler_sees_a_sync_that_sync_debug_mode_cannot(backend: str, x, device) -> None:
    """A CuPy device→host copy syncs in C++ outside torch: only the profiler sees it."""
    cupy = pytest.importorskip("cupy")
    from tests.twins import extension_sync

    with nosync_guard(backend=backend, profile=True) as g, g.step():
        extension_sync.cupy_roundtrip(cupy)
    failing = g.report.failures
    assert failing, g.report.findings
    assert all(f.source == "profiler" for f in failing)
    assert {os.path.basename(f.where.file) for f in failing} == {"extension_sync.py"}
