"""The per-step cost gate, as a contributor uses it: save the suite's step metrics on main with pytest-benchmark,
then compare a branch. Bug twins, run for real on the flux target: a scheduler step that does ten extra elementwise
ops fails on device ops, naming the line; one that keeps the latents it replaces alive into the next step fails on
peak memory; one that sleeps between denoiser calls fails on host ms. The clean re-run passes. Runs that cannot be
compared stop with a sentence."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_nosync.detection import devices
from pytest_nosync.step_cost import default_rounds

# A plugin of the project (`-p step_twin`: a plugin's fixtures reach the suite's tests wherever pytest-nosync is
# installed, a conftest's only the tests below it): the scheduler's `step` of the suite's pipeline is wrapped for the
# test and restored after it.
TWIN_PLUGIN = """
import os
import time

import pytest

TWIN = os.environ.get("STEP_TWIN", "")


@pytest.fixture(autouse=True)
def twin(request):
    if not TWIN or "nosync_pipeline" not in request.fixturenames:
        yield
        return
    scheduler = request.getfixturevalue("nosync_pipeline").scheduler
    original = scheduler.step
    kept = []

    def step(model_output, timestep, sample, *args, **kwargs):
        if TWIN == "ops":
            for _ in range(10):
                model_output.add_(0.0)  # twin: ops
        elif TWIN == "memory":  # the latents the step replaces stay alive into the next step, as a loop variable would
            last = scheduler.step_index is not None and scheduler.step_index + 1 >= len(scheduler.timesteps)
            kept[:] = [] if last else [sample]  # twin: memory
        elif TWIN == "host":
            time.sleep(0.08)  # twin: host
        return original(model_output, timestep, sample, *args, **kwargs)

    scheduler.step = step
    yield
    del scheduler.step
"""
# Generous on host time so that a clean comparison cannot fail on a loaded machine (a steady step's 8 ms were read as
# 22 once, with both cores busy); the 80 ms twin is far above it.
TOLERANCE = "--nosync-metrics-tolerance=host_ms=300%+40"


def _line(marker: str) -> int:
    return next(i for i, line in enumerate(TWIN_PLUGIN.splitlines(), start=0) if f"# twin: {marker}" in line)


@pytest.fixture
def project(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    pytester.makepyfile(step_twin=TWIN_PLUGIN)
    pytester.syspathinsert()  # `-p step_twin` in this process
    # The sessions run in this process, whose heap holds the whole outer run: the collector's full passes over it
    # would land in the steps' host time. Frozen, the collector sees only what the inner session makes, as in a
    # process of its own.
    gc.collect()
    gc.freeze()
    try:
        yield pytester
    finally:
        gc.unfreeze()


def _suite(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, twin: str, *args: str) -> pytest.RunResult:
    monkeypatch.setenv("STEP_TWIN", twin)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # inherited from an outer -n run: benchmarks would be off
    return project.runpytest(
        "-m", "gpu", "--nosync", "--nosync-suite", "--nosync-targets=flux", "-k", "test_step_metrics",
        "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "step_twin", TOLERANCE, *args,
    )  # fmt: skip


def _saved(project: pytest.Pytester) -> Path:
    (path,) = (project.path / ".benchmarks").rglob("*_main.json")
    return path


def test_twins_fail_on_their_metric_and_the_clean_rerun_passes(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = _suite(project, monkeypatch, "", "--benchmark-save=main")
    assert saved.ret == pytest.ExitCode.OK, saved.stdout.str()[-3000:]
    numbers = json.loads(_saved(project).read_text())["benchmarks"][0]["extra_info"]["nosync"]
    assert numbers["target"] == "flux" and set(numbers["steps"]) == {"1", "2"}
    assert numbers["rounds"] == default_rounds(numbers["backend"])  # 3 timed calls on a GPU, 1 that also counts if not
    sites = [site for step in numbers["steps"].values() for site in step["sites"]]
    assert sites and all(site["code"] and site["function"] for site in sites)  # saved: identified for comparisons

    ops = _suite(project, monkeypatch, "ops", "--benchmark-compare=0001")
    assert ops.ret == pytest.ExitCode.TESTS_FAILED
    ops.stdout.fnmatch_lines(
        [
            f"*device_ops    step_twin.py:{_line('ops')}  — step 1 ×10, step 2 ×10*",
            "*aten.add_.Tensor +10 at this line (step 1: * → * device ops (+10): aten.add_.Tensor +10)*",
        ]
    )
    assert "peak_memory" not in ops.stdout.str() and "host_ms " not in ops.stdout.str()

    memory = _suite(project, monkeypatch, "memory", "--benchmark-compare=0001")
    assert memory.ret == pytest.ExitCode.TESTS_FAILED
    memory.stdout.fnmatch_lines(["*peak_memory   diffusers/pipelines/flux/pipeline_flux.py:*", "*peak device memory*"])
    assert "device_ops " not in memory.stdout.str()

    host = _suite(project, monkeypatch, "host", "--benchmark-compare=0001")
    assert host.ret == pytest.ExitCode.TESTS_FAILED
    host.stdout.fnmatch_lines(
        ["*host_ms       diffusers/pipelines/flux/pipeline_flux.py:*  — steady steps ×1*", "*tolerance 300%+40*"]
    )

    clean = _suite(project, monkeypatch, "", "--benchmark-compare=0001")
    assert clean.ret == pytest.ExitCode.OK, clean.stdout.str()[-3000:]
    clean.stdout.fnmatch_lines(["*flux * ops =, host *, peak =*"])


def test_a_saved_target_compares_equal_when_another_pipeline_was_built_first(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saved alone, compared in a run that built flux first (its syncs check): flux's weights on the device are not
    flux2_klein's peak memory. The same commit used to fail against itself this way."""
    klein = ["--nosync-targets=flux,flux2_klein", "-k", "test_step_metrics[flux2_klein]"]
    saved = _suite(project, monkeypatch, "", *klein, "--benchmark-save=main")
    assert saved.ret == pytest.ExitCode.OK
    both = ["--nosync-targets=flux,flux2_klein", "-k", "test_syncs[flux] or test_step_metrics[flux2_klein]"]
    compared = _suite(project, monkeypatch, "", *both, "--benchmark-compare")
    out = compared.stdout.str()
    assert compared.ret == pytest.ExitCode.OK, out[-3000:]
    compared.assert_outcomes(passed=2)
    compared.stdout.fnmatch_lines(["*flux2_klein * ops =, host *, peak =*"])


ALONE = "test_step_metrics"
AFTER_OTHERS = "test_syncs or test_alloc_growth or test_host_overhead or test_step_metrics"


@pytest.mark.parametrize(
    ("saved_with", "compared_with"), [(ALONE, AFTER_OTHERS), (AFTER_OTHERS, ALONE)], ids=["alone-first", "others-first"]
)
def test_the_readmes_save_and_compare_agree_whatever_ran_before(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, saved_with: str, compared_with: str
) -> None:
    """Saved with the step metrics alone and compared after the target's other checks, and the reverse: the figures
    are equal. Those checks call the pipeline with other step counts (2; 6 for alloc_growth), and UniPC keeps its last
    call's timesteps into the next call's first steps: wan's peak memory read +8 bytes one way, -8 the other."""
    wan = "--nosync-targets=wan"
    saved = _suite(project, monkeypatch, "", wan, "-k", saved_with, "--benchmark-autosave")
    assert saved.ret == pytest.ExitCode.OK, saved.stdout.str()[-3000:]
    compared = _suite(project, monkeypatch, "", wan, "-k", compared_with, "--benchmark-compare")
    assert compared.ret == pytest.ExitCode.OK, compared.stdout.str()[-3000:]
    compared.stdout.fnmatch_lines(["*wan * ops =, host *, peak =*"])


def _edited_copy(project: pytest.Pytester, name: str, edit) -> None:
    document = json.loads(_saved(project).read_text())
    edit(document["benchmarks"][0]["extra_info"]["nosync"])
    _saved(project).with_name(f"{name}.json").write_text(json.dumps(document))


def test_runs_that_cannot_be_compared_say_why(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _suite(project, monkeypatch, "", "--benchmark-save=main").ret == pytest.ExitCode.OK
    here = devices.resolve("auto")
    there = "emulate" if here == "cuda" else "cuda"
    _edited_copy(project, "0002_elsewhere", lambda numbers: numbers.update(backend=there, device="elsewhere"))
    _edited_copy(project, "0003_other", lambda numbers: numbers.update(target="wan"))

    other_backend = _suite(project, monkeypatch, "", "--benchmark-compare=0002")
    assert other_backend.ret == pytest.ExitCode.USAGE_ERROR
    assert f"measured on {there} (elsewhere), this run measures on {here}" in other_backend.stderr.str()

    missing = _suite(project, monkeypatch, "", "--benchmark-compare=0003")
    assert missing.ret == pytest.ExitCode.TESTS_FAILED
    missing.stdout.fnmatch_lines(["*the saved run has no step metrics of test_step_metrics[[]flux[]] (target flux)*"])

    unsaved = _suite(project, monkeypatch, "", "--benchmark-disable", "--benchmark-autosave")
    assert unsaved.ret == pytest.ExitCode.USAGE_ERROR
    assert "pytest-benchmark saves nothing with -n (xdist) or --benchmark-disable" in unsaved.stderr.str()


SCHEDULER = "schedulers/scheduling_flow_match_euler_discrete.py"
ANCHOR = "            prev_sample = sample + dt * model_output\n"
PLANTED = ANCHOR + "            for _ in range(10):\n                prev_sample = prev_sample * 1.0  # planted\n"


@pytest.mark.slow
def test_extra_ops_in_a_contributors_scheduler_fail_with_graph_helpers_at_work(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A regression in the code, not a fixture: ten extra ops in the Euler scheduler of a diffusers copy. The graph
    checks are selected, so helpers trace them while this process waits; on a GPU it counts the step metrics' ops
    then (plugin.count_ahead). Saved on the installed diffusers, compared on the copy: both targets fail on ops, naming
    the planted line, whoever counted them."""
    from tests.plugin.test_contributor_mode import _copy, _edit
    from tests.plugin.test_contributor_mode import _suite as contributor_suite

    line = _edit(_copy(tmp_path / "site") / SCHEDULER, ANCHOR, PLANTED) + 2
    targets = ["--nosync-targets=flux,flux2_klein", "-rA", TOLERANCE]
    # the saved run is the comparison's reference: its step metrics are all it needs (no graph check, no helper)
    saved = contributor_suite(pytester, monkeypatch, tmp_path / "empty", *targets, "-k", "test_step_metrics",
                              "--benchmark-save=main")  # fmt: skip
    assert saved.ret == pytest.ExitCode.OK, saved.stdout.str()[-3000:]
    args = [*targets, "-k", "test_graph_breaks or test_step_metrics", "--nosync-graph-workers=1"]
    planted = contributor_suite(pytester, monkeypatch, tmp_path / "site", *args, "--benchmark-compare=0001")
    out = planted.stdout.str()
    assert planted.ret == pytest.ExitCode.TESTS_FAILED, out[-3000:]
    planted.assert_outcomes(passed=2, failed=2)  # flux2_klein steps with the same scheduler
    planted.stdout.fnmatch_lines([f"*device_ops    diffusers/{SCHEDULER}:{line}  — step 1 ×10, step 2 ×10*"])
    if devices.resolve("auto") == "cuda":  # counted ahead, as a GPU run does, and the summary says so
        assert "step-metrics count(s) made while waiting for them" in out, out[-3000:]
