"""Graph verdicts shared by key (suite.shared_traces): two tester classes driving the same denoiser with the same
config and inputs trace once, the second taking the first's verdict under its own test id (a break included, at its
line); a changed field of the key (config, dtype, scenario, input shape, the denoiser's source) traces again."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_nosync.detection.detectors import dynamo, trace_inputs
from pytest_nosync.detection.guard_options import GuardOptions
from pytest_nosync.findings import Location
from pytest_nosync.profiling.config import TraceConfig
from pytest_nosync.scenarios import PLAIN, SCENARIOS
from pytest_nosync.suite import pipelines
from pytest_nosync.suite.shared_traces import SHARED_FROM, TraceStore
from tests.twins.loop_pipeline import LoopPipeline, Scheduler

DENOISER = """
import torch
from diffusers import ConfigMixin, ModelMixin
from diffusers.configuration_utils import register_to_config


class SharedDenoiser(ModelMixin, ConfigMixin):
    @register_to_config
    def __init__(self, width: int = 8, breaks: bool = False, scale: float = 1.0) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(width, width)

    def forward(self, latents):
        out = self.linear(latents) * self.config.scale
        if self.config.breaks:
            torch._dynamo.graph_break()  # the shared break
        return out
"""

TESTERS = """
import torch

from shared_denoiser import SharedDenoiser
from tests.twins.loop_pipeline import LoopPipeline, Scheduler


def components(breaks):
    torch.manual_seed(0)
    return {{"transformer": SharedDenoiser(breaks=breaks), "scheduler": Scheduler()}}


def inputs():
    torch.manual_seed(0)
    return {{"latents": torch.randn(2, 8), "num_inference_steps": 2}}


class TestFirst:
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        return components({breaks})

    def get_dummy_inputs(self):
        return inputs()


class TestSecond:  # another class, the same denoiser, config and inputs
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        return components({breaks})

    def get_dummy_inputs(self):
        return inputs()
"""


@pytest.fixture(autouse=True, scope="module")
def _dynamo_loaded() -> None:
    """Dynamo imported once before the in-process runs below (see tests/census/test_tester_classes.py)."""
    torch._dynamo.explain(lambda x: x + 1)(torch.ones(2))
    torch._dynamo.reset()


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the dynamo detector's compiles of a denoiser: one per check that traced."""
    compiles: list[int] = []
    compile_ = torch.compile

    def counting(*args: Any, **kwargs: Any) -> Any:
        compiles.append(1)
        return compile_(*args, **kwargs)

    monkeypatch.setattr(dynamo.torch, "compile", counting)
    return compiles


def _census(pytester: pytest.Pytester, breaks: bool, *options: str, default: bool = False) -> dict[str, dict[str, Any]]:
    """The census of the twins' two classes, with sharing on unless `default` (the run's own default, off)."""
    pytester.makepyfile(shared_denoiser=DENOISER, test_pipelines=TESTERS.format(breaks=breaks))
    pytester.syspathinsert()
    result = pytester.runpytest("-m", "gpu", "--nosync", "--nosync-checks=graph_breaks",
                                "--nosync-trace=never", "--nosync-report=report.json", "-p", "no:cacheprovider",
                                *([] if default else ["--nosync-share-traces=on"]), *options)  # fmt: skip
    result.assert_outcomes(passed=0 if breaks else 2, failed=2 if breaks else 0)
    doc = json.loads((pytester.path / "report.json").read_text())
    return {test["test_id"].split("::")[1]: test for test in doc["tests"]}


def test_the_second_class_takes_the_first_ones_verdict_without_tracing(
    pytester: pytest.Pytester, traced: list[int]
) -> None:
    tests = _census(pytester, False)
    assert len(traced) == 1  # the second class never entered dynamo
    assert tests["TestSecond"]["metrics"][SHARED_FROM] == "test_pipelines.py::TestFirst::nosync[graph_breaks]"
    assert SHARED_FROM not in tests["TestFirst"]["metrics"]
    assert tests["TestSecond"]["passed"] is True and tests["TestSecond"]["metrics"]["graph_count"] == 1


@pytest.mark.parametrize("options", [("--nosync-share-traces=off",), ()], ids=["said", "the default"])
def test_with_sharing_off_each_class_traces(
    pytester: pytest.Pytester, traced: list[int], options: tuple[str, ...]
) -> None:
    tests = _census(pytester, False, *options, default=True)
    assert len(traced) == 2
    assert not any(SHARED_FROM in test["metrics"] for test in tests.values())


def test_a_break_in_the_shared_denoiser_is_reported_for_both_test_ids_at_its_line(
    pytester: pytest.Pytester, traced: list[int]
) -> None:
    tests = _census(pytester, True)
    assert len(traced) == 1
    # pytester writes the module without its leading blank line
    (line,) = [n for n, text in enumerate(DENOISER.lstrip("\n").splitlines(), 1) if "# the shared break" in text]
    for name in ("TestFirst", "TestSecond"):
        (found,) = [f for f in tests[name]["findings"] if f["kind"] == "graph_break"]
        where = Location.parse(found["where"])
        assert (Path(where.file).name, where.line, found["status"]) == (
            "shared_denoiser.py", line, "fail",
        )  # fmt: skip
        assert tests[name]["test_id"] == f"test_pipelines.py::{name}::nosync[graph_breaks]"
    assert tests["TestSecond"]["metrics"][SHARED_FROM] == tests["TestFirst"]["test_id"]


# ---- each field of the key: a change traces again ------------------------------------------------------------------


def _load(path: Path) -> type:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.SharedDenoiser


def _check(store: TraceStore, denoiser_class: type, field: str | None, test_id: str) -> Any:
    """The graph check of a LoopPipeline on `denoiser_class`, the key's `field` changed (None: as the first)."""
    config = {"scale": 2.0} if field == "config" else {}
    dtype = torch.float64 if field == "dtype" else torch.float32
    rows = 3 if field == "input shape" else 2
    torch.manual_seed(0)
    pipe = LoopPipeline(denoiser_class(**config).to(dtype), Scheduler())
    scenario = SCENARIOS[PLAIN]
    if field == "scenario":  # the same feature with another parameter: what the key names, not what it does
        scenario = SCENARIOS["first_block_cache"].with_values({"threshold": "0.3"})

    def call_kwargs(pipe: Any) -> Any:
        return lambda steps: {"latents": torch.randn(rows, 8, dtype=dtype), "num_inference_steps": steps}

    options = GuardOptions(checks=("graph_breaks",), backend="emulate", trace=TraceConfig(mode="never"))
    report = pipelines.check(pipelines.Prepared(scenario, pipe), "graph_breaks", call_kwargs, options, steps=2,
                             test_id=test_id, share=store)  # fmt: skip
    assert report.passed is True, report.findings
    return report


@pytest.mark.parametrize(
    ("field", "seen_in_calls"),
    [("config", False), ("dtype", True), ("scenario", False), ("input shape", True), ("denoiser source", False)],
)
def test_a_changed_field_of_the_key_traces_again(
    field: str, seen_in_calls: bool, tmp_path: Path, traced: list[int]
) -> None:
    """`seen_in_calls`: the field is in the calls' digest, which a probe (the call, uncompiled) reads; the others are
    known before any call, and no probe is made."""
    source = tmp_path / f"shared_denoiser_{field.replace(' ', '_')}.py"
    source.write_text(DENOISER)
    denoiser_class = _load(source)
    store = TraceStore(tmp_path / "store")
    _check(store, denoiser_class, None, "first")
    assert SHARED_FROM in _check(store, denoiser_class, None, "same").metrics  # the clean twin: taken
    assert len(traced) == 1
    if field == "denoiser source":
        source.write_text(DENOISER + "\n# an edit\n")  # the class in memory is the same; its code is not
    report = _check(store, denoiser_class, field, "changed")
    assert SHARED_FROM not in report.metrics
    assert len(traced) == 2
    assert (store.counts.traced, store.counts.taken, store.counts.probes_missed) == (2, 1, int(seen_in_calls))


def test_every_kind_of_tensor_argument_is_digested_and_a_recording_failure_is_no_raise() -> None:
    """A 0-dim timestep, bfloat16 and bool tensors (SD's UNet gets a 0-dim timestep) are digested; what cannot be
    described or hashed leaves the calls unshareable, and the call goes on."""
    module = torch.nn.Linear(2, 2)
    recorder = trace_inputs.CallRecorder()
    recorder.call(module, 0, (torch.tensor(3), torch.ones(2, dtype=torch.bfloat16)), {"mask": torch.ones(2) > 0})
    assert (recorder.count, recorder.unshareable) == (1, "")
    other = trace_inputs.CallRecorder()
    other.call(module, 0, (torch.tensor(4), torch.ones(2, dtype=torch.bfloat16)), {"mask": torch.ones(2) > 0})
    assert (other.calls, other.values != recorder.values) == (recorder.calls, True)  # same metadata, other values
    failing = trace_inputs.CallRecorder()
    failing.call(module, 0, (torch.Generator(),), {})  # a C object: no state to describe
    assert "Generator" in failing.unshareable
    function = trace_inputs.CallRecorder()
    function.call(module, 0, (lambda x: x,), {})
    assert "function" in function.unshareable


@pytest.mark.parametrize(("seeds", "traces"), [((0, 0), 1), ((0, 1), 2)])
def test_a_break_is_shared_only_with_the_same_tensor_values(
    seeds: tuple[int, int], traces: int, tmp_path: Path, traced: list[int]
) -> None:
    """After a break the eager Python may branch on a value: a verdict with a finding is shared only where the
    denoiser saw the same numbers (the same seeds: taken; another seed for the latents: traced again)."""
    source = tmp_path / "shared_denoiser_breaks.py"
    source.write_text(DENOISER)
    denoiser_class = _load(source)
    store = TraceStore(tmp_path / "store")
    reports = []
    for n, seed in enumerate(seeds):
        torch.manual_seed(0)
        pipe = LoopPipeline(denoiser_class(breaks=True), Scheduler())

        def call_kwargs(pipe: Any, seed: int = seed) -> Any:
            def kwargs(steps: int) -> dict[str, Any]:  # every call the same latents, as a tester's seeded inputs
                latents = torch.randn(2, 8, generator=torch.Generator().manual_seed(seed))
                return {"latents": latents, "num_inference_steps": steps}

            return kwargs

        options = GuardOptions(checks=("graph_breaks",), backend="emulate", trace=TraceConfig(mode="never"))
        reports.append(pipelines.check(pipelines.Prepared(SCENARIOS[PLAIN], pipe), "graph_breaks", call_kwargs,
                                       options, steps=2, test_id=f"t{n}", share=store))  # fmt: skip
    assert len(traced) == traces
    assert [len(r.of_kind("graph_break")) for r in reports] == [1, 1]
    assert (SHARED_FROM in reports[1].metrics) == (traces == 1)
