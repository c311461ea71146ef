"""Workers sharing GPUs through MPS (plugin.gpu_sharing): when the run starts a control daemon, which one its workers
join, that it is quit and the environment restored at the end, and that the header says how the GPUs are shared.

A stand-in `nvidia-cuda-mps-control` on the PATH records how it was called: orchestration only. What MPS does for a
census is measured on the GPU (docs/validation.md, section 16)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from pytest_nosync.plugin import gpu_sharing
from tests.plugin import worker_env

pytest.importorskip("xdist")

FAKE_CONTROL = """#!/bin/sh
# a stand-in for nvidia-cuda-mps-control: `-d` makes the control pipe a daemon would; a command comes on stdin
if [ "$1" = "-d" ]; then
  [ -n "$FAKE_MPS_FAIL" ] && { echo "$FAKE_MPS_FAIL" >&2; exit 1; }
  touch "$CUDA_MPS_PIPE_DIRECTORY/control"
  echo "start $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY" >> "$FAKE_MPS_LOG"
else
  echo "$(cat) $CUDA_MPS_PIPE_DIRECTORY" >> "$FAKE_MPS_LOG"
fi
"""

WORKERS_SAY = worker_env.writing(gpu_sharing.PIPE_VAR, tests=6)


@pytest.fixture
def control(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in daemon first on the PATH, one visible GPU; returns its log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / gpu_sharing.CONTROL
    script.write_text(FAKE_CONTROL)
    script.chmod(0o755)
    log = tmp_path / "mps.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_MPS_LOG", str(log))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    monkeypatch.delenv(gpu_sharing.PIPE_VAR, raising=False)
    monkeypatch.delenv(gpu_sharing.LOG_VAR, raising=False)
    monkeypatch.setattr(gpu_sharing, "DEFAULT_PIPE_DIRECTORY", tmp_path / "no-default-daemon")
    return log


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(WORKERS_SAY)
    result = pytester.runpytest_subprocess("--nosync", "--nosync-share-gpus", "-p", "no:cacheprovider", *args)
    header, _, summary = result.stdout.str().partition("= nosync =")
    shared = [line for line in header.splitlines() if "GPU(s)" in line]
    assert shared == [line for line in summary.splitlines() if "GPU(s)" in line]  # said again where -q shows it
    return result


@pytest.mark.slow
def test_workers_sharing_gpus_join_a_daemon_started_for_the_run_and_quit_at_its_end(
    pytester: pytest.Pytester, control: Path
) -> None:
    result = _run(pytester, "-n", "2")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["nosync: 2 workers share 1 GPU(s) through an MPS control daemon started for this*"])
    started, quit_ = control.read_text().splitlines()
    pipe = started.split()[1]
    assert set(worker_env.seen(pytester).values()) == {pipe}  # every worker a client of the run's daemon, no other
    assert quit_ == f"quit {pipe}"
    assert not Path(pipe).exists()  # its directory went with it


def test_a_running_daemon_is_joined_and_left_running(
    control: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = tmp_path / "users-daemon"
    running.mkdir()
    (running / "control").touch()
    monkeypatch.setenv(gpu_sharing.PIPE_VAR, str(running))
    sharing = gpu_sharing.share(workers=2, gpus=1, mode="auto")
    assert sharing is not None and sharing.started is None
    assert sharing.line == f"nosync: 2 workers share 1 GPU(s) through the running MPS control daemon ({running})"
    sharing.stop()
    assert not control.exists()  # neither started nor quit
    assert os.environ[gpu_sharing.PIPE_VAR] == str(running)  # the workers are its clients


@pytest.mark.parametrize(
    ("mode", "fail", "said"),
    [
        ("off", "", "without MPS (--nosync-mps=off)"),
        (
            "auto",
            "MPS is not supported in this container",
            "without MPS (nvidia-cuda-mps-control -d failed: MPS is not",
        ),
    ],
)
def test_without_mps_the_workers_time_share_and_the_line_says_so(
    control: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mode: str, fail: str, said: str
) -> None:
    monkeypatch.setenv("FAKE_MPS_FAIL", fail)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where a started daemon's directory would be
    sharing = gpu_sharing.share(workers=2, gpus=1, mode=mode)
    assert sharing is not None and sharing.started is None
    assert (
        sharing.line.startswith(f"nosync: 2 workers share 1 GPU(s) {said}") and "several times slower" in sharing.line
    )
    assert gpu_sharing.PIPE_VAR not in os.environ and not control.exists()
    assert not list(tmp_path.glob("nosync-mps-*"))  # a failed start leaves no directory


@pytest.mark.parametrize(("workers", "gpus"), [(1, 1), (4, 4), (4, 0)])
def test_nothing_is_shared_without_more_workers_than_gpus(control: Path, workers: int, gpus: int) -> None:
    assert gpu_sharing.share(workers=workers, gpus=gpus, mode="auto") is None and not control.exists()


def test_stopping_restores_the_environment_it_found(control: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gpu_sharing.LOG_VAR, "/users/own/log")
    sharing = gpu_sharing.share(workers=4, gpus=1, mode="auto")
    assert sharing is not None and sharing.started is not None
    assert os.environ[gpu_sharing.PIPE_VAR].startswith(str(sharing.started))
    sharing.stop()
    assert gpu_sharing.PIPE_VAR not in os.environ and os.environ[gpu_sharing.LOG_VAR] == "/users/own/log"
    assert control.read_text().splitlines()[-1].startswith("quit ")


def _pins(count: int, share: bool, renumbered: bool) -> list[str]:
    import execnet

    from pytest_nosync.plugin import xdist

    specs = [execnet.XSpec("popen") for _ in range(count)]
    for index, spec in enumerate(specs):
        spec.id = f"gw{index}"
    xdist.pin_specs(specs, share, renumbered)
    return [spec.env[xdist.GPU_VARIABLE] for spec in specs]


def test_a_daemon_started_under_a_subset_of_gpus_gets_its_workers_pinned_to_its_numbering(
    control: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug twin: a daemon started under CUDA_VISIBLE_DEVICES=2,3 shows its clients those GPUs as 0 and 1. Workers
    pinned to 2 and 3, as before, saw no GPU at all (on four H200s, a census of 24 workers sharing GPUs 2 and 3 ran
    emulated)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    sharing = gpu_sharing.share(workers=4, gpus=2, mode="auto")
    try:
        assert sharing is not None and sharing.started is not None and sharing.renumbered
        assert _pins(4, share=True, renumbered=sharing.renumbered) == ["0", "1", "0", "1"]
    finally:
        assert sharing is not None
        sharing.stop()


def test_a_running_daemon_or_none_keeps_the_listed_gpus(control: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The clean twin: without a daemon of this run's, the entries the run lists are what CUDA knows."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    sharing = gpu_sharing.share(workers=4, gpus=2, mode="off")
    assert sharing is not None and not sharing.renumbered
    assert _pins(4, share=True, renumbered=sharing.renumbered) == ["2", "3", "2", "3"]


@pytest.mark.slow
@pytest.mark.gpu
def test_on_a_gpu_workers_under_a_real_daemon_find_a_planted_sync_at_its_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real daemon, on the device: two workers sharing one GPU as its clients check a tester class with a planted
    sync and a clean one, with the verdicts a run without workers gives."""
    from pytest_nosync.detection import devices
    from pytest_nosync.plugin import xdist

    if not devices.cuda_available():
        pytest.skip(devices.CUDA_ONLY)
    from tests.census.test_tester_classes import TESTERS
    from tests.twins import loop_pipeline

    if shutil.which(gpu_sharing.CONTROL) is None or gpu_sharing.running_daemon() is not None:
        pytest.skip(f"needs {gpu_sharing.CONTROL} on the PATH and no daemon running already")
    # the last GPU: on a machine of several, the daemon's numbering differs from the machine's
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", xdist.visible_gpus()[-1])
    # tests.twins, in the workers; the rest of the path stays (the plugin and diffusers may be installed there)
    here = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p))
    pytester.makepyfile(test_pipelines=TESTERS.format(read=True))
    args = ("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result = pytester.runpytest_subprocess(*args, "-n", "2", "--nosync-share-gpus", "--dist", "loadgroup")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["nosync: 2 workers share 1 GPU(s) through an MPS control daemon started for this*"])
    line = loop_pipeline.line_of("read before the denoiser")
    result.stdout.fnmatch_lines([f"*dtoh_sync*loop_pipeline.py:{line}*"])
    out = result.stdout.str()
    assert "[cuda]" in out and "[emulate]" not in out  # the workers ran on the GPU, as the header says
    started = re.search(r"started for this run \((\S+), quit", result.stdout.str())
    assert started and not Path(started[1]).exists()  # quit at the end, its directory gone


def test_off_starts_none_but_a_running_daemon_still_serves_the_workers(
    control: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "no-default-daemon").mkdir()
    (tmp_path / "no-default-daemon" / "control").touch()  # one at the default place: CUDA connects every process
    sharing = gpu_sharing.share(workers=2, gpus=1, mode="off")
    assert sharing is not None and sharing.started is None and "through the running MPS control daemon" in sharing.line
    assert not control.exists()
