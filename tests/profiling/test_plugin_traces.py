"""Trace export through the plugin, in real pytest sessions: modes, files per test id, the JSON report."""

from __future__ import annotations

import getpass
import json
import os
import stat
import tempfile
import time
from pathlib import Path

import pytest

from pytest_nosync.profiling import export

TESTS = """
import pytest
import torch
from tiny_pipeline import TinyPipeline


def run(nosync, steps=2, stall=None):
    pipe = TinyPipeline()
    pipe.scheduler.stall = stall or {}
    with torch.no_grad(), nosync.guard(pipe) as g:
        pipe(num_inference_steps=steps, callback_on_step_end=g.callback_on_step_end)


@pytest.mark.nosync(checks=["host_overhead"])
def test_passes(nosync):
    run(nosync)


@pytest.mark.nosync(checks=["host_overhead"])
@pytest.mark.parametrize("size", [1])
def test_fails_after_the_block(nosync, size):
    run(nosync)
    assert size == 2, "an assertion after the guarded block"


@pytest.mark.nosync(checks=["host_overhead"], trace_budgets={"max_cpu_ms_between_denoiser_calls": 5})
def test_over_budget(nosync):
    run(nosync, steps=3, stall={1: 0.03})


def test_plain():
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(tiny_pipeline=(Path(__file__).parent / "tiny_pipeline.py").read_text())
    pytester.makepyfile(test_pipe=TESTS)
    pytester.syspathinsert()
    return pytester


def _report(path: Path) -> dict[str, dict]:
    doc = json.loads(path.read_text())
    return {t["test_id"].split("::")[-1]: t for t in doc["tests"]}


def CACHED_TRACES(project: pytest.Pytester) -> Path:
    return project.path / ".pytest_cache" / "d" / "nosync-traces"


def test_always_writes_one_file_per_test_and_lists_it(project: pytest.Pytester) -> None:
    result = project.runpytest("--nosync", "--nosync-trace=always", "--nosync-report=report.json")
    result.assert_outcomes(passed=2, failed=2)
    traces = CACHED_TRACES(project)  # by default under pytest's cache directory: the working directory stays clean
    assert not (project.path / "nosync-traces").exists() and not list(project.path.glob("*.json.gz"))
    names = sorted(p.name for p in traces.iterdir())
    assert names == [
        "test_pipe.py__test_fails_after_the_block_1.json",
        "test_pipe.py__test_over_budget.json",
        "test_pipe.py__test_passes.json",
    ]
    tests = _report(project.path / "report.json")
    for name, test in tests.items():
        assert Path(test["artifacts"]["trace"]).name in names, name
        assert test["metrics"]["diagnosis"]["steps"]
    assert "test_plain" not in tests


def test_gzip_when_asked(project: pytest.Pytester) -> None:
    project.runpytest("--nosync", "--nosync-trace=always", "--nosync-trace-gzip", "-k", "passes")
    assert [p.name for p in CACHED_TRACES(project).iterdir()] == ["test_pipe.py__test_passes.json.gz"]


def test_without_the_cache_plugin_traces_go_to_a_private_temporary_directory(project: pytest.Pytester) -> None:
    """Not a directory every user of the machine shares: one of this user's, which only they can read or write."""
    result = project.runpytest("--nosync", "--nosync-trace=always", "-p", "no:cacheprovider", "-k", "passes")
    temporary = Path(tempfile.gettempdir()) / f"pytest-nosync-{getpass.getuser()}" / "traces"
    result.stdout.fnmatch_lines([f"*trace: {temporary}/test_pipe.py__test_passes.json*"])
    assert stat.S_IMODE(temporary.stat().st_mode) == 0o700 and stat.S_IMODE(temporary.parent.stat().st_mode) == 0o700
    assert not (project.path / ".pytest_cache").exists() and not (project.path / "nosync-traces").exists()


def _old_traces(directory: Path, count: int, size: int = 10) -> list[Path]:
    """`count` trace files of earlier runs, an hour old and older, newest first."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = directory / f"tests_old.py__test_{i}.json"
        path.write_bytes(b"{}".ljust(size))
        os.utime(path, (time.time() - 3600 - i, time.time() - 3600 - i))
        paths.append(path)
    return paths


def test_prune_keeps_the_newest_traces_and_everything_else(tmp_path: Path) -> None:
    old = _old_traces(tmp_path, 6)
    notes = tmp_path / "notes.txt"  # not a trace's name: never counted, never removed
    notes.write_text("mine")
    (tmp_path / "kept by the user").mkdir()
    os.utime(notes, (0, 0))
    now = time.time()
    current = tmp_path / "tests_new.py__test_new.json.gz"  # this run's
    current.write_bytes(b"")
    assert export.prune(tmp_path, since=now - 1, keep=3) == old[2:]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [current.name, old[0].name, old[1].name, "notes.txt", "kept by the user"]
    )
    assert export.prune(tmp_path, since=now - 1, keep=1) == old[:2]  # this run's traces stay, whatever the bound


def test_prune_keeps_at_most_the_bytes(tmp_path: Path) -> None:
    old = _old_traces(tmp_path, 4, size=100)
    assert export.prune(tmp_path, since=time.time(), keep_bytes=250) == old[2:]


def test_the_cache_directory_keeps_the_newest_traces(project: pytest.Pytester) -> None:
    """Each run of `always` adds a trace per test: the directory the plugin chose keeps the newest KEEP_TRACES, this
    run's first, and leaves alone what is not a trace."""
    old = _old_traces(CACHED_TRACES(project), export.KEEP_TRACES + 5)
    (CACHED_TRACES(project) / "notes.txt").write_text("mine")
    project.runpytest("--nosync", "--nosync-trace=always", "-k", "passes").assert_outcomes(passed=1)
    names = {p.name for p in CACHED_TRACES(project).iterdir()}
    assert "test_pipe.py__test_passes.json" in names and "notes.txt" in names
    assert names - {"test_pipe.py__test_passes.json", "notes.txt"} == {p.name for p in old[: export.KEEP_TRACES - 1]}


def test_a_trace_dir_the_user_named_is_not_pruned(project: pytest.Pytester) -> None:
    old = _old_traces(project.path / "mine", export.KEEP_TRACES + 5)
    project.runpytest("--nosync", "--nosync-trace=always", "--nosync-trace-dir=mine", "-k", "passes")
    assert all(p.exists() for p in old) and (project.path / "mine" / "test_pipe.py__test_passes.json").exists()


def test_on_failure_profiles_no_passing_block(project: pytest.Pytester) -> None:
    """A marker's or fixture's block cannot be run again: in on-failure mode it is profiled only when its trace
    budgets need the trace, and such a block's trace is kept when it fails (--nosync-trace always for the rest)."""
    args = ("--nosync", "--nosync-report=report.json", "--nosync-trace-dir=out/traces", "--nosync-trace-stack")
    result = project.runpytest(*args)
    result.assert_outcomes(passed=2, failed=2)
    names = sorted(p.name for p in (project.path / "out" / "traces").iterdir())
    assert names == ["test_pipe.py__test_over_budget.json"]
    tests = _report(project.path / "report.json")
    for name in ("test_passes", "test_fails_after_the_block[1]"):  # not profiled at all: nothing to keep
        assert tests[name]["artifacts"] == {} and "profiled" not in tests[name]["metrics"], name
    over = tests["test_over_budget"]
    (finding,) = [f for f in over["findings"] if f["status"] == "fail"]
    assert (finding["kind"], finding["step"], finding["region"]) == ("host_overhead", 1, "scheduler_step")
    assert finding["where"].endswith("tiny_pipeline.py:22")
    result.stdout.fnmatch_lines(
        [
            "*host_overhead*tiny_pipeline.py:22*step 1*",
            "*of host time between two denoiser calls (budget 5.0 ms)*",
            "trace: *test_over_budget.json (open it in Perfetto)",
            "trace diagnosis: 3 step(s), CPU only*",
            "*host hotspots (self time):*",
            "*step 1: * <built-in function sleep> in slow_host_work() at *tiny_pipeline.py:22 [[]scheduler_step]",
        ]
    )
    assert "test_fails_after_the_block_1.json" not in result.stdout.str()


def test_without_stacks_the_region_is_the_place(project: pytest.Pytester) -> None:
    result = project.runpytest("--nosync", "-k", "budget")
    result.stdout.fnmatch_lines(
        [
            "*host_overhead <region scheduler_step>:0  — step 1 ×1*",
            "*of host time between two denoiser calls (budget 5.0 ms); longest: [[]scheduler_step]",
            "*note: no Python stacks recorded*",
        ]
    )


def test_never_writes_nothing(project: pytest.Pytester) -> None:
    result = project.runpytest("--nosync", "--nosync-trace=never", "--nosync-report=report.json")
    result.assert_outcomes(passed=2, failed=2)  # the budget still reads a trace; it is not kept
    assert not list(CACHED_TRACES(project).iterdir())
    assert all(t["artifacts"] == {} for t in _report(project.path / "report.json").values())


def test_budgets_from_the_command_line(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--nosync", "--nosync-trace=never", "--nosync-trace-budget=max_cpu_ms_between_denoiser_calls=1000", "-k", "pass"
    )
    result.assert_outcomes(passed=1)


def test_unwritable_trace_dir_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok(): pass")
    (pytester.path / "afile").write_text("")
    result = pytester.runpytest("--nosync", "--nosync-trace-dir=afile/traces")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--nosync-trace-dir: cannot write traces to afile/traces: afile is a file*"])
    assert pytester.runpytest("--nosync", "--nosync-trace=never", "--nosync-trace-dir=afile/traces").ret == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--nosync-trace=sometimes"], "*--nosync-trace: must be one of always, on-failure, never*"),
        (["--nosync-trace-schedule=1,2"], "*--nosync-trace-schedule: expected WAIT,WARMUP,ACTIVE*"),
        (["--nosync-trace-budget=max_idle=1"], "*unknown budget 'max_idle'*"),
        (["--nosync-nsys", "--nosync-trace=always"], "*exclude each other*"),
    ],
)
def test_bad_trace_options_are_usage_errors(pytester: pytest.Pytester, options: list[str], message: str) -> None:
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest("--nosync", *options)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_nsys_needs_cuda(pytester: pytest.Pytester) -> None:
    from pytest_nosync.detection import devices

    if devices.cuda_available():
        pytest.skip("this machine has CUDA")
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest("--nosync", "--nosync-nsys")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--nosync-nsys needs a CUDA device*"])


def test_bad_marker_budget_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.nosync(trace_budgets={"max_gpu_idle_fraction": 3})
        def test_x():
            pass
        """
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*trace_budgets*max_gpu_idle_fraction out of range*"])
