"""The tracer: a Detector that profiles the guarded block, names its steps and regions in the trace, keeps the
trace file when asked, and turns the trace's figures into a diagnosis and budget findings.

- profiler mode (`TraceDetector.profiles`): torch.profiler over the block; `nosync::step<N>` and
  `nosync::region::<name>` ranges (record_function) from the guard's step and region events; the profiler
  steps at each step's end (its schedule counts denoising steps).
- nsys mode (TraceConfig.nsys): no torch.profiler; NVTX ranges of the same names and cudaProfilerStart/Stop
  around the captured steps (detectors.profiler_ranges.CaptureWindow).

The profiler runs in mode "always", or when trace budgets (GuardOptions.trace_budgets) or a profiler-reading
detector need its trace; never while an "on-failure" block passes (suite.guarded_call re-runs a failing call
under the profiler instead). Keeping exports the trace, moves the nosync ranges to their own track
(profiling.export) and writes `Report.artifacts["trace"]`; the diagnosis goes to `Report.metrics["diagnosis"]`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...findings import Finding, Report
from ...profiling import export
from ...profiling.budgets import budget_findings
from ...profiling.config import TraceConfig
from ...profiling.diagnose import TraceDiagnosis, diagnose
from ...profiling.trace import REGION_RANGE_PREFIX, STEP_PREFIX, Trace
from .. import devices
from ..guard_options import GuardOptions
from .base import Detector, StepContext
from .profiler_ranges import CaptureWindow, NvtxRanges, ProfilerRanges
from .profiler_session import ProfilerBusy, ProfilerSession


class TraceDetector(Detector):
    name = "trace"

    def __init__(
        self, options: GuardOptions, readers: Sequence[Detector] = (), *, cudart: Any = None, nvtx: Any = None
    ) -> None:
        super().__init__(options)
        self.config = options.trace or TraceConfig(mode="never")
        self.budgets = options.trace_budgets
        self.profiler_options = self.config.profiler
        self.readers = list(readers)
        self._cudart = cudart
        self._nvtx = nvtx
        self.session: ProfilerSession | None = None
        self.ranges: ProfilerRanges | None = None
        self.nvtx: NvtxRanges | None = None
        self.window: CaptureWindow | None = None
        self.skipped: str | None = None
        self._doc: dict[str, Any] | None = None
        self.trace: Trace | None = None
        self.diagnosis: TraceDiagnosis | None = None
        self.path: str | None = None
        self._decided = False
        for reader in self.readers:
            # Another detector reads this trace instead of running a second profiler (two cannot record at once);
            # it needs Python stacks.
            self.profiler_options = replace(self.profiler_options, with_stack=True)
            reader.use_trace_from(self)

    @property
    def profiles(self) -> bool:
        """Whether torch.profiler runs: a trace may be kept, budgets or a reader need one; never in nsys mode (nsys
        and torch.profiler both drive CUPTI)."""
        return not self.config.nsys and (self.config.mode == "always" or self.budgets.any or bool(self.readers))

    # ---- arm / steps / regions / disarm --------------------------------------------------------------
    def arm(self, ctx: StepContext) -> None:
        super().arm(ctx)
        if self.config.nsys:
            if self._cudart is None and not devices.cuda_available():
                raise RuntimeError("nsys mode needs a CUDA device: NVTX ranges and cudaProfilerStart/Stop")
            first, last = 0, None
            if self.profiler_options.schedule is not None:
                wait, warmup, active = self.profiler_options.schedule
                first, last = wait + warmup, wait + warmup + active - 1
            self.nvtx = NvtxRanges(self._nvtx)
            self.window = CaptureWindow(first, last, self._cudart)
        if self.profiles:
            session = ProfilerSession(self.profiler_options)
            try:
                session.start()
            except ProfilerBusy as exc:
                self.skipped = str(exc)
                return
            self.session = session
            self.ranges = ProfilerRanges()

    def _push(self, name: str) -> None:
        if self.ranges is not None:
            self.ranges.push(name)
        if self.nvtx is not None:
            self.nvtx.push(name)

    def _pop(self, name: str) -> None:
        if self.ranges is not None:
            self.ranges.pop(name)
        if self.nvtx is not None:
            self.nvtx.pop(name)

    def on_step_begin(self, step: int) -> None:
        if self.window is not None:
            self.window.on_step_begin(step)
        self._push(f"{STEP_PREFIX}{step}")

    def on_step_end(self, step: int) -> None:
        self._pop(f"{STEP_PREFIX}{step}")
        if self.window is not None:
            self.window.on_step_end(step)
        if self.session is not None:
            with self.ctx.unobserved():  # a schedule's last active step stops the profiler: it synchronizes
                self.session.step()

    def on_region(self, name: str, entering: bool) -> None:
        (self._push if entering else self._pop)(f"{REGION_RANGE_PREFIX}{name}")

    def disarm(self) -> None:
        errors: list[BaseException] = []
        for close in (
            self.ranges.close_all if self.ranges else None,
            self.nvtx.close_all if self.nvtx else None,
            self.window.close if self.window else None,
            self.session.stop if self.session else None,
        ):
            if close is None:
                continue
            try:
                with self.ctx.unobserved():
                    close()
            except Exception as exc:  # close the rest before reporting
                errors.append(exc)
        if errors:
            raise errors[0]

    # ---- reading the trace ---------------------------------------------------------------------------
    def load_trace(self) -> Trace | None:
        """Export the recorded events once and read them (None when nothing was recorded)."""
        if self.trace is not None or self.session is None or not self.session.recorded:
            return self.trace
        fd, raw = tempfile.mkstemp(prefix="nosync-", suffix=".json")
        os.close(fd)
        try:
            self.session.export(raw)
            self._doc = export.load_raw(raw)
        finally:
            os.remove(raw)
        self.session.release()
        self.trace = Trace(self._doc.get("traceEvents", []))
        return self.trace

    def _diagnose(self) -> TraceDiagnosis | None:
        if self.diagnosis is None:
            trace = self.load_trace()
            if trace is not None:
                self.diagnosis = diagnose(trace)
        return self.diagnosis

    def findings(self) -> list[Finding]:
        if not self.budgets.any:
            return []
        diagnosis = self._diagnose()
        return budget_findings(diagnosis, self.budgets, self.options.warmup_steps) if diagnosis else []

    # ---- keeping -------------------------------------------------------------------------------------
    def _decide(self, report: Report) -> None:
        """After the guard judged its findings: keep ("always", or a failing block's when budgets profiled it in
        "on-failure" mode) or discard."""
        if self._decided:
            return
        self._decided = True
        if self.session is None:
            return
        if not self.session.recorded:
            self.skipped = "nothing recorded: the block ended before the schedule's active steps"
            return
        if self.config.mode == "always" or (self.config.mode == "on-failure" and report.passed is False):
            self.keep(report.test_id)
        else:
            self.discard()

    def keep(self, name: str) -> str | None:
        """Write the trace file (once) and diagnose it; returns the path."""
        if self.path is None and self.load_trace() is not None and self._doc is not None:
            self._diagnose()
            target = self.config.path or export.trace_path(self.config.directory, name or "nosync", self.config.gzip)
            self.path = export.write(export.for_perfetto(self._doc), target, self.config.gzip or None)
            self._doc = None
        return self.path

    def discard(self) -> None:
        self._doc = None
        if self.session is not None:
            self.session.release()

    def conclude(self, report: Report) -> None:
        self._decide(report)
        if self.session is not None:  # timings of this block (step_ms, ...) were taken under the profiler
            report.metrics["profiled"] = True
        if self.diagnosis is not None:
            report.metrics["diagnosis"] = self.diagnosis.to_dict()
        if self.skipped:
            report.metrics["trace_skipped"] = self.skipped
        if self.path:
            report.artifacts["trace"] = self.path
