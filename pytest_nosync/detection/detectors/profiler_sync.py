"""Profiler confirmation (opt-in): the same block under torch.profiler, syncs counted from its trace.

Sync debug mode only sees syncs that go through torch's own helpers; the profiler sees every blocking
runtime call (`cudaStreamSynchronize`, `cudaDeviceSynchronize`, a pageable `Memcpy`), C++ extensions
included. The trace is read as a person reads it in Perfetto (profiling.trace): the copy direction gives
the kind, the Python functions around the call give the place. Trace locations are function-level, so a
profiler sync confirms the sync-debug finding in the same step and function; one nobody else saw becomes a
finding of its own, named by its function.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from ... import hints
from ...attribution import attribute
from ...findings import SYNC_KINDS, Finding, Frame, Phase, Report
from ...profiling.trace import Trace, TraceSync, phase_at, profiler_stop_sync, sync_events
from ..guard_options import GuardOptions
from .base import Detector


class ProfilerSyncDetector(Detector):
    name = "profiler"
    uses_profiler = True  # the guard adds a tracer, whose one profiler session records the block

    def __init__(self, options: GuardOptions) -> None:
        super().__init__(options)
        self._tracer: Any = None
        self.trace: Trace | None = None
        self.syncs: list[tuple[TraceSync, str, int | None]] = []

    def use_trace_from(self, tracer: Any) -> None:
        self._tracer = tracer

    def findings(self) -> list[Finding]:
        self.trace = self._tracer.load_trace() if self._tracer is not None else None
        if self.trace is None:
            return []
        steps = self.trace.step_ranges()
        syncs = sync_events(self.trace)
        own = profiler_stop_sync(self.trace, syncs)  # the profiler's synchronize when it stops, not the block's
        self.syncs = [(s, *phase_at(s.ts, steps)) for s in syncs if s is not own]
        return []  # reconciled into the other detectors' findings below, so nothing counts twice

    def reconcile(self, findings: list[Finding]) -> list[Finding]:
        result = list(findings)
        for sync, phase, step in self.syncs:
            # Prefer a finding no profiler event confirmed yet: one line can hold two syncs.
            candidates = [i for i, f in enumerate(result) if _same_sync(f, sync, phase, step)]
            unconfirmed = [i for i in candidates if "profiler" not in result[i].source]
            match = (unconfirmed or candidates or [None])[0]
            if match is not None:
                found = result[match]
                # The copy direction is known here; the expression text only guessed it.
                kind = found.kind if found.kind == "device_sync" else sync.kind
                confirmations = found.data.get("profiler_events", 0) + 1
                data = {**found.data, "profiler_events": confirmations, "runtime_call": sync.call}
                source = found.source if "profiler" in found.source else f"{found.source}+profiler"
                result[match] = replace(found, kind=kind, source=source, data=data)
            else:
                result.append(_finding(sync, phase, step))
        return result

    def unchecked(self) -> str | None:
        if self.trace is None:
            reason = getattr(self._tracer, "skipped", None) or "the profiler recorded nothing"
            return f"profiler confirmation of syncs did not run: {reason}"
        return None

    def conclude(self, report: Report) -> None:
        per_step: dict[str, int] = {}
        for _sync, phase, step in self.syncs:
            key = f"step{step}" if phase == Phase.IN_STEP else phase
            per_step[key] = per_step.get(key, 0) + 1
        if per_step:
            report.metrics["profiler_syncs"] = per_step


def _same_sync(finding: Finding, sync: TraceSync, phase: str, step: int | None) -> bool:
    if finding.kind not in SYNC_KINDS or finding.phase != phase or finding.step != step:
        return False
    functions = {(os.path.basename(f.filename), f.function) for f in finding.stack}
    return any((os.path.basename(p.filename), p.function) in functions for p in sync.python[:3])


def _finding(sync: TraceSync, phase: str, step: int | None) -> Finding:
    frames = tuple(Frame(p.filename, p.lineno, p.function) for p in sync.python)
    where, stack = attribute(frames) if frames else ("<no python frame>:0", ())
    detail = f"{sync.op or 'no aten op'} → {sync.call}" + (
        f" ({', '.join(sorted(set(sync.memcpy)))})" if sync.memcpy else ""
    )
    return Finding(
        kind=sync.kind,
        where=where,
        stack=stack,
        step=step,
        phase=phase,
        region="loop" if phase == Phase.IN_STEP else None,
        hint=hints.hint_for("synchronize" if sync.kind == "device_sync" else "unknown"),
        detail=detail + "; location is the enclosing function (profiler)",
        source="profiler",
        data={"runtime_call": sync.call, "op": sync.op},
    )
