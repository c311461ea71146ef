"""Regression cases 2-4 on real tiny pipelines: the fixed code passes, the pre-fix code is caught."""

from __future__ import annotations

import inspect
import os

import pytest
import torch

from pytest_nosync.baseline import Baseline, Entry
from pytest_nosync.detection.guard_options import GuardOptions
from pytest_nosync.findings import SYNC_KINDS
from pytest_nosync.profiling.config import TraceConfig
from pytest_nosync.run_report import diffusers_version
from pytest_nosync.suite import regressions
from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline
from tests.releases import uncached_hook_walks
from tests.twins import hooks_prefix, pipeline_twins
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
    wheres = {os.path.basename(f.where.file) for f in forgot.failures}
    assert wheres == {"scheduling_flow_match_euler_discrete.py"}, forgot.findings
    assert {f.step for f in forgot.failures} == {0}


def test_a_case_is_profiled_only_when_it_fails_itself(backend, device, monkeypatch, tmp_path) -> None:
    # The guard also sees a sync the case is not about (the twin's .item() in the transformer): the case passes and
    # is not run again under the profiler. The pre-fix pipeline fails the case, and is.
    pipe, call_kwargs = _pipe("flux", device)
    pipeline_twins.install_sync(pipe.transformer)
    options = GuardOptions(backend=backend, trace=TraceConfig(mode="on-failure", directory=str(tmp_path)))
    clean = regressions.pipeline_begin_index_case(pipe, call_kwargs(2), options=options)
    assert clean.passed and clean.findings == [] and "trace" not in clean.artifacts
    assert not list(tmp_path.iterdir())

    monkeypatch.setattr(pipe.scheduler, "set_begin_index", lambda begin_index=0: None)
    forgot = regressions.pipeline_begin_index_case(pipe, lambda: call_kwargs(2), options=options)
    assert not forgot.passed and forgot.artifacts["trace"].startswith(str(tmp_path))
    assert forgot.metrics["trace_rerun_reproduced"] is True  # judged on the case's own findings in both runs
    assert {os.path.basename(f.where.file) for f in forgot.failures} == {"scheduling_flow_match_euler_discrete.py"}


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
    assert {(f.kind, str(f.where)) for f in walked.failures} == {("host_overhead", hooks_prefix.walk_line())}
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


def _rope_copy_lines() -> set[str]:
    """Where this diffusers' QwenImage rope copies its host frequencies to the device in every forward (0.37's
    `txt_freqs = self.pos_freqs.to(device)[...]`; later releases keep them per device): a sync of the release's own in
    the same forward, beside the modulate index."""
    from diffusers.models.transformers import transformer_qwenimage

    lines, _ = inspect.getsourcelines(transformer_qwenimage)
    file = inspect.getsourcefile(transformer_qwenimage)
    return {f"{file}:{i}" for i, line in enumerate(lines, 1) if "= self.pos_freqs.to(device)[" in line}


def _not_rope_copies(findings: list, rope: set[str]) -> set[tuple[str, str]]:
    """(kind, place) of the findings made elsewhere than at a rope copy, by place or by a frame of the stack. Under the
    fix twin's torch-function mode a copy is blamed on the mode's pass-through line, and on CUDA its kind is read from
    that line's expression (`func(*args, **kwargs)` names no pattern: the default, dtoh), so the kind is not asked."""
    return {
        (f.kind, str(f.where))
        for f in findings
        if not (f.kind in SYNC_KINDS and rope & {str(w) for w in (f.where, *(frame.where for frame in f.stack))})
    }


def test_modulate_index_case(backend, device) -> None:
    pipe, call_kwargs = _pipe("qwenimage_edit", device)
    rope = _rope_copy_lines()
    rebuilt = regressions.modulate_index_case(pipe, call_kwargs(2), options=GuardOptions(backend=backend))
    # diffusers up to 0.42.1 rebuilds the index from a Python list in every forward: the case fails there.
    assert not rebuilt.passed
    assert _not_rope_copies(rebuilt.failures, rope) == {("htod_sync", _modulate_index_line())}
    assert {f.step for f in rebuilt.failures} == {1}

    with ReuseIntIndexTensors() as reuse:
        cached = regressions.modulate_index_case(pipe, call_kwargs(2), options=GuardOptions(backend=backend))
    assert reuse.hits > 0
    assert _not_rope_copies(cached.findings, rope) == set(), [
        (f.kind, str(f.where), f.detail, [f"{frame.where} {frame.function}" for frame in f.stack])
        for f in cached.findings
    ]
    assert cached.passed or rope


# ---- the error kind: what the code under test raises is a finding, never a skip ---------------------------------
def _fbc_case(pipe, call_kwargs, backend: str, known=None):
    import diffusers

    options = GuardOptions(backend=backend, known=known, allow=uncached_hook_walks())
    config = diffusers.FirstBlockCacheConfig(threshold=0.05)
    return regressions.cache_context_case(pipe, call_kwargs, 3, config, options, check="regression:cache_context")


def test_a_cache_technique_that_raises_fails_with_the_exception(backend, device, monkeypatch) -> None:
    from diffusers.hooks import first_block_cache

    from tests.twins import cache_errors

    pipe, call_kwargs = _pipe("flux", device)
    assert _fbc_case(pipe, call_kwargs, backend).passed  # the clean twin: FirstBlockCache runs on Flux
    monkeypatch.setattr(first_block_cache.FBCHeadBlockHook, "new_forward", cache_errors.raise_in_the_hook)
    report = _fbc_case(pipe, call_kwargs, backend)
    (finding,) = report.failures
    assert (finding.kind, str(finding.where)) == ("error", cache_errors.raise_line())
    assert finding.data["exception"] == "TypeError" and "planted" in finding.data["message"]
    assert finding.detail.startswith("TypeError: planted") and f"(diffusers {diffusers_version()})" in finding.detail
    assert not pipe.transformer.is_cache_enabled  # the case put the model back


def test_a_known_error_entry_accepts_it_and_says_when_it_is_fixed(backend, device, monkeypatch) -> None:
    from diffusers.hooks import first_block_cache

    from tests.twins import cache_errors

    entry = Entry(kind="error", exception="TypeError", message="^planted: the cache hook", reason="r", upstream="#1")
    known = Baseline([entry])
    matcher = known.matcher("t", "", "regression:cache_context", diffusers_version())
    pipe, call_kwargs = _pipe("flux", device)
    with monkeypatch.context() as patched:
        patched.setattr(first_block_cache.FBCHeadBlockHook, "new_forward", cache_errors.raise_in_the_hook)
        raised = _fbc_case(pipe, call_kwargs, backend, matcher)
    assert raised.passed and [f.status for f in raised.findings] == ["known"]
    assert known.review([raised], diffusers_version()) == []
    fixed = _fbc_case(pipe, call_kwargs, backend, matcher)  # upstream fixed it: the case no longer raises
    (review,) = known.review([fixed], diffusers_version())
    assert (review.status, review.fails) == ("fixed", True)


def test_the_cache_case_builds_its_own_state(backend, device, monkeypatch) -> None:
    """diffusers before its #14037 fix: a pipeline that ran without the cache raises on its first cached call. The
    case runs the pipeline first itself, so it fails the same way on a fresh pipeline as after other tests."""
    from diffusers.hooks.hooks import HookRegistry

    from tests.twins import cache_errors

    if not hasattr(HookRegistry, "invalidate_child_registries_cache"):
        pytest.skip("this diffusers predates cached hook registries (the #14037 bug cannot happen in it)")
    monkeypatch.setattr(HookRegistry, "invalidate_child_registries_cache", cache_errors.no_invalidation)
    verdicts = []
    for used_before in (False, True):
        pipe, call_kwargs = _pipe("flux", device)
        if used_before:
            with torch.no_grad():
                pipe(**call_kwargs(2))
        (finding,) = _fbc_case(pipe, call_kwargs, backend).failures
        verdicts.append((finding.kind, finding.data["exception"], finding.data["message"]))
    assert verdicts[0] == verdicts[1] == ("error", "ValueError", verdicts[0][2])
    assert "context is set" in verdicts[0][2]  # diffusers words it "No (cache) context is set"


def test_an_exception_inside_the_guarded_call_is_a_finding_in_its_step(backend, device, monkeypatch) -> None:
    pipe, call_kwargs = _pipe("flux", device)
    step = type(pipe.scheduler).step
    calls = []

    def failing_step(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("planted: the scheduler fails in the second step")  # twin: guarded error
        return step(self, *args, **kwargs)

    monkeypatch.setattr(type(pipe.scheduler), "step", failing_step)
    report = regressions.pipeline_begin_index_case(pipe, call_kwargs(2), GuardOptions(backend=backend))
    (finding,) = report.failures
    lines, start = inspect.getsourcelines(test_an_exception_inside_the_guarded_call_is_a_finding_in_its_step)
    line = start + next(i for i, text in enumerate(lines) if "# twin: guarded error" in text)
    assert (finding.kind, finding.step, str(finding.where)) == ("error", 1, f"{__file__}:{line}")
