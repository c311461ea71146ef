"""Blame the first frame outside torch and the plugin; read the expression that was running."""

from __future__ import annotations

import sys

import pytest
import torch

from pytest_nosync import attribution, hints, step_cost
from pytest_nosync.detection.detectors import cuda_sync
from pytest_nosync.findings import Frame

TORCH_FILE = torch.__file__.replace("__init__.py", "functional.py")


def test_first_frame_outside_torch_is_blamed() -> None:
    frames = [
        Frame(TORCH_FILE, 10, "norm"),
        Frame("/repo/pipeline.py", 42, "__call__"),
        Frame("/repo/run.py", 7, "main"),
    ]
    where, stack = attribution.attribute(frames)
    assert str(where) == "/repo/pipeline.py:42"
    assert stack[0].filename == TORCH_FILE  # the torch frame stays visible in the stack


def test_plugin_frames_are_plumbing_but_suite_frames_are_blamed() -> None:
    import pytest_nosync.suite.guarded_call  # noqa: F401 - the suite tells attribution which of its files are user code

    plugin_dir = attribution._PLUGIN_DIR
    frames = [
        Frame(plugin_dir + "detection/detectors/cuda_sync.py", 5, "_on_warning"),
        Frame(plugin_dir + "suite/test_targets.py", 9, "test_syncs"),
    ]
    where, stack = attribution.attribute(frames)
    assert str(where).endswith("suite/test_targets.py:9")
    assert all("detectors" not in f.filename for f in stack)


def _expression_here():
    frame = sys._getframe(1)
    return attribution.executing_expression(frame)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="column positions need Python 3.11")
def test_executing_expression_picks_the_running_call_of_a_line() -> None:
    values = [1, 2]
    first, second = len(values), _expression_here()
    assert second[0] == "_expression_here()"
    assert first == 2


def test_frames_past_the_short_stack_are_not_read() -> None:
    # A sync site is often 40+ frames deep: attribution stops at the frames a finding keeps.
    read: list[int] = []

    def stack():
        yield Frame(TORCH_FILE, 10, "norm")
        for depth in range(60):
            read.append(depth)
            yield Frame(f"/repo/layer{depth}.py", depth + 1, "forward")

    where, kept = attribution.attribute(stack())
    assert str(where) == "/repo/layer0.py:1"
    assert len(kept) == attribution.STACK_DEPTH + 1  # the torch frame, then the blamed one and those past it
    assert len(read) == attribution.STACK_DEPTH


def test_a_stack_carries_its_source_lines() -> None:
    for _ in range(2):  # built once per code position, then reused
        here = attribution.raw_frames(sys._getframe())[0]
        assert here.line == "here = attribution.raw_frames(sys._getframe())[0]"
        assert here.function == "test_a_stack_carries_its_source_lines"


def _other_expression_here():
    return attribution.executing_expression(sys._getframe(1))


@pytest.mark.skipif(sys.version_info < (3, 11), reason="column positions need Python 3.11")
def test_a_repeated_site_reads_its_own_expression_each_time() -> None:
    for _ in range(3):  # looked up once per instruction: two calls on one line must not share an answer
        first, second = _expression_here(), _other_expression_here()
        assert (first[0], second[0]) == ("_expression_here()", "_other_expression_here()")


@pytest.mark.skipif(sys.version_info < (3, 11), reason="column positions need Python 3.11")
def test_an_error_raised_inside_the_plugin_is_read_at_the_callers_expression() -> None:
    # Error mode reads the raising line's expression to name the sync. Raised inside a wrapper (the emulation's
    # `torch.tensor`, torch's own Python), the innermost frame says `raise`; the caller's line says what synced.
    with pytest.raises(ValueError) as raised:
        step_cost.parse_tolerances(["host_ms=fast"])
    expression, _ = attribution.executing_expression(*cuda_sync._innermost(raised.value.__traceback__))
    assert expression == 'step_cost.parse_tolerances(["host_ms=fast"])'


@pytest.mark.parametrize(
    ("expression", "opname", "kind", "pattern"),
    [
        ("sigmas[i].item()", "CALL", "dtoh_sync", "item"),
        ("float(t)", "CALL", "dtoh_sync", "scalar_cast"),
        ("x.tolist()", "CALL", "dtoh_sync", "tolist"),
        ("x.cpu()", "CALL", "dtoh_sync", "to_host"),
        ('x.to("cpu")', "CALL", "dtoh_sync", "to_host"),
        ("torch.nonzero(x > 0)", "CALL", "dtoh_sync", "data_dependent_shape"),
        ("x.repeat_interleave(r)", "CALL", "dtoh_sync", "repeat_interleave"),
        ("torch.tensor([0.5], device=dev)", "CALL", "htod_sync", "tensor_from_data"),
        ("self.sigmas[self.step_index].to(device)", "CALL", "htod_sync", "to_device"),
        ("torch.cuda.synchronize()", "CALL", "device_sync", "synchronize"),
        ("x[mask]", "BINARY_SUBSCR", "dtoh_sync", "mask_index"),
        ("(x > 10).any()", "POP_JUMP_IF_FALSE", "dtoh_sync", "condition"),
        ("torch.zeros(n, device=dev)", "CALL", "dtoh_sync", "shape_from_value"),
        ("mystery(x)", "CALL", "dtoh_sync", "unknown"),
    ],
)
def test_diagnose_patterns(expression: str, opname: str, kind: str, pattern: str) -> None:
    diagnosis = hints.diagnose(expression, opname)
    assert (diagnosis.kind, diagnosis.pattern) == (kind, pattern)
    assert diagnosis.hint


class _Scheduler:
    def __init__(self) -> None:
        self.alphas_cumprod = torch.linspace(1.0, 0.0, 4)

    @property
    def sigmas(self) -> torch.Tensor:
        raise AssertionError("a property is never run to tell what a subscript indexes")


def test_what_a_subscript_indexes_is_read_from_the_frame_without_running_code() -> None:
    scheduler = _Scheduler()
    frame = sys._getframe()
    table = attribution.subscripted(frame, "scheduler.alphas_cumprod[timestep]")
    assert table is scheduler.alphas_cumprod
    assert hints.indexed_on_host(table).pattern == "device_index"
    assert not isinstance(attribution.subscripted(frame, "scheduler.sigmas[i]"), torch.Tensor)
    assert attribution.subscripted(frame, "scheduler.step(x)[0]") is None  # a call: not read
    assert hints.indexed_on_host(attribution.subscripted(frame, "missing[0]")) is None
