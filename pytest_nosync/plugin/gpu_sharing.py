"""xdist workers sharing a GPU (`--nosync-share-gpus`) through NVIDIA's Multi-Process Service.

Without MPS, the processes on one GPU time-share it: a process's kernels run only in its own time slices, and a tiny
pipeline's step, a chain of small kernels and syncs, waits many slices. On an H100, 34 tester classes took 377
worker-seconds with four workers time-sharing the GPU, eight workers did no more, and eight under MPS took 108, with
the same verdicts to the finding (docs/validation.md, section 16). Under MPS the workers' kernels share the GPU
concurrently, each process keeping its own CUDA context, sync debug mode and profiler.

On the xdist controller, when more workers than GPUs share them: a control daemon the user runs is used as it is;
else one is started for the run (`nvidia-cuda-mps-control -d`, pipe and log directories of its own, so no other
program's clients join it) and quit at the run's end. The workers xdist starts afterwards inherit its directories;
where the run's CUDA_VISIBLE_DEVICES names GPUs, the daemon serves those renumbered from 0, and so are the workers
pinned.
Where there is no daemon to start, or `--nosync-mps=off` (which starts none; a running one still serves them), the
workers time-share, and the header says so.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .xdist import visible_gpus

CONTROL = "nvidia-cuda-mps-control"
PIPE_VAR, LOG_VAR = "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"
DEFAULT_PIPE_DIRECTORY = Path("/tmp/nvidia-mps")  # the daemon's, when started without CUDA_MPS_PIPE_DIRECTORY
SLOWER = "each worker's kernels wait for its time slice, several times slower than under MPS"


@dataclass
class Sharing:
    """How this run's workers share their GPUs: the header's line, and what to undo at the end."""

    line: str
    started: Path | None = None  # the directory of the daemon this run started
    # started under the run's CUDA_VISIBLE_DEVICES, the daemon's server shows its clients those GPUs renumbered from 0
    # (NVIDIA's MPS docs, CUDA_VISIBLE_DEVICES): a worker pinned to GPU 2 of "2,3" is the client's GPU 0
    renumbered: bool = False
    _saved: dict[str, str | None] = field(default_factory=dict)

    def stop(self) -> None:
        """Quit the daemon this run started (its server goes with it) and restore the environment."""
        if self.started is None:
            return
        binary = shutil.which(CONTROL)
        if binary is not None:
            with contextlib.suppress(OSError, subprocess.SubprocessError):  # nothing of it stays in this process
                subprocess.run([binary], input=b"quit\n", env=_daemon_env(self.started), capture_output=True,
                               timeout=30, check=False)  # fmt: skip
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(self.started, ignore_errors=True)
        self.started = None


def running_daemon() -> Path | None:
    """The pipe directory of an MPS control daemon this process would connect to, if one is running."""
    named = os.environ.get(PIPE_VAR)
    directory = Path(named) if named else DEFAULT_PIPE_DIRECTORY
    return directory if (directory / "control").exists() else None


def share(workers: int, gpus: int, mode: str) -> Sharing | None:
    """Set up MPS for `workers` on `gpus` GPUs (None where no GPU is shared). Call before xdist starts its workers."""
    if gpus < 1 or workers <= gpus:
        return None
    what = f"nosync: {workers} workers share {gpus} GPU(s)"
    running = running_daemon()
    if running is not None:  # CUDA connects every process to it, whatever the run asks
        return Sharing(f"{what} through the running MPS control daemon ({running})")
    if mode == "off":
        return Sharing(f"{what} without MPS (--nosync-mps=off): {SLOWER}")
    binary = shutil.which(CONTROL)
    if binary is None:
        return Sharing(f"{what} without MPS ({CONTROL} is not on the PATH): {SLOWER}")
    directory = Path(tempfile.mkdtemp(prefix="nosync-mps-"))
    env = _daemon_env(directory)
    for name in (PIPE_VAR, LOG_VAR):
        Path(env[name]).mkdir()
    try:
        done = subprocess.run([binary, "-d"], env=env, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        done, error = None, str(exc)
    else:
        error = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()[-1:] or ["exit status"]
        error = f"{error[0]} ({done.returncode})"
    if done is None or done.returncode != 0:
        shutil.rmtree(directory, ignore_errors=True)
        return Sharing(f"{what} without MPS ({CONTROL} -d failed: {error}): {SLOWER}")
    sharing = Sharing(f"{what} through an MPS control daemon started for this run ({directory}, quit at its end)",
                      started=directory, renumbered=bool(os.environ.get("CUDA_VISIBLE_DEVICES")))  # fmt: skip
    for name in (PIPE_VAR, LOG_VAR):
        sharing._saved[name] = os.environ.get(name)
        os.environ[name] = env[name]  # the workers xdist starts next are the daemon's clients
    return sharing


def _daemon_env(directory: Path) -> dict[str, str]:
    """The environment of the daemon started in `directory` and of its clients: its pipe and log directories."""
    return {**os.environ, PIPE_VAR: str(directory / "pipe"), LOG_VAR: str(directory / "log")}


class GpuSharing:
    """Registered on the xdist controller: MPS for the workers before xdist starts them, quit at the end."""

    def __init__(self, mode: str, share_gpus: bool) -> None:
        self.mode = mode
        self.share_gpus = share_gpus
        self.sharing: Sharing | None = None

    @pytest.hookimpl(tryfirst=True)  # before xdist's sessionstart starts the workers, and before the header
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        workers = session.config.getoption("numprocesses", default=None)
        if self.share_gpus and isinstance(workers, int):
            self.sharing = share(workers, len(visible_gpus()), self.mode)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return [self.sharing.line] if self.sharing is not None else []

    @pytest.hookimpl(trylast=True)  # in the nosync section; said again there, as -q leaves the header out
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.sharing is not None:
            terminalreporter.write_line(self.sharing.line)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.sharing is not None:
            self.sharing.stop()
            self.sharing = None
