"""One torch.profiler session over a guarded block: started at arm, stepped at each step's end when a schedule
is set, stopped at disarm, exported only when someone asks (exporting is most of the cost of a trace)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from ...profiling.config import ProfilerOptions
from .. import devices


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Kineto writes `USDT ... profiler_start/stop` to file descriptor 2 at every start and stop, and no setting turns
    it off: point fd 2 at /dev/null for those two calls only, so a test's captured stderr holds the test's own."""
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


class ProfilerBusy(RuntimeError):
    """Another torch.profiler session is running (the test's own): two cannot record at once."""


class ProfilerSession:
    def __init__(self, options: ProfilerOptions) -> None:
        self.options = options
        self.profiler: Any = None
        self.recorded = False  # the profiler handed over a trace (a schedule may end before its active steps)
        self._running = False

    def start(self) -> None:
        if torch._C._autograd._profiler_enabled():
            raise ProfilerBusy("another torch.profiler session is running: this block is not traced")
        activities = [ProfilerActivity.CPU]
        if devices.cuda_available():
            activities.append(ProfilerActivity.CUDA)
        plan = None
        if self.options.schedule is not None:
            wait, warmup, active = self.options.schedule
            plan = schedule(wait=wait, warmup=warmup, active=active, repeat=1)
        self.profiler = profile(
            activities=activities,
            schedule=plan,
            on_trace_ready=self._ready,
            record_shapes=self.options.record_shapes,
            profile_memory=self.options.profile_memory,
            with_stack=self.options.with_stack,
            with_flops=self.options.with_flops,
        )
        with _quiet_stderr():
            self.profiler.start()
        self._running = True

    def _ready(self, profiler: Any) -> None:
        self.recorded = True

    def step(self) -> None:
        """At a denoising step's end: moves a schedule on (without one, steps are the nosync ranges alone)."""
        if self._running and self.options.schedule is not None:
            with _quiet_stderr():  # a schedule starts and stops recording here
                self.profiler.step()

    def stop(self) -> None:
        if self._running:
            self._running = False
            with _quiet_stderr():
                self.profiler.stop()

    def export(self, path: str) -> None:
        """Kineto's Chrome JSON of what was recorded, written to `path`."""
        self.profiler.export_chrome_trace(path)

    def release(self) -> None:
        """Drop the recorded events (they can be large) once exported or no longer wanted."""
        self.profiler = None
