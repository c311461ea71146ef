"""Profiler confirmation (opt-in): the same block under torch.profiler, syncs counted from its events.

Sync debug mode only sees syncs that go through torch's own helpers; the profiler sees every
`cudaStreamSynchronize`/`cudaDeviceSynchronize` and pageable `Memcpy`, C++ extensions included. Each
profiler sync is tied to its enclosing aten op, the op's Python stack gives the file:line, and the
Memcpy direction gives the kind. A sync both sources saw is one finding, marked confirmed.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import torch

from .. import attribution, hints
from ..findings import AFTER_STEPS, BEFORE_STEPS, IN_STEP, SYNC_KINDS, Finding, Frame
from .base import Detector

SYNC_RUNTIME_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")
_STACK_ENTRY = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<func>.*)$")
STEP_RANGE = "nosync::step"


def _parse_stack(entries: list[str]) -> list[Frame]:
    frames = []
    for entry in entries:
        match = _STACK_ENTRY.match(entry)
        if match:
            frames.append(Frame(match["file"], int(match["line"]), match["func"]))
    return frames


def _kind_of(call: str, memcpy_names: list[str]) -> str:
    if call == "cudaDeviceSynchronize":
        return "device_sync"
    if any("HtoD" in n for n in memcpy_names):
        return "htod_sync"
    return "dtoh_sync"


class ProfilerSyncDetector(Detector):
    name = "profiler"

    def __init__(self) -> None:
        self._profiler: Any = None
        self._step_range: Any = None
        self._events: list[Any] = []

    def arm(self, guard: Any) -> None:
        super().arm(guard)
        from torch.profiler import ProfilerActivity, profile

        self._profiler = profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True, record_shapes=False
        )
        self._profiler.__enter__()

    def disarm(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None
        if self._profiler is not None:
            try:
                self._profiler.__exit__(None, None, None)
                self._events = list(self._profiler.events() or [])
            finally:
                self.profiler, self._profiler = self._profiler, None

    def on_step_begin(self, step: int) -> None:
        self._step_range = torch.autograd.profiler.record_function(f"{STEP_RANGE}{step}")
        self._step_range.__enter__()

    def on_step_end(self, step: int) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def findings(self) -> list[Finding]:
        steps = sorted(
            (e.time_range.start, e.time_range.end, int(e.name[len(STEP_RANGE) :]))
            for e in self._events
            if e.name.startswith(STEP_RANGE)
        )
        seen_ops: set[int] = set()
        out: list[Finding] = []
        for event in self._events:
            if event.name not in SYNC_RUNTIME_CALLS:
                continue
            op = _outermost_op(event)
            if op is None or id(op) in seen_ops:
                continue
            seen_ops.add(id(op))
            frames = _parse_stack(_first_stack(event))
            where, stack = attribution.attribute(frames)
            memcpy = [k.name for k in _device_events(op)]
            kind = _kind_of(event.name, memcpy)
            phase, step = _phase_at(event.time_range.start, steps)
            out.append(
                Finding(
                    kind=kind,
                    where=where,
                    stack=stack,
                    step=step,
                    phase=phase,
                    region=None if phase != IN_STEP else "loop",
                    hint=hints.hint_for("synchronize" if kind == "device_sync" else "unknown"),
                    detail=f"{op.name} → {event.name}" + (f" ({', '.join(sorted(set(memcpy)))})" if memcpy else ""),
                    source=self.name,
                    data={"profiler_op": op.name, "runtime_call": event.name},
                )
            )
        self._profiler_findings = out
        return []  # reconciled into the others' findings below, so nothing is counted twice

    def reconcile(self, findings: list[Finding]) -> list[Finding]:
        result = list(findings)
        for seen in getattr(self, "_profiler_findings", []):
            match = next(
                (
                    i
                    for i, f in enumerate(result)
                    if f.kind in SYNC_KINDS
                    and f.where == seen.where
                    and f.step == seen.step
                    and f.phase == seen.phase
                    and "profiler" not in f.source
                ),
                None,
            )
            if match is None:
                result.append(seen)
                continue
            found = result[match]
            # The profiler knows the copy direction; the expression text only guessed it.
            kind = seen.kind if found.kind != "device_sync" else found.kind
            data = {**found.data, "confirmed_by": seen.detail}
            result[match] = replace(found, kind=kind, source=f"{found.source}+profiler", data=data)
        return result

    def metrics(self) -> dict[str, Any]:
        per_step: dict[str, int] = {}
        for f in getattr(self, "_profiler_findings", []):
            key = f"step{f.step}" if f.phase == IN_STEP else f.phase
            per_step[key] = per_step.get(key, 0) + f.count
        return {"profiler_syncs": per_step} if per_step else {}


def _outermost_op(event: Any) -> Any:
    """The outermost aten op around a runtime call (`aten::item` rather than `_local_scalar_dense`)."""
    op, parent = None, event.cpu_parent
    while parent is not None:
        if parent.name.startswith("aten::"):
            op = parent
        elif op is not None:
            break
        parent = parent.cpu_parent
    return op if op is not None else event


def _first_stack(event: Any) -> list[str]:
    while event is not None:
        if getattr(event, "stack", None):
            return list(event.stack)
        event = event.cpu_parent
    return []


def _device_events(op: Any) -> list[Any]:
    out = [k for k in getattr(op, "kernels", []) if "Memcpy" in k.name]
    for child in getattr(op, "cpu_children", []):
        out.extend(_device_events(child))
    return out


def _phase_at(ts: float, steps: list[tuple[float, float, int]]) -> tuple[str, int | None]:
    """Same rule as the guard: inside a step range → that step; between two → the next; else before/after."""
    for start, end, step in steps:
        if start <= ts <= end:
            return IN_STEP, step
    for start, _end, step in steps:
        if ts < start:
            return (BEFORE_STEPS, None) if step == steps[0][2] else (IN_STEP, step)
    return (AFTER_STEPS, None) if steps else (BEFORE_STEPS, None)
