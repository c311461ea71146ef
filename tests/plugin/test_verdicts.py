"""Green means checked: a run that could not check what it claims fails or stops with one sentence.

Real pytest sessions (pytester): a named backend that is not there, checkpoints that cannot be found, a guarded
block in which nothing ran on the device, checks that did not run, fail-fast in a marker test, bad options.
"""

from __future__ import annotations

import pytest

from pytest_nosync.detection import devices
from tests.plugin.repository import run_here
from tests.twins import loop_pipeline

NO_GPU = pytest.mark.skipif(devices.cuda_available(), reason="this machine has CUDA")


def _one_sentence(result: pytest.RunResult) -> str:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text, text
    return text


@NO_GPU
def test_a_named_backend_that_is_not_there_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import pytest\n\n@pytest.mark.gpu\ndef test_gpu():\n    pass\n")
    result = pytester.runpytest("--nosync", "--nosync-backend", "cuda")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--nosync-backend cuda: no CUDA device is visible" in _one_sentence(result)


@NO_GPU
def test_auto_falls_back_to_emulation_and_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok():\n    pass\n")
    result = pytester.runpytest("--nosync")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["nosync: backend emulate*", "nosync: no GPU here, so syncs are emulated*"])


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        (
            "wan=/does/not/exist",
            "--nosync-checkpoint wan=/does/not/exist: /does/not/exist is neither a local directory",
        ),
        ("wan={empty}", "has no model_index.json"),
        ("nosuch=/x", "--nosync-checkpoint: unknown target 'nosuch'"),
    ],
)
def test_a_checkpoint_that_cannot_be_found_is_a_usage_error(
    pytester: pytest.Pytester, argument: str, message: str
) -> None:
    empty = pytester.mkdir("empty")
    pytester.makepyfile("def test_ok():\n    pass\n")
    result = pytester.runpytest("--nosync", f"--nosync-checkpoint={argument.format(empty=empty)}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in _one_sentence(result)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nosync", "--nosync-suite", "--nosync-targets=nosuch"], "--nosync-targets: unknown target 'nosuch'"),
        (["--nosync", "--nosync-device=nonsense"], "--nosync-device: must be a torch device"),
        (["--nosync", "--nosync-steps=1"], "--nosync-steps: must be a whole number >= 2"),
    ],
)
def test_bad_options_are_one_sentence(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makepyfile("def test_ok():\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in _one_sentence(result)


def test_a_usage_error_leaves_no_empty_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok():\n    pass\n")
    result = pytester.runpytest("--nosync", "--nosync-report=out/report.json", "--nosync-steps=1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (pytester.path / "out").exists()


@pytest.mark.parametrize("option", ["--nosync-suite", "--nosync-report=report.json", "--nosync-mode=error"])
def test_an_option_without_nosync_is_a_usage_error(pytester: pytest.Pytester, option: str) -> None:
    """It would change nothing: without --nosync nothing is checked, so a report or a mode asked for would be a
    silent no-op."""
    pytester.makepyfile("def test_ok():\n    pass\n")
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{option.split('=')[0]} was given without --nosync" in _one_sentence(result)
    assert not (pytester.path / "report.json").exists()


def test_an_option_value_pytest_took_for_the_rootdir_is_a_usage_error(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The run that lost this repository's baseline: `--nosync-report /tmp/old.json` with that file left over from an
    # earlier run made /tmp the rootdir, so pyproject's settings were never read and every known finding failed.
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\nnosync_steps = '2'\n")
    pytester.makepyfile("def test_ok():\n    pass\n")
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "old.json"
    elsewhere.write_text("{}")
    result = pytester.runpytest("--nosync", "--nosync-report", str(elsewhere))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = _one_sentence(result)
    assert f"--nosync-report {elsewhere}: pytest took the existing path" in text
    assert f"write --nosync-report={elsewhere}" in text
    # the same report written with `=`, or a path inside the project, leaves the rootdir alone
    pytester.runpytest("--nosync", f"--nosync-report={elsewhere}").assert_outcomes(passed=1)
    (pytester.path / "inside.json").write_text("{}")
    pytester.runpytest("--nosync", "--nosync-report", "inside.json").assert_outcomes(passed=1)


HOST_ONLY = """
import pytest
import torch

@pytest.mark.gpu
@pytest.mark.nosync
def test_forgot_the_device():
    x = torch.ones(4)  # a CPU tensor: under emulation nothing runs on the device
    x.sum().item()

@pytest.mark.gpu
@pytest.mark.nosync(device_work=False)
def test_knowingly_host_only():
    torch.ones(4).sum().item()

@pytest.mark.gpu
@pytest.mark.nosync
def test_on_the_backends_device(nosync_device):
    x = torch.ones(4, device=nosync_device)
    x.sum().item()  # a real sync

@pytest.mark.gpu
@pytest.mark.nosync
def test_clean_on_the_backends_device(nosync_device):
    x = torch.ones(4, device=nosync_device)
    (x * 2).sum()
"""


@NO_GPU
def test_a_block_in_which_nothing_ran_on_the_device_fails_with_a_sentence(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(HOST_ONLY)
    result = pytester.runpytest("--nosync", "-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*not checked*",
            "*no op ran on the emulated device in this guarded block, so no sync could happen or be seen: create the "
            "model and tensors on the device of the `nosync_device` fixture*",
        ]
    )
    verdicts = {
        line.split()[1].split("::")[-1]: line.split()[0]
        for line in result.stdout.lines
        if line.startswith(("ok ", "FAIL "))
    }
    assert verdicts == {
        "test_forgot_the_device": "FAIL",
        "test_knowingly_host_only": "ok",
        "test_on_the_backends_device": "FAIL",
        "test_clean_on_the_backends_device": "ok",
    }


SKIPPED = """
import pytest

@pytest.mark.gpu
def test_skipped_check():
    pytest.skip("the model is too new for this diffusers")

@pytest.mark.gpu
@pytest.mark.parametrize("i", range(2))
def test_another(i):
    pytest.skip("no second GPU here")

def test_plain():
    pytest.skip("not a check")
"""


def test_checks_that_did_not_run_are_counted_without_rs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SKIPPED)
    result = pytester.runpytest("--nosync")
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines(
        [
            "nosync: 3 check(s) did not run:",
            "  2 × no second GPU here (e.g. *test_another*)",
            "  1 × the model is too new for this diffusers (e.g. *test_skipped_check)",
        ]
    )
    assert "not a check" not in result.stdout.str()


@NO_GPU
def test_without_nosync_the_gpu_tests_that_did_not_run_are_counted_too(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SKIPPED)
    result = pytester.runpytest()
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines(["nosync: 3 check(s) did not run: needs a CUDA device: run `pytest -m gpu *"])


@NO_GPU
def test_this_repositorys_cuda_only_tests_are_one_line_without_a_gpu() -> None:
    """`pytest -m gpu --nosync` on a CPU skipped each CUDA-only copy of the plugin's tests with advice to run
    `pytest -m gpu --nosync`: the count and the reason are one line, once."""
    files = ["tests/detectors/test_sync_twins.py", "tests/profiling/test_gpu_traces.py", "tests/unit/test_devices.py"]
    done = run_here("-m", "gpu", "--nosync", *files)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if "did not run" in line]
    assert len(lines) == 1 and lines[0].startswith("nosync: "), done.stdout
    assert " check(s) did not run: CUDA-only, and no CUDA device is visible here (e.g. tests/" in lines[0]
    assert "pytest -m gpu --nosync" not in done.stdout


FAIL_FAST = """
import pytest

@pytest.mark.gpu
@pytest.mark.nosync(mode="error")
def test_fails_fast(nosync_device):
    import torch
    x = torch.ones(4, device=nosync_device)
    x.sum().item()  # line 8: the raise lands here
    raise AssertionError("never reached: error mode stops at the sync")
"""


def test_error_mode_in_a_marker_test_raises_on_the_offending_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FAIL_FAST)
    result = pytester.runpytest("--nosync")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "never reached" not in out
    result.stdout.fnmatch_lines(
        [
            ">       x.sum().item()  # line 8*",
            "*_offending_line.py:8: *",
            "E * RuntimeError: pytest-nosync: a synchronizing operation on the emulated device inside a guarded step*",
        ]
    )


MARKED_PIPELINE = """
import pytest
import torch

from tests.twins import loop_pipeline


@pytest.fixture
def pipe():
    return loop_pipeline.build(torch.device("cpu"))


@pytest.mark.gpu
@pytest.mark.nosync(checks=["syncs"])
def test_setup_in_the_body(pipe, nosync_device):
    pipe.transformer.to(nosync_device)  # host-to-device copies: setup before the pipeline's steps
    pipe(loop_pipeline.latents(nosync_device), num_inference_steps=2)


@pytest.mark.gpu
@pytest.mark.nosync(checks=["syncs"])
def test_a_read_in_the_loop(pipe, nosync_device):
    pipe.transformer.to(nosync_device)
    pipe(loop_pipeline.latents(nosync_device), num_inference_steps=2, read_early=True)
"""


def test_a_marked_body_counts_the_pipelines_steps_not_its_setup(pytester: pytest.Pytester) -> None:
    """The README's first example failed as written: moving the pipeline to the device in the marked body was counted
    as syncs of the step under test. With the pipeline among the test's arguments, its steps are the body's."""
    pytester.makepyfile(MARKED_PIPELINE)
    result = pytester.runpytest("--nosync", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    line = loop_pipeline.line_of("read before the denoiser")
    result.stdout.fnmatch_lines([f"*dtoh_sync*loop_pipeline.py:{line}*step 0 ×1, step 1 ×1*"])
    assert "FAIL *test_setup_in_the_body*" not in result.stdout.str()


def test_the_checks_that_did_not_run_are_said_the_same_whatever_order_they_ended_in() -> None:
    """Reasons of one count came in the order xdist's workers finished them, each example the first to arrive: two
    H200 runs of one census said five of these lines in another order."""
    from types import SimpleNamespace

    from pytest_nosync.plugin import NotRun

    skips = [(f"t.py::test_{name}[{i}]", reason) for name, reason in (("a", "no GPU"), ("b", "no flash-attn"))
             for i in range(2)] + [("t.py::test_c", "one alone")]  # fmt: skip
    said = []
    for order in (skips, skips[::-1]):
        not_run, lines = NotRun(), []
        for nodeid, reason in order:
            not_run.pytest_runtest_logreport(SimpleNamespace(skipped=True, keywords={"gpu": 1}, nodeid=nodeid,
                                                             longrepr=("t.py", 1, f"Skipped: {reason}")))  # fmt: skip
        reporter = SimpleNamespace(write_line=lambda line, lines=lines, **_: lines.append(line))
        not_run.pytest_terminal_summary(reporter, _Config())
        said.append(lines)
    assert (
        said[0]
        == said[1]
        == [
            "nosync: 5 check(s) did not run:",
            "  2 × no GPU (e.g. t.py::test_a[0])",
            "  2 × no flash-attn (e.g. t.py::test_b[0])",
            "  1 × one alone (e.g. t.py::test_c)",
        ]
    )


class _Config:  # a run without xdist: no workerinput, no dist option
    option = type("Option", (), {"dist": "no", "numprocesses": None})()

    def getoption(self, name: str, default: object = None) -> object:
        return default
