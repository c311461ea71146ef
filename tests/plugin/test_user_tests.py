"""A user's own tests, second round (issue 36): no green where a GPU would sync — a marked test that also takes the
`nosync` fixture is guarded whether or not it enters `nosync.guard()`, with one report when it does; when it does,
its blocks draw the steps (what the body did before them is set-up)."""

from __future__ import annotations

import json

import pytest

MARKED_WITH_FIXTURE = """
import pytest
import torch


@pytest.mark.nosync(checks=["syncs"])
def test_never_enters_the_fixture(nosync, nosync_device):
    x = torch.ones(4, device=nosync_device)
    for _ in range(2):
        x = x + x.sum().item()  # planted: never in a nosync.guard block


@pytest.mark.nosync(checks=["syncs"])
def test_enters_the_fixture(nosync, nosync_device):
    x = torch.ones(4, device=nosync_device)
    with nosync.guard() as g, g.step():
        x = x + x.sum().item()  # planted: in both guards


@pytest.mark.nosync(checks=["syncs"])
def test_clean_loop(nosync, nosync_device):
    x = torch.ones(4, device=nosync_device)
    with nosync.guard() as g, g.step():
        x = x * 0.5


@pytest.mark.nosync(checks=["syncs"])
def test_setup_before_the_block(nosync, nosync_device):
    x = torch.ones(4, device=nosync_device)
    scale = x.sum().item()  # before the block's steps: set-up, as a scheduler's set_timesteps is
    with nosync.guard() as g, g.step():
        x = x * scale


@pytest.mark.nosync(checks=["syncs"])
def test_options_to_both(nosync, nosync_device):
    with nosync.guard(checks=["host_overhead"]):
        pass
"""


def test_the_marker_guards_its_test_whether_or_not_the_fixture_guards_a_block(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_marked=MARKED_WITH_FIXTURE)
    result = pytester.runpytest("--nosync", "-p", "no:cacheprovider", "--nosync-report=r.json")
    result.assert_outcomes(passed=2, failed=3)
    written = (pytester.path / "test_marked.py").read_text().splitlines()
    never, enters = [i + 1 for i, line in enumerate(written) if "# planted" in line]
    result.stdout.fnmatch_lines([f"*dtoh_sync*test_marked.py:{never}*", f"*dtoh_sync*test_marked.py:{enters}*"])
    result.stdout.fnmatch_lines(["*the nosync marker guards this test's body already, with its checks and options: "
                                 "give them to the marker, not to nosync.guard() (checks)*"])  # fmt: skip
    tests = json.loads((pytester.path / "r.json").read_text())["tests"]
    ids = [t["test_id"].rsplit("::", 1)[-1] for t in tests]
    assert sorted(ids) == [
        "test_clean_loop",
        "test_enters_the_fixture",
        "test_never_enters_the_fixture",
        "test_options_to_both",
        "test_setup_before_the_block",
    ], ids  # fmt: skip  (one report each: the body guard's)


def test_a_run_leaves_no_empty_benchmarks_directory_where_it_runs(pytester: pytest.Pytester) -> None:
    """pytest-benchmark, which pytest-nosync installs, makes `.benchmarks/` in the working directory in every run; a
    run that saved nothing leaves none behind, with or without --nosync. One that saves a benchmark keeps it."""
    pytester.makepyfile(
        test_plain="def test_a():\n    pass\n", test_timed="def test_b(benchmark):\n    benchmark(len, [])\n"
    )
    for args in ((), ("--nosync",)):
        pytester.runpytest("-p", "no:cacheprovider", "-k", "test_a", *args).assert_outcomes(passed=1)
        assert not (pytester.path / ".benchmarks").exists(), args
    pytester.runpytest("-p", "no:cacheprovider", "-k", "test_b", "--benchmark-autosave").assert_outcomes(passed=1)
    assert any((pytester.path / ".benchmarks").rglob("*.json"))


FAILING_MARKED = """
import pytest
import torch


@pytest.mark.nosync(checks=["syncs"])
def test_loop(nosync_device):
    x = torch.ones(4, device=nosync_device)
    x = x + x.sum().item()  # planted
"""


def test_a_failing_marked_test_keeps_the_trace_its_setting_promises(pytester: pytest.Pytester) -> None:
    """on-failure (the default): a test's own block is not run twice, and its failure says so; always: its trace is
    kept, at the path its failure names."""
    pytester.makepyfile(test_traced=FAILING_MARKED)
    default = pytester.runpytest("--nosync", "-p", "no:cacheprovider")
    default.assert_outcomes(failed=1)
    default.stdout.fnmatch_lines(["*trace: none kept: a test's own guarded block is not run twice*"])
    kept = pytester.runpytest("--nosync", "-p", "no:cacheprovider", "--nosync-trace=always",
                              "--nosync-trace-dir=traces")  # fmt: skip
    kept.assert_outcomes(failed=1)
    kept.stdout.fnmatch_lines(["*trace: traces/test_traced.py__test_loop.json (open it in Perfetto)*"])
    assert (pytester.path / "traces" / "test_traced.py__test_loop.json").exists()
    assert "none kept" not in kept.stdout.str()


RAISING = """
import pytest
import torch

from tests.twins.loop_pipeline import build


@pytest.fixture
def pipe(nosync_device):
    return build(nosync_device)


@pytest.mark.nosync(checks=["syncs"])
def test_raises_in_its_loop(pipe, nosync_device):
    pipe(torch.randn(2, 8, device=nosync_device), num_inference_steps=3, fail=True)


@pytest.mark.nosync(checks=["syncs"])
def test_raises_before_its_loop(pipe, nosync_device):
    latents = torch.randn(2, 8).to(nosync_device)  # set-up: a copy before any step
    raise ValueError("before the loop")  # planted


@pytest.mark.nosync(checks=["syncs"])
def test_runs_its_loop(pipe, nosync_device):
    pipe(torch.randn(2, 8, device=nosync_device), num_inference_steps=3)
"""


def test_a_pipeline_that_raises_is_an_error_finding_at_its_raise_site_and_its_set_up_stays_set_up(
    pytester: pytest.Pytester,
) -> None:
    """docs/usage.md: a pipeline that raises is an `error` finding at its raise site. A raise inside the loop was
    reported as 'the loop ran 0 denoising step(s): the sync checks need 2', and one before the loop had its set-up
    copy counted as a step-0 failure."""
    pytester.makepyfile(test_raising=RAISING)
    result = pytester.runpytest("--nosync", "-p", "no:cacheprovider", "--nosync-report=r.json")
    result.assert_outcomes(passed=1, failed=2)
    tests = {t["test_id"].rsplit("::", 1)[-1]: t for t in json.loads((pytester.path / "r.json").read_text())["tests"]}
    planted = next(i + 1 for i, line in enumerate(RAISING.splitlines()[1:]) if "# planted" in line)
    for name, place in (("test_raises_in_its_loop", "loop_pipeline.py:"), ("test_raises_before_its_loop",
                                                                           f"test_raising.py:{planted}")):  # fmt: skip
        failing = [f for f in tests[name]["findings"] if f["status"] == "fail"]
        assert [(f["kind"], f["data"]["exception"]) for f in failing] == [("error", "ValueError")], failing
        assert place in failing[0]["where"] and not tests[name]["not_checked"], tests[name]
    setup = [f for f in tests["test_raises_before_its_loop"]["findings"] if f["kind"] == "htod_sync"]
    assert [(f["status"], f["phase"]) for f in setup] == [("outside_steps", "before_steps")]


SHARED_PIPELINE = """
import pytest

from tests.twins import loop_pipeline


@pytest.fixture(scope="module")
def pipe(nosync_device):  # built once for the module's tests: the usual way with a pipeline that is slow to build
    return loop_pipeline.build(nosync_device)


@pytest.fixture(scope="session")
def device_of_the_run(nosync_device):
    return nosync_device


@pytest.mark.nosync(checks=["syncs"])
def test_clean_loop(pipe, device_of_the_run):
    pipe(loop_pipeline.latents(device_of_the_run), num_inference_steps=3)


@pytest.mark.nosync(checks=["syncs"])
def test_a_read_in_the_loop(pipe, nosync_device):
    pipe(loop_pipeline.latents(nosync_device), num_inference_steps=3, read_early=True)
"""


def test_a_module_scoped_pipeline_fixture_takes_nosync_device(pytester: pytest.Pytester) -> None:
    """nosync_device is the run's backend device, the same for every test: a module- or session-scoped fixture takes
    it (function-scoped, it was a ScopeMismatch error in each test), and the checks judge the shared pipeline."""
    pytester.makepyfile(test_shared=SHARED_PIPELINE)
    checked = pytester.runpytest("--nosync", "-p", "no:cacheprovider")
    checked.assert_outcomes(passed=1, failed=1)
    checked.stdout.fnmatch_lines(["*dtoh_sync*loop_pipeline.py:*", "FAILED test_shared.py::test_a_read_in_the_loop*"])
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)  # off: plain tests


DTYPED = """
import pytest
import torch

from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline

FLUX = TARGETS["flux"]


@pytest.fixture(scope="module")
def pipe(nosync_device, nosync_dtype):
    return build_pipeline(FLUX, nosync_device, nosync_dtype)


@pytest.mark.nosync(checks=["syncs"])
def test_in_the_runs_dtype(pipe, nosync_device, nosync_dtype, request):
    asked = request.config.getoption("nosync_dtype") or "float32"  # the emulation's own default
    assert pipe.transformer.dtype == nosync_dtype == getattr(torch, asked)
    pipe(**FLUX.call_kwargs(pipe, CallContext(nosync_device, nosync_dtype, steps=2)))
"""


@pytest.mark.parametrize("dtype", ["", "bfloat16"])
def test_a_pipeline_fixture_follows_the_runs_dtype(pytester: pytest.Pytester, dtype: str) -> None:
    """A marked test's pipeline follows --nosync-dtype where its fixture asks for the run's dtype (`nosync_dtype`)."""
    pytester.makepyfile(test_dtyped=DTYPED)
    option = [f"--nosync-dtype={dtype}"] if dtype else []
    result = pytester.runpytest("--nosync", "-p", "no:cacheprovider", "--nosync-report=r.json", *option)
    result.assert_outcomes(passed=1)
    (report,) = json.loads((pytester.path / "r.json").read_text())["tests"]
    assert report["passed"] is True


def test_a_dtype_the_device_cannot_run_is_one_sentence_before_anything_runs(pytester: pytest.Pytester) -> None:
    # a device without half-precision convolutions, as the probe meets it (the probe's raise is torch's own words)
    pytester.makeconftest("""
import torch

convolve = torch.nn.functional.conv2d


def conv2d(x, *args, **kwargs):
    if x.dtype == torch.float16:
        raise RuntimeError('"slow_conv2d_cpu" not implemented for \\'Half\\'')
    return convolve(x, *args, **kwargs)


torch.nn.functional.conv2d = conv2d
""")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("--nosync", "--nosync-dtype=float16", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ['*--nosync-dtype float16: the * device cannot run it: "slow_conv2d_cpu" not implemented*']
    )
    assert "Traceback" not in result.stderr.str() and "passed" not in result.stdout.str()
