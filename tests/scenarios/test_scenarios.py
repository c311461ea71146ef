"""Scenarios everywhere a pipeline is checked, each with its twins on real diffusers code under the CPU emulation: a
hook that syncs in every step (FirstBlockCache reads its residual's ratio with `.item()`), a clean one (TaylorSeer),
and one that does not apply (a denoiser that is no CacheMixin), in the built-in suite, the census of tester classes, a
marked test of the user's own pipeline, the library, and the baseline scoped to a scenario."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
import torch

from pytest_nosync import NotApplicable, apply_scenario, nosync_guard
from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline

FBC_LINE = "diffusers/hooks/first_block_cache.py:141"  # (absmean / prev_hidden_states_absmean).item()
SUITE = ("-m", "gpu", "--nosync", "--nosync-suite", "--nosync-targets", "flux", "-p", "no:cacheprovider")


@pytest.fixture(autouse=True, scope="module")
def _dynamo_loaded() -> None:
    """pytester unloads what a run imported; dynamo, imported a second time, registers with torch twice. (Traced with
    the emulation's CUDA mapping paused, where this module runs under a checking run.)"""
    from pytest_nosync.emulation import cuda_map

    with cuda_map.paused():
        torch._dynamo.explain(lambda x: x + 1)(torch.ones(2))
    torch._dynamo.reset()


def test_the_suite_checks_each_target_with_each_scenario_under_its_own_id(pytester: pytest.Pytester) -> None:
    # without the shipped baseline, which accepts the hook's sync as known on both backends
    result = pytester.runpytest(*SUITE, "--nosync-scenarios=plain,first_block_cache,taylorseer_cache", "-k",
                                "test_syncs", "-v", "--nosync-report=r.json", "--nosync-baseline=none")  # fmt: skip
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    for test_id, verdict in (("flux", "PASSED"), ("flux-first_block_cache", "FAILED"), ("flux-taylorseer_cache",
                                                                                      "PASSED")):  # fmt: skip
        assert f"test_targets.py::test_syncs[{test_id}] {verdict}" in out, out
    result.stdout.fnmatch_lines([f"*dtoh_sync*{FBC_LINE}*step 1 ×1*"])
    tests = json.loads((pytester.path / "r.json").read_text())["tests"]
    assert sorted(t["scenario"] for t in tests) == ["first_block_cache", "plain", "taylorseer_cache"]


TESTERS = """
import unittest

import torch

from tests.twins.flux_tester import TinyFluxPipelineFastTests
from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class LoopPipelineFastTests(unittest.TestCase):  # its denoiser is no CacheMixin: no cache hook applies
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2}
"""


def test_the_census_checks_each_tester_with_each_scenario_and_counts_what_does_not_apply(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_pipelines=TESTERS)
    scenarios = "--nosync-scenarios=first_block_cache,taylorseer_cache"
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider", "-v",
                                scenarios, "--nosync-report=r.json")  # fmt: skip
    result.assert_outcomes(passed=1, failed=1, skipped=2)
    out = result.stdout.str()
    assert "TinyFluxPipelineFastTests::nosync[syncs-first_block_cache] FAILED" in out, out
    assert "TinyFluxPipelineFastTests::nosync[syncs-taylorseer_cache] PASSED" in out
    result.stdout.fnmatch_lines(
        [
            f"*dtoh_sync*{FBC_LINE}*",
            "nosync: 2 of 4 checks reached a verdict; 1 of 2 pipeline classes fully checked; 2 not checkable here:",
            "  1 check(s) of 1 class(es) not checkable here: first_block_cache: Denoiser has no enable_cache (it is no "
            "CacheMixin) (e.g. *LoopPipelineFastTests::syncs-first_block_cache)",
        ]
    )
    doc = json.loads((pytester.path / "r.json").read_text())
    census = doc["census"]
    assert doc["environment"]["dtype"] == "float32"  # the census's, as its testers build their components
    flux = census["outcomes"]["test_pipelines.py::TinyFluxPipelineFastTests"]
    assert sorted(flux) == ["syncs-first_block_cache", "syncs-taylorseer_cache"]

    # the scenario census of that run: the table and its picture
    table = _cli("census", "scenarios", str(pytester.path / "r.json"), "--title", "T")
    assert table.returncode == 0, table.stderr
    assert "| pipeline | first_block_cache | taylorseer_cache |" in table.stdout
    assert "backend emulate (cpu), float32. Check `syncs`" in table.stdout  # the title line says the dtype
    assert "| FluxPipeline | 1 | 0 |" in table.stdout
    assert "| LoopPipeline | not checked: no CacheMixin | not checked: no CacheMixin |" in table.stdout
    assert "- `first_block_cache`: more in 1, as many in 0, fewer in 0" not in table.stdout  # no plain column here
    assert "| pipeline | first_block_cache | taylorseer_cache |" in table.stdout
    picture = pytester.path / "map.png"
    drawn = _cli("census", "plot", str(pytester.path / "r.json"), "--out", str(picture))
    assert drawn.returncode == 0 and "2 pipelines by 2 scenarios" in drawn.stdout, drawn.stderr
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_nosync", *args], capture_output=True, text=True)


USER_TESTS = """
import pytest
import torch

from pytest_nosync import execution_device
from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline

FLUX = TARGETS["flux"]


@pytest.fixture
def pipe(nosync_device):
    return build_pipeline(FLUX, nosync_device, torch.float32)


@pytest.fixture(scope="module")
def shared():
    return build_pipeline(FLUX, execution_device(), torch.float32)


@pytest.mark.nosync(checks=["syncs"], scenarios=["first_block_cache", "taylorseer_cache"])
def test_my_pipeline(pipe, nosync_device):
    kwargs = FLUX.call_kwargs(pipe, CallContext(nosync_device, torch.float32, steps=2))
    pipe(**kwargs)


@pytest.mark.nosync(checks=["syncs"], scenarios=["taylorseer_cache", "first_block_cache"])
def test_a_shared_pipeline(shared, nosync_device):
    shared(**FLUX.call_kwargs(shared, CallContext(nosync_device, torch.float32, steps=2)))
"""


def test_a_marked_test_checks_its_own_pipeline_with_each_scenario(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest("--nosync", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    assert "test_user.py::test_my_pipeline[first_block_cache] FAILED" in out, out
    assert "test_user.py::test_my_pipeline[taylorseer_cache] PASSED" in out
    assert "test_user.py::test_a_shared_pipeline[taylorseer_cache] PASSED" in out
    result.stdout.fnmatch_lines(
        [
            f"*dtoh_sync*{FBC_LINE}*",
            "*scenario first_block_cache: this pipeline already has a scenario on: build a new one per test "
            "(a function-scoped fixture)*",
        ]
    )
    plain = pytester.runpytest("-p", "no:cacheprovider", "-k", "my_pipeline", "-v")  # off means off: once, as written
    plain.assert_outcomes(passed=1)
    assert "test_user.py::test_my_pipeline PASSED" in plain.stdout.str()


FRESH_PIPELINES = """
import gc

import pytest
import torch
from diffusers import DiffusionPipeline

from pytest_nosync.plugin import SESSION


class Tiny(DiffusionPipeline):
    def __init__(self, transformer):
        super().__init__()
        self.register_modules(transformer=transformer)

    def __call__(self):
        return self.transformer(torch.ones(1, 2))


@pytest.fixture
def pipe():
    return Tiny(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("round", range(2))
@pytest.mark.nosync(checks=["syncs"], scenarios=["first_block_cache"])
def test_a_fresh_pipeline_each_time(pipe, round):
    pipe()


def test_the_freed_ones_are_no_longer_counted(request):
    gc.collect()
    assert len(request.config.stash[SESSION].scenario_pipelines) == 0
"""


def test_a_fresh_pipeline_is_never_taken_for_one_a_scenario_was_turned_on_for(pytester: pytest.Pytester) -> None:
    """The pipelines a scenario was turned on for are held weakly, so a fresh one that Python gives a freed one's
    memory is not refused as 'already has a scenario on': the session kept their ids, and a fresh pipeline at a freed
    one's address failed so (seen in one of eight tests of a process). Held weakly, the freed ones are gone."""
    pytester.makepyfile(test_user=FRESH_PIPELINES)
    # a process of its own: an in-process run's hook recorder keeps each test's call, and so its pipeline, alive
    result = pytester.runpytest_subprocess("--nosync", "-p", "no:cacheprovider", "-rs")
    # each one tried: the cache hook finds no transformer blocks in a Linear, and says so (counted, not failed)
    result.assert_outcomes(skipped=2, passed=1)
    result.stdout.fnmatch_lines(["*2*not checkable: *first_block_cache*"])


RAISING_SCENARIO_TESTS = """
import pytest
import torch

from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline

FLUX = TARGETS["flux"]


def broken_enable_cache(config):
    raise RuntimeError("the cache hook broke")


@pytest.fixture
def pipe(nosync_device):
    return build_pipeline(FLUX, nosync_device, torch.float32)


@pytest.fixture
def broken(pipe):
    pipe.transformer.enable_cache = broken_enable_cache
    return pipe


@pytest.mark.nosync(checks=["syncs"], scenarios=["taylorseer_cache"])
def test_broken_hook(broken, nosync_device):
    raise AssertionError("the body ran")


@pytest.mark.nosync(checks=["syncs"], scenarios=["taylorseer_cache"])
def test_working_hook(pipe, nosync_device):
    pipe(**FLUX.call_kwargs(pipe, CallContext(nosync_device, torch.float32, steps=2)))
"""


def test_a_scenario_that_raises_on_a_marked_tests_pipeline_is_its_error_and_the_body_does_not_run(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_user=RAISING_SCENARIO_TESTS)
    result = pytester.runpytest("--nosync", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "test_user.py::test_broken_hook[taylorseer_cache] FAILED" in out, out
    assert "test_user.py::test_working_hook[taylorseer_cache] PASSED" in out, out
    result.stdout.fnmatch_lines(["*error*test_user.py:11*", "*RuntimeError: the cache hook broke*"])
    assert "the body ran" not in out


OPTION_TESTS = """
import pytest
import torch

from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline

FLUX = TARGETS["flux"]


@pytest.fixture
def pipe(nosync_device):
    return build_pipeline(FLUX, nosync_device, torch.float32)


@pytest.mark.nosync(checks=["syncs"])
def test_from_a_fixture(pipe, nosync_device):
    pipe(**FLUX.call_kwargs(pipe, CallContext(nosync_device, torch.float32, steps=2)))


@pytest.mark.nosync(checks=["syncs"], scenarios=["taylorseer_cache"])
def test_names_its_own(pipe, nosync_device):
    pipe(**FLUX.call_kwargs(pipe, CallContext(nosync_device, torch.float32, steps=2)))


@pytest.mark.nosync(checks=["syncs"])
def test_without_a_pipeline(nosync_device):
    torch.ones(2, device=nosync_device) * 2
"""


def test_the_option_turns_its_scenarios_on_for_a_marked_tests_pipeline_and_a_markers_own_list_wins(
    pytester: pytest.Pytester,
) -> None:
    """--nosync-scenarios covers a marked test's pipeline from a fixture as a marker's scenarios= does (it was applied
    to nothing and the test passed); a marker's own list wins, said in the header; a marked test with no pipeline is
    counted as not checkable under the option's scenario, not failed."""
    pytester.makepyfile(test_user=OPTION_TESTS)
    result = pytester.runpytest("--nosync", "-p", "no:cacheprovider", "-v", "--nosync-scenarios=first_block_cache")
    result.assert_outcomes(failed=1, passed=1, skipped=1)
    out = result.stdout.str()
    assert "test_user.py::test_from_a_fixture[first_block_cache] FAILED" in out, out
    assert "test_user.py::test_names_its_own[taylorseer_cache] PASSED" in out
    assert "test_user.py::test_without_a_pipeline[first_block_cache] SKIPPED" in out
    result.stdout.fnmatch_lines([
        "nosync: --nosync-scenarios=first_block_cache applies to 2 marked test(s) of their own pipelines; 1 name "
        "their own (the marker's scenarios= wins)",
        f"*dtoh_sync*{FBC_LINE}*",
    ])  # fmt: skip
    plain = pytester.runpytest("--nosync", "-p", "no:cacheprovider", "-v", "-k", "from_a_fixture")  # no option: plain
    assert "test_user.py::test_from_a_fixture PASSED" in plain.stdout.str()


def test_the_library_turns_a_scenario_on_for_a_users_pipeline(backend: str, device: torch.device) -> None:
    flux = TARGETS["flux"]
    pipe = build_pipeline(flux, device, torch.float32)
    apply_scenario(pipe, "first_block_cache:threshold=0.3")
    kwargs = flux.call_kwargs(pipe, CallContext(device, torch.float32, steps=2))
    with nosync_guard(pipe, checks=("syncs",), backend=backend) as g, torch.no_grad():
        pipe(**kwargs, callback_on_step_end=g.callback_on_step_end)
    assert [(f.kind, f.where.file.endswith("first_block_cache.py"), f.step) for f in g.report.failures] == [
        ("dtoh_sync", True, 1)
    ]
    with pytest.raises(NotApplicable, match="no enable_cache"):
        from tests.twins import loop_pipeline

        apply_scenario(loop_pipeline.build(device), "first_block_cache", device=device)


@pytest.mark.parametrize("scenario", ["sequential_cpu_offload", "group_offload_leaf_stream"])
def test_offloading_to_an_accelerator_does_not_apply_on_the_cpu(scenario: str) -> None:
    """Bug twin: on the plain CPU, where the emulation runs its graph checks, accelerate and diffusers raise inside
    these two (an `error` finding at their line, read as an upstream bug). They do not apply there, with the reason."""
    cpu = torch.device("cpu")
    pipe = build_pipeline(TARGETS["flux"], cpu, torch.float32)
    with pytest.raises(NotApplicable, match=f"{scenario} cannot run on the CPU: it moves weights"):
        apply_scenario(pipe, scenario, device=cpu)


def test_an_attention_backend_scenario_leaves_later_pipelines_on_the_process_default() -> None:
    """diffusers' `set_attention_backend` also makes its backend the process-wide default (the bug twin: turned on
    alone, it stays). A run checks many pipelines in one process: prepared by the plugin, the scenario's own calls
    dispatch to its backend and every other pipeline's to the default it found (on the H100 a leaked cuDNN default made
    LTX2 raise "No available kernel" under later scenarios, and a leaked flex added its syncs to them)."""
    from diffusers.models.attention_dispatch import _AttentionBackendRegistry

    from pytest_nosync.scenarios import SCENARIOS, Param
    from pytest_nosync.suite.pipelines import prepare
    from pytest_nosync.suite.scenarios import apply, calls_context

    def active() -> str:
        return _AttentionBackendRegistry.get_active_backend()[0].value

    flux, cpu = TARGETS["flux"], torch.device("cpu")
    found = _AttentionBackendRegistry._active_backend
    default = active()
    # the built-in backends other than native need CUDA; PyTorch's math kernel is one diffusers runs on the CPU too
    scenario = dataclasses.replace(SCENARIOS["attention_backend_native"], name="attention_backend_math",
                                   params={"backend": Param("_native_math")})  # fmt: skip
    assert default != "_native_math"
    try:
        prepared = prepare(lambda: build_pipeline(flux, cpu, torch.float32), scenario, flux.denoiser, cpu)
        assert prepared.error is None and not prepared.not_applicable
        assert active() == default  # the clean twin: later pipelines dispatch as before
        with calls_context(scenario):
            assert active() == "_native_math"  # the scenario's own calls dispatch to its backend
        assert active() == default
        apply(scenario, build_pipeline(flux, cpu, torch.float32), flux.denoiser, cpu)
        assert active() == "_native_math"  # the bug twin: diffusers' call alone changes the process's default
    finally:  # whatever failed above, the rest of this process dispatches as it did
        _AttentionBackendRegistry.set_active_backend(found)


def test_a_baseline_entry_written_under_a_scenario_holds_for_that_scenario_only(pytester: pytest.Pytester) -> None:
    args = (*SUITE, "-k", "test_syncs")
    written = pytester.runpytest(*args, "--nosync-scenarios=first_block_cache", "--nosync-baseline=none",
                                 "--nosync-baseline-write=known.json")  # fmt: skip
    written.assert_outcomes(passed=1)
    entries = json.loads((pytester.path / "known.json").read_text())["entries"]
    fbc = [e for e in entries if e.get("file", "").endswith("first_block_cache.py") and e["target"] == "flux"]
    assert [e["scenario"] for e in fbc] == ["first_block_cache"], entries
    judged = pytester.runpytest(*args, "--nosync-scenarios=first_block_cache", "--nosync-baseline=known.json")
    judged.assert_outcomes(passed=1)
    assert judged.ret == pytest.ExitCode.OK
    plain = pytester.runpytest(*args, "--nosync-baseline=known.json")  # the scenario did not run: not stale
    plain.assert_outcomes(passed=1)
    assert plain.ret == pytest.ExitCode.OK and "STALE" not in plain.stdout.str()


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("--nosync-scenarios=first_blok_cache", "--nosync-scenarios: unknown scenario 'first_blok_cache'; known: all"),
        ("--nosync-scenarios=mag_cache:threshold=20", "--nosync-scenarios: mag_cache:threshold must be in [0.0, 10.0]"),
        ("--nosync-scenarios=attention_backend_flash", "--nosync-scenarios: attention_backend_flash cannot run with "
         "the emulate backend: flash-attn runs on CUDA only"),
    ],
)  # fmt: skip
def test_a_scenario_that_cannot_be_run_is_one_sentence_before_anything_runs(
    pytester: pytest.Pytester, given: str, said: str
) -> None:
    result = pytester.runpytest(*SUITE, given)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in result.stderr.lines if line.strip()]
    assert said in line, line


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ('["bogus_cache"]', "test_marked.py::test_mine: nosync marker: 'scenarios': unknown scenario 'bogus_cache'; "
         "known: all, plain, "),
        ('["first_block_cache:threshold=99"]', "test_marked.py::test_mine: nosync marker: 'scenarios': "
         "first_block_cache:threshold must be in [0.0, 10.0], got '99'"),
        ('"mag_cache:tresh=1"', "test_marked.py::test_mine: nosync marker: 'scenarios': scenario mag_cache has no "
         "parameter 'tresh'"),
    ],
    ids=["unknown", "out_of_range", "no_such_parameter"],
)  # fmt: skip
@pytest.mark.parametrize("checking", [True, False])
def test_a_bad_scenario_in_a_marker_is_one_sentence_before_anything_runs(
    pytester: pytest.Pytester, given: str, said: str, checking: bool
) -> None:
    """As every other bad marker value: with --nosync it was a collection error with a traceback (exit 2)."""
    pytester.makepyfile(
        test_marked=f"""
        import pytest

        @pytest.mark.nosync(scenarios={given})
        def test_mine():
            open("ran", "w").close()
        """
    )
    result = pytester.runpytest(*(["--nosync"] if checking else []), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (pytester.path / "ran").exists()
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "Error" not in result.stdout.str(), output
    (line,) = [line for line in result.stderr.lines if line.strip()]
    assert said in line, line


@pytest.mark.parametrize(("settings", "fill"), [("", 3), (":max_order=2", 5), (":disable_cache_before_step=3", 2)])
def test_growth_under_taylorseer_is_judged_once_its_factors_are_filled(
    backend: str, device: torch.device, monkeypatch: pytest.MonkeyPatch, settings: str, fill: int
) -> None:
    """TaylorSeer keeps one more Taylor factor per block output at each of its first updates: a bounded fill, judged
    as growth while the steps judged fell inside it (the bug twin: the scheduler's warm-up alone)."""
    from pytest_nosync.detection.guard_options import GuardOptions
    from pytest_nosync.suite import checks

    flux = TARGETS["flux"]
    pipe = build_pipeline(flux, device, torch.float32)
    apply_scenario(pipe, f"taylorseer_cache{settings}", device=device)
    assert checks.cache_fill_steps(pipe) == fill

    def call_kwargs(steps: int) -> dict:
        return flux.call_kwargs(pipe, CallContext(device, torch.float32, steps=steps))

    report = checks.run_check("alloc_growth", pipe, call_kwargs, GuardOptions(backend=backend))
    assert report.passed, report.findings
    assert (report.metrics["alloc_warmup_steps"], len(report.metrics["alloc_bytes_per_step"])) == (fill, fill + 2)
    if settings:
        return
    monkeypatch.setattr(checks, "cache_fill_steps", lambda pipe: 0)
    report = checks.run_check("alloc_growth", pipe, call_kwargs, GuardOptions(backend=backend))
    assert [f.kind for f in report.failures] == ["alloc_growth"]
    assert report.metrics["alloc_bytes_per_step"]["2"] > 0  # the factors of order 1, made at the second update


def test_a_pipeline_without_a_filling_cache_needs_no_more_steps(device: torch.device) -> None:
    from pytest_nosync.suite import checks

    pipe = build_pipeline(TARGETS["flux"], device, torch.float32)
    assert checks.cache_fill_steps(pipe) == 0
    apply_scenario(pipe, "first_block_cache", device=device)  # keeps one residual from its first step on
    assert checks.cache_fill_steps(pipe) == 0
