"""Every usage error of `python -m pytest_nosync`: a bad argument, a file that cannot be read or is not what the
command reads, an output that cannot be written. Each is one line on stderr and exit status 4, never a traceback,
and an output is checked before the work that would fill it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_nosync import cli
from pytest_nosync.detection import devices

ROOT = Path(__file__).resolve().parents[2]
REPORT = {"schema": "pytest-nosync/1", "tests": []}
FILES = {
    "bad.json": "{",
    "binary.json": b"\xff\xfe",
    "list.json": "[1, 2]",
    "object.json": '{"a": 1}',
    "bad-times.json": '{"traceEvents": [{"ph": "X", "ts": "soon"}]}',
    "not-gzip.json.gz": "{}",
    "report.json": json.dumps(REPORT),
    "bad-tests.json": json.dumps({**REPORT, "tests": [{"findings": [{"x": 1}]}]}),
    "bad-census.json": json.dumps({**REPORT, "census": 3}),
    "baseline.json": json.dumps({"schema": "pytest-nosync-baseline/2", "entries": []}),
    "bad-entries.json": json.dumps({"schema": "pytest-nosync-baseline/2", "entries": 5}),
    "afile": "",
    "future.json": json.dumps({**REPORT, "schema": "pytest-nosync/99"}),
}
CASES = [
    # arguments
    ((), "the following arguments are required: command"),
    (("nope",), "invalid choice: 'nope'"),
    (("diagnose",), "the following arguments are required: trace"),
    (("compare", "report.json"), "the following arguments are required: other"),
    (("profile", "--target", "wan", "--steps", "x"), "argument --steps: invalid int value: 'x'"),
    (("profile", "--target", "nope"), "unknown target 'nope'"),
    (("profile", "--target", "wan", "--device", "tpu9"), "--device tpu9: "),
    (("profile", "--target", "wan", "--checkpoint", "nothere"), "--checkpoint nothere: nothere is neither"),
    (("profile", "--target", "wan", "--steps", "1"), "--steps 1: the profiled call needs at least 2 denoising steps"),
    (("profile", "--target", "wan", "--mode", "compile", "--device", "emu"), "--mode compile: dynamo cannot compile"),
    (
        ("profile", "--target", "wan", "--mode", "compile", "--backend", "bogus", "--device", "cpu"),
        "--backend bogus: no torch.compile backend of that name here; known: ",
    ),
    # diagnose: a trace
    (("diagnose", "missing.json"), "cannot read the trace missing.json: it does not exist"),
    (("diagnose", "dir"), "cannot read the trace dir: it is a directory"),
    (("diagnose", "bad.json"), "cannot read the trace bad.json: it is not JSON (Expecting"),
    (("diagnose", "binary.json"), "cannot read the trace binary.json: it is not JSON ('utf-8' codec"),
    (("diagnose", "not-gzip.json.gz"), "cannot read the trace not-gzip.json.gz: Not a gzipped file"),
    (("diagnose", "list.json"), 'list.json is not a Chrome trace: expected {"traceEvents": [...]}'),
    (("diagnose", "object.json"), "object.json is not a Chrome trace"),
    (("diagnose", "bad-times.json"), "bad-times.json is not a Chrome trace: could not convert"),
    # census and compare: a report
    (("census", "missing.json"), "cannot read the report missing.json: it does not exist"),
    (("census", "dir"), "cannot read the report dir: it is a directory"),
    (("census", "bad.json"), "cannot read the report bad.json: it is not JSON"),
    (("census", "list.json"), "list.json is not a pytest-nosync report"),
    (("census", "object.json"), "object.json is not a pytest-nosync report"),
    (("census", "bad-tests.json"), "bad-tests.json is not a pytest-nosync report: a test's entry does not read"),
    (("census", "report.json"), "report.json has no census: run diffusers' tests with --nosync"),
    (("census", "bad-census.json"), "bad-census.json has a census of schema int, not pytest-nosync-census/2"),
    (("census", "diff", "report.json", "bad-census.json"), "report.json has no census"),
    (("census", "diff", "bad-census.json"), "the following arguments are required: head"),
    (("compare", "missing.json", "report.json"), "cannot read the report missing.json: it does not exist"),
    (("compare", "report.json", "object.json"), "object.json is not a pytest-nosync report"),
    # a report of a schema this version does not know: read as if it were its own, it said nothing or the wrong thing
    (("census", "future.json"), "future.json is a report of schema pytest-nosync/99, not pytest-nosync/1"),
    (("census", "diff", "future.json", "report.json"), "future.json is a report of schema pytest-nosync/99"),
    (("census", "scenarios", "future.json"), "future.json is a report of schema pytest-nosync/99"),
    (("census", "plot", "future.json", "--out", "map.png"), "future.json is a report of schema pytest-nosync/99"),
    (("compare", "future.json", "report.json"), "future.json is a report of schema pytest-nosync/99"),
    # baseline migrate: a baseline
    (("baseline", "migrate", "missing.json"), "baseline missing.json does not exist"),
    (("baseline", "migrate", "dir"), "baseline dir is a directory, not a baseline file"),
    (("baseline", "migrate", "bad.json"), "baseline bad.json is not valid JSON"),
    (("baseline", "migrate", "list.json"), 'baseline list.json has no \'"schema"'),
    (("baseline", "migrate", "bad-entries.json"), "baseline bad-entries.json: 'entries' must be a list"),
    # outputs, checked before the work
    (("diagnose", "missing.json", "--json", "afile/d.json"), "--json: cannot write afile/d.json: afile is a file"),
    (("diagnose", "missing.json", "--json", "dir"), "--json: dir is a directory; give a file name such as"),
    (("baseline", "migrate", "baseline.json", "--out", "dir"), "--out: dir is a directory"),
    (("profile", "--target", "wan", "--out", "afile/t.json"), "--out: cannot write afile/t.json: afile is a file"),
    (("profile", "--target", "wan", "--json", "afile/d.json"), "--json: cannot write afile/d.json: afile is a file"),
]


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def _run(cwd: Path, *argv: str) -> Ran:
    """`python -m pytest_nosync ARGV` in `cwd`, run in this process (pytest_nosync.__main__ only passes main's status
    to sys.exit: test_the_module_entry_answers_as_main_does runs it in a process of its own). Anything main raises but
    SystemExit propagates: a traceback would fail the test."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        mp.chdir(cwd)
        try:
            status = cli.main(list(argv))
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
    return Ran(status, out.getvalue(), err.getvalue())


def _run_module(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "pytest_nosync", *argv]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name, content in FILES.items():
        (tmp_path / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    (tmp_path / "dir").mkdir()
    return tmp_path


def _assert_one_sentence(done: Ran | subprocess.CompletedProcess[str], expected: str) -> None:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == 4, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert expected in done.stderr, done.stderr


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[" ".join(argv) or "nothing" for argv, _ in CASES])
def test_a_usage_error_is_one_line_and_exit_4(files: Path, argv: tuple[str, ...], expected: str) -> None:
    before = sorted(p.name for p in files.rglob("*"))
    done = _run(files, *argv)
    _assert_one_sentence(done, expected)
    assert sorted(p.name for p in files.rglob("*")) == before  # nothing written, not even an empty output


@pytest.mark.skipif(devices.cuda_available(), reason="this machine has CUDA")
def test_profile_on_cuda_without_a_gpu(files: Path) -> None:
    _assert_one_sentence(_run(files, "profile", "--target", "wan", "--device", "cuda"), "--device cuda: no CUDA device")


@pytest.mark.skipif(devices.cuda_available(), reason="this machine has CUDA")
def test_profile_in_compile_mode_without_a_gpu(files: Path) -> None:
    """The default device here is the emulated one, which dynamo cannot compile for: inductor's KeyError: 'emu' (or a
    run of the eager backend that traced the emulation, not the model)."""
    done = _run(files, "profile", "--target", "flux", "--mode", "compile")
    _assert_one_sentence(done, "--mode compile: dynamo cannot compile for the emulated device")
    assert "--device cpu" in done.stderr


def _scenario_census(path: Path) -> None:
    """A census report with one scenario beside plain: what `census plot` draws."""
    from pytest_nosync import run_report
    from pytest_nosync.census import outcomes
    from pytest_nosync.findings import Report

    coverage, reports = outcomes.Coverage(), []
    for column in ("syncs", "syncs-first_block_cache"):
        tester = "flux/test_flux.py::FluxFastTests"
        reports.append(Report([], test_id=f"tests/pipelines/{tester}::nosync[{column}]", check="syncs", target=tester))
        coverage.add(f"tests/pipelines/{tester}", column, outcomes.outcome_of(reports[-1], "FluxPipeline"))
    path.write_text(json.dumps(run_report.document(reports, {}, {"census": coverage.to_dict()})))


@pytest.mark.parametrize(
    ("out", "expected"),
    [
        ("map.bogusext", "--out map.bogusext: matplotlib writes no .bogusext file; name one of "),
        ("mapnoext", "--out mapnoext: name the picture's format by its extension (mapnoext.png, .svg, .pdf, ...)"),
    ],
)
def test_census_plot_takes_a_format_matplotlib_writes(files: Path, out: str, expected: str) -> None:
    """Checked before drawing: matplotlib raised a ValueError at the end for an unknown extension, and wrote
    `mapnoext.png` for `mapnoext` while the command said `wrote mapnoext`."""
    pytest.importorskip("matplotlib")
    _scenario_census(files / "scenarios.json")
    drawn = _run(files, "census", "plot", "scenarios.json", "--out", "drawn.png")
    assert drawn.returncode == 0 and drawn.stdout.startswith("wrote drawn.png: 1 pipelines by 2 scenarios"), drawn
    before = sorted(p.name for p in files.rglob("*"))
    _assert_one_sentence(_run(files, "census", "plot", "scenarios.json", "--out", out), expected)
    assert sorted(p.name for p in files.rglob("*")) == before


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="Linux's /proc: a file whose read fails")
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (("diagnose",), "cannot read the trace /proc/self/mem: Input/output error"),
        (("census",), "cannot read the report /proc/self/mem: Input/output error"),
        (("baseline", "migrate"), "baseline /proc/self/mem cannot be read: Input/output error"),
    ],
)
def test_a_file_that_cannot_be_read(files: Path, command: tuple[str, ...], expected: str) -> None:
    _assert_one_sentence(_run(files, *command, "/proc/self/mem"), expected)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_a_file_without_read_permission(files: Path) -> None:
    (files / "report.json").chmod(0)
    _assert_one_sentence(_run(files, "census", "report.json"), "cannot read the report report.json: Permission denied")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [c for c in CASES if c[0] in (("nope",), ("diagnose", "missing.json"))],
    ids=["nope", "diagnose missing.json"],
)
def test_the_module_entry_answers_as_main_does(files: Path, argv: tuple[str, ...], expected: str) -> None:
    """`python -m pytest_nosync`, in a process of its own: the status, the one line, no traceback."""
    done = _run_module(files, *argv)
    _assert_one_sentence(done, expected)
    ran = _run(files, *argv)
    assert (done.returncode, done.stderr) == (ran.returncode, ran.stderr)
