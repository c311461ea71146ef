"""Regression cases 2-4 on real tiny pipelines: the fixed code passes, the pre-fix code is caught."""

from __future__ import annotations

import inspect

import pytest
import torch

from pytest_nosync.guard_options import GuardOptions
from pytest_nosync.suite import regressions
from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline
from tests.twins import hooks_prefix
from tests.twins.modulate_index_fix import ReuseIntIndexTensors


def _pipe(name: str, device: torch.device):
    target = TARGETS[name]
    pipe = build_pipeline(target, device, torch.float32)

    def call_kwargs(steps: int = 3) -> dict:
        return target.call_kwargs(pipe, CallContext(device, torch.float32, steps))

    return pipe, call_kwargs


def test_pipeline_without_set_begin_index_is_caught(backend, device, monkeypatch) -> None:
    pipe, call_kwargs = _pipe("flux", device)
    clean = regressions.pipeline_begin_index_case(pipe, call_kwargs(2), options=GuardOptions(backend=backend))
    assert clean.passed and clean.findings == []

    # The pre-fix pipeline: set_begin_index is never called, so step 0 looks its index up on the device.
    monkeypatch.setattr(pipe.scheduler, "set_begin_index", lambda begin_index=0: None)
    forgot = regressions.pipeline_begin_index_case(pipe, call_kwargs(2), options=GuardOptions(backend=backend))
    assert not forgot.passed
    wheres = {f.where.rsplit("/", 1)[-1].split(":")[0] for f in forgot.failures}
    assert wheres == {"scheduling_flow_match_euler_discrete.py"}, forgot.findings
    assert {f.step for f in forgot.failures} == {0}


def test_cache_context_walk_is_caught(backend, device, monkeypatch) -> None:
    from diffusers.hooks.hooks import HookRegistry

    if not hasattr(HookRegistry, "_get_child_registries"):
        pytest.skip("this diffusers predates cached hook registries (the case fails on it by itself)")
    pipe, call_kwargs = _pipe("flux", device)
    clean = regressions.cache_context_case(pipe, call_kwargs, 3, options=GuardOptions(backend=backend))
    assert clean.passed, clean.findings

    monkeypatch.setattr(HookRegistry, "_get_child_registries", hooks_prefix.walking_child_registries)
    walked = regressions.cache_context_case(pipe, call_kwargs, 3, options=GuardOptions(backend=backend))
    assert not walked.passed
    assert {(f.kind, f.where) for f in walked.failures} == {("host_overhead", hooks_prefix.walk_line())}
    assert {f.step for f in walked.failures} == {1, 2}


def test_cache_context_cost_on_hundreds_of_modules(monkeypatch) -> None:
    import diffusers
    from diffusers.hooks.hooks import HookRegistry

    if not hasattr(HookRegistry, "_get_child_registries"):
        pytest.skip("this diffusers predates cached hook registries")
    tiny = TARGETS["flux"].build_components()["transformer"]
    deep = diffusers.FluxTransformer2DModel(**{**dict(tiny.config), "num_layers": 8, "num_single_layers": 16})
    cached = regressions.cache_context_cost(deep, repeats=5)
    monkeypatch.setattr(HookRegistry, "_get_child_registries", hooks_prefix.walking_child_registries)
    walking = regressions.cache_context_cost(deep, repeats=5)
    assert cached["modules"] > 500
    assert cached["visits_per_enter_exit"] == 0
    assert walking["visits_per_enter_exit"] == 2 * cached["modules"]  # enter and exit each walk the whole tree


def _modulate_index_line() -> str:
    from diffusers.models.transformers import transformer_qwenimage

    lines, start = inspect.getsourcelines(transformer_qwenimage.QwenImageTransformer2DModel.forward)
    offset = next(i for i, line in enumerate(lines) if "modulate_index = torch.tensor(" in line)
    return f"{inspect.getsourcefile(transformer_qwenimage)}:{start + offset}"


def test_modulate_index_case(backend, device) -> None:
    pipe, call_kwargs = _pipe("qwenimage_edit", device)
    rebuilt = regressions.modulate_index_case(pipe, call_kwargs(2), options=GuardOptions(backend=backend))
    # diffusers up to 0.42.1 rebuilds the index from a Python list in every forward: the case fails there.
    assert not rebuilt.passed
    assert {(f.kind, f.where) for f in rebuilt.failures} == {("htod_sync", _modulate_index_line())}
    assert {f.step for f in rebuilt.failures} == {1}

    with ReuseIntIndexTensors() as reuse:
        cached = regressions.modulate_index_case(pipe, call_kwargs(2), options=GuardOptions(backend=backend))
    assert reuse.hits > 0
    assert cached.passed and cached.findings == [], cached.findings
