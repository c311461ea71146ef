"""The step metrics detectors on real torch: device ops by op and line, host ms outside the denoiser, peak device
memory of a step, device ms on a GPU; what runs between steps counts with the next step."""

from __future__ import annotations

import gc
import inspect
import os
import time

import pytest
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from pytest_nosync import nosync_guard
from pytest_nosync.step_cost import identify_sites
from tests.twins.collected_garbage import garbage_from_earlier_work


def _line(function, marker: str) -> str:
    lines, start = inspect.getsourcelines(function)
    return f"{start + next(i for i, t in enumerate(lines) if marker in t)}"


def loop(g, x: torch.Tensor, steps: int = 3, extra: int = 0) -> None:
    for _ in range(steps):
        with g.step():
            y = x * 2  # mul
            z = y + 1  # add
            for _ in range(extra):
                z = z * 1.0  # extra
            torch.ones(4) * 3  # host only: not a device op


def _ops(report, step: int) -> dict:
    return report.metrics["device_ops"][str(step)]


def test_each_steps_device_ops_are_counted_by_op_and_line(backend: str, x) -> None:
    with nosync_guard(checks=("device_ops",), backend=backend) as g:
        loop(g, x)
    assert g.report.passed
    for step in range(3):
        ops = _ops(g.report, step)
        assert ops["total"] == 2 and ops["ops"] == {"aten.add.Tensor": 1, "aten.mul.Tensor": 1}
        places = {s["where"].rsplit(":", 1)[1]: s for s in ops["sites"]}
        assert set(places) == {_line(loop, "# mul"), _line(loop, "# add")}
        assert places[_line(loop, "# mul")]["where"].endswith("test_step_metrics.py:" + _line(loop, "# mul"))
        assert "code" not in places[_line(loop, "# mul")]  # identified only to be saved or compared
        (mul,) = identify_sites({"steps": {"0": {"sites": [places[_line(loop, "# mul")]]}}})["steps"]["0"]["sites"]
        assert (mul["function"], mul["code"], mul["ops"]) == ("loop", "y = x * 2", {"aten.mul.Tensor": 1})
    assert _get_current_dispatch_mode() is None  # the counting mode is gone


def test_the_bug_twin_adds_ten_ops_at_its_line(backend: str, x) -> None:
    with nosync_guard(checks=("device_ops",), backend=backend) as g:
        loop(g, x, extra=10)
    ops = _ops(g.report, 1)
    assert ops["total"] == 12 and ops["ops"]["aten.mul.Tensor"] == 11
    (extra,) = [s for s in ops["sites"] if s["where"].endswith(":" + _line(loop, "# extra"))]
    assert extra["ops"] == {"aten.mul.Tensor": 10}


def between_steps(g, x: torch.Tensor) -> None:
    with g.step():
        x = x + 1
    x = x * 3  # between: the next step's
    with g.step():
        x = x + 1
    x = x - 1  # after the loop: no step's


def test_work_between_steps_counts_with_the_next_step(backend: str, x) -> None:
    with nosync_guard(checks=("device_ops",), backend=backend) as g:
        between_steps(g, x)
    assert _ops(g.report, 0)["ops"] == {"aten.add.Tensor": 1}
    assert _ops(g.report, 1)["ops"] == {"aten.add.Tensor": 1, "aten.mul.Tensor": 1}
    assert set(g.report.metrics["device_ops"]) == {"0", "1"}


def windowed_loop(g, x: torch.Tensor, modes: list) -> None:
    for step in range(4):
        with g.step():
            modes.append(_get_current_dispatch_mode() is not None)
            x = x + 1
            for _ in range(10 if step == 0 else 0):
                x = x * 1.0  # extra in step 0: outside the window
        x = x * 3  # between steps: the next step's
    modes.append(_get_current_dispatch_mode() is not None)
    x - 1  # after the window


def test_ops_steps_counts_its_window_only_and_counts_nothing_outside(backend: str, x) -> None:
    modes: list[bool] = []
    with nosync_guard(checks=("device_ops",), backend=backend, ops_steps=(1, 2)) as g:
        windowed_loop(g, x, modes)
    assert g.report.passed
    assert set(g.report.metrics["device_ops"]) == {"1", "2"}  # the extra ops of step 0 and step 3 are not counted
    for step in (1, 2):  # the same numbers as without the window: work between steps is the next step's
        assert _ops(g.report, step)["ops"] == {"aten.add.Tensor": 1, "aten.mul.Tensor": 1}
    assert modes == [False, True, True, False, False]  # off in step 0, in step 3 and after the loop
    with nosync_guard(checks=("device_ops",), backend=backend) as whole:
        windowed_loop(whole, x, modes)
    assert _ops(whole.report, 0)["ops"]["aten.mul.Tensor"] == 10
    for step in (1, 2):
        assert _ops(whole.report, step) == _ops(g.report, step)


def test_ops_steps_past_the_last_step_is_not_a_pass(backend: str, x) -> None:
    with nosync_guard(checks=("device_ops",), backend=backend, ops_steps=(1, 2)) as g, g.step():
        x * 2  # one step: the window never opens
    assert g.report.passed is False
    assert "counts from step 1" in g.report.not_checked[0]
    assert _get_current_dispatch_mode() is None


def test_the_counting_mode_is_removed_when_the_block_raises(backend: str, x) -> None:
    try:
        with nosync_guard(checks=("device_ops",), backend=backend) as g, g.step():
            x * 2
            raise KeyError("boom")
    except KeyError:
        pass
    assert _get_current_dispatch_mode() is None


def timed_loop(g, x: torch.Tensor) -> None:
    for _ in range(2):
        with g.step():
            with g.annotate("transformer_forward"):
                time.sleep(0.01)  # the denoiser's share
                x = x * 2
            time.sleep(0.02)  # outside the denoiser


def test_host_ms_outside_the_denoiser_leaves_out_its_forward(backend: str, x) -> None:
    with nosync_guard(checks=("step_metrics",), backend=backend) as g:
        timed_loop(g, x)
    for step in ("0", "1"):
        numbers = g.report.metrics["step_metrics"][step]
        assert numbers["host_ms"] >= 30.0  # both sleeps are in the step's window
        assert 20.0 <= numbers["host_ms_outside_denoiser"] <= numbers["host_ms"] - 10.0
        if backend == "cuda":
            assert numbers["device_ms"] > 0.0  # from CUDA events around the window
        else:
            assert numbers["device_ms"] is None  # no device clock under emulation


def memory_loop(g, device: torch.device, steps: int = 2, collect_in: int | None = None) -> None:
    latents = torch.zeros(1024, device=device)  # 4 KiB made by the call before its first step
    for step in range(steps):
        with g.step():
            latents = latents * 0.5  # 4 KiB more while the step replaces them
            if step == 0:
                scratch = torch.empty(4096, device=device)  # 16 KiB alive during step 0 only
                del scratch
            if step == collect_in:
                gc.collect()


def _peaks(report) -> dict[str, int]:
    return {k: v["peak_bytes"] for k, v in report.metrics["step_metrics"].items()}


def test_a_steps_peak_memory_counts_what_it_held_at_once(backend: str, device) -> None:
    with nosync_guard(checks=("step_metrics",), backend=backend) as g:
        memory_loop(g, device)
    # above what was in use when the first step began (the 4 KiB latents): step 0 holds the new latents and the
    # scratch once the old latents are gone, step 1 the new latents while the old ones are still alive
    assert _peaks(g.report) == {"0": 4096 * 4, "1": 4096}


def test_a_steps_peak_does_not_count_what_was_on_the_device_before_the_call(backend: str, device) -> None:
    # Another target's pipeline built earlier in the session made a saved run of one target fail against itself.
    with nosync_guard(checks=("step_metrics",), backend=backend) as g:
        memory_loop(g, device)
    alone = _peaks(g.report)
    other_pipeline = torch.empty(256 * 1024, device=device)  # 1 MiB in use by earlier work
    with nosync_guard(checks=("step_metrics",), backend=backend) as g:
        memory_loop(g, device)
    assert _peaks(g.report) == alone and other_pipeline.numel()


def test_garbage_the_collector_frees_does_not_lower_the_later_steps_peaks(backend: str, device) -> None:
    with nosync_guard(checks=("step_metrics",), backend=backend) as g:
        memory_loop(g, device, steps=3)
    clean = _peaks(g.report)
    stale = garbage_from_earlier_work(device)
    with nosync_guard(checks=("step_metrics",), backend=backend) as g:
        memory_loop(g, device, steps=3, collect_in=0)
    assert stale() is None  # freed in step 0
    peaks = _peaks(g.report)
    assert (peaks["1"], peaks["2"]) == (clean["1"], clean["2"]) and peaks["0"] <= clean["0"]


@pytest.mark.parametrize("check", ["step_metrics", "device_ops"])
def test_a_block_without_steps_is_not_a_pass(backend: str, x, check: str) -> None:
    with nosync_guard(checks=(check,), backend=backend) as g:
        x * 2  # no step marked, no pipeline to mark them
    assert g.report.passed is False
    assert "no denoising step was seen" in g.report.not_checked[0]
    with nosync_guard(checks=(check,), backend=backend, whole_block=True) as g:  # the marker's way: one step
        x * 2
    assert g.report.passed and set(g.report.metrics[check]) == {"0"}


def test_sites_are_portable_paths(backend: str, x) -> None:
    with nosync_guard(checks=("device_ops",), backend=backend) as g:
        loop(g, x, steps=1)
    for site in _ops(g.report, 0)["sites"]:
        assert not os.path.isabs(site["where"])


def _flex(latents: torch.Tensor) -> torch.Tensor:
    from torch.nn.attention.flex_attention import flex_attention

    q = latents.reshape(1, 1, -1, 8)
    return flex_attention(q, q, q).reshape(latents.shape)


def _flex_input(backend: str) -> torch.Tensor:
    """FlexAttention takes CUDA or CPU tensors, not the emulated device's: under the emulation it runs on the CPU,
    where its ops are not device ops, and the twin asserts that it ran and passed; on a GPU, that it was counted."""
    return torch.randn(32, 8, device="cuda" if backend == "cuda" else "cpu")


def test_flex_attention_under_the_counting_mode_runs_and_is_counted_as_one_op(backend: str) -> None:
    """Bug twin: eager FlexAttention could not run under the counting mode (its operator had no rule for one, and its
    wrapper's compile failed under it): on the H100 suite every target's check under the Flex backend raised, and
    then was `not checked`. Its operator is one op now, counted where it ran."""
    q = _flex_input(backend)
    expected = _flex(q)
    with nosync_guard(checks=("device_ops",), backend=backend) as g:
        for _ in range(2):
            with g.step():
                out = _flex(q)
    assert g.report.passed and not g.report.not_checked, g.report.not_checked
    assert torch.equal(out, expected)  # the same math as outside the mode
    assert _get_current_dispatch_mode() is None
    if backend == "cuda":
        assert _ops(g.report, 1)["ops"].get("flex_attention") == 1, _ops(g.report, 1)["ops"]


def test_the_switch_that_runs_flex_attention_uncompiled_is_restored_also_when_the_block_raises() -> None:
    from torch.nn.attention import flex_attention as public

    before = public._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG
    with pytest.raises(ZeroDivisionError), nosync_guard(checks=("device_ops",), backend="emulate") as g, g.step():
        assert public._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG is True
        raise ZeroDivisionError
    assert public._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG is before


def test_the_flex_rule_is_given_once_however_often_it_is_asked_for() -> None:
    """torch refuses a second rule for one mode: asking again after the cache was emptied (a test that took the rule
    away for a while) raised in every later counted call of the worker."""
    from pytest_nosync.detection.detectors import step_metrics

    for _ in range(2):
        step_metrics._flex_rule.cache_clear()
        assert step_metrics._flex_rule() is not None


@pytest.fixture
def flex_without_a_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch whose FlexAttention gives the counting mode no way to run it (no uncompiled switch): the fallback."""
    from torch._higher_order_ops.flex_attention import flex_attention

    from pytest_nosync.detection.detectors import step_metrics

    monkeypatch.setattr(step_metrics, "_FLEX_EAGER_SWITCH", "_no_such_switch")
    monkeypatch.delitem(flex_attention.python_key_table, step_metrics._Counting, raising=False)
    step_metrics._flex_rule.cache_clear()
    try:
        yield
    finally:
        step_metrics._flex_rule.cache_clear()  # the next counting mode registers the rule again


def test_where_flex_attention_cannot_run_under_the_counting_mode_it_is_not_checked_rather_than_a_pass(
    flex_without_a_rule: None,
) -> None:
    """The guard used to report such a block as passed, and the suite blamed the line that called attention."""
    q = torch.randn(32, 8)
    with pytest.raises(NotImplementedError), nosync_guard(checks=("device_ops",), backend="emulate") as g:
        for _ in range(2):
            with g.step():
                _flex(q)
    assert g.report.passed is False
    assert any("eager FlexAttention cannot run under one" in reason for reason in g.report.not_checked)
    assert _get_current_dispatch_mode() is None


def test_a_pipeline_calling_flex_attention_is_not_checked_and_blames_no_line(
    monkeypatch: pytest.MonkeyPatch, flex_without_a_rule: None
) -> None:
    from pytest_nosync.detection.guard_options import GuardOptions
    from pytest_nosync.suite.guarded_call import guarded_call
    from tests.twins import loop_pipeline

    pipe = loop_pipeline.build(torch.device("cpu"))
    monkeypatch.setattr(pipe.transformer, "forward", _flex)
    options = GuardOptions(checks=("device_ops",), backend="emulate", ops_steps=(1, None))
    report = guarded_call(pipe, lambda: {"latents": torch.randn(32, 8)}, options)
    assert not report.of_kind("error"), report.findings
    assert any("eager FlexAttention cannot run under one" in reason for reason in report.not_checked)
    assert report.passed is False


def test_flex_attention_runs_again_after_a_counted_call_stopped_it(flex_without_a_rule: None) -> None:
    """Its failed compile marked FlexAttention's wrapper as skipped for the process: the next FlexAttention call, with
    no counting at all, raised (LTX 2's and Wan's in the suite after Flux's)."""
    q = torch.randn(32, 8)
    with pytest.raises(NotImplementedError), nosync_guard(checks=("device_ops",), backend="emulate") as g, g.step():
        _flex(q)
    assert _flex(q).shape == q.shape
