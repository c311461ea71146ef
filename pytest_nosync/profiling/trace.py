"""Read a torch.profiler Chrome trace the way a person reads it in Perfetto.

Events nest by time on a thread: a runtime call (`cudaStreamSynchronize`) sits inside an aten op
(`aten::item`) inside Python functions (`pipeline_wan.py(512): __call__`); a GPU copy is tied to the
runtime call that launched it by its correlation id. Python events name the function and the line it is
defined on, not the line that ran: trace locations are function-level.
"""

from __future__ import annotations

import bisect
import gzip
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..findings import Phase

SYNC_CALLS = frozenset(
    {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaStreamWaitEvent"}
)
BLOCKING_SYNC_CALLS = SYNC_CALLS - {"cudaStreamWaitEvent"}  # a stream wait does not block the host
STEP_PREFIX = "nosync::step"
REGION_PREFIX = "nosync::"
REGION_RANGE_PREFIX = "nosync::region::"  # a guard region (transformer_forward, ...) as a profiler range
HOST_TID_ARG = "host tid"  # where an exported trace moved a nosync range off its thread, the thread it ran on
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
RUNTIME_CATS = ("cuda_runtime", "cuda_driver")
_PY_FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<func>.+)$")


@dataclass(frozen=True)
class TraceEvent:
    name: str
    cat: str
    ts: float  # microseconds
    dur: float
    tid: Any
    pid: Any
    args: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def end(self) -> float:
        return self.ts + self.dur

    def contains(self, ts: float) -> bool:
        return self.ts <= ts <= self.end


@dataclass(frozen=True)
class MemorySample:
    """One `[memory]` event (profile_memory): the allocator's total after an allocation or free."""

    ts: float
    device: str  # "cpu", "cuda:0"
    allocated: int
    reserved: int
    delta: int


@dataclass(frozen=True)
class PyFrame:
    """A Python function as the trace names it: file (as the tracer shortened it), def line, name."""

    filename: str
    lineno: int
    function: str

    @classmethod
    def parse(cls, name: str) -> PyFrame | None:
        match = _PY_FRAME.match(name)
        if not match:
            return None
        return cls(match["file"], int(match["line"]), match["func"])


class Trace:
    def __init__(self, events: Iterable[dict[str, Any]]) -> None:
        self.events: list[TraceEvent] = []
        self.memory: list[MemorySample] = []
        for raw in events:
            phase = raw.get("ph")
            if raw.get("name") == "[memory]" and phase in ("i", "I", "X"):
                self.memory.append(_memory_sample(raw))
                continue
            if phase != "X":
                continue
            args = raw.get("args") or {}
            self.events.append(
                TraceEvent(
                    name=str(raw.get("name", "")),
                    cat=str(raw.get("cat", "")),
                    ts=float(raw.get("ts", 0.0)),
                    dur=float(raw.get("dur", 0.0)),
                    tid=args.get(HOST_TID_ARG, raw.get("tid")),
                    pid=raw.get("pid"),
                    args=args,
                )
            )
        self.events.sort(key=lambda e: (e.ts, -e.dur))
        self.memory.sort(key=lambda m: m.ts)
        self._by_cat: dict[str, list[TraceEvent]] = defaultdict(list)
        for event in self.events:
            self._by_cat[event.cat].append(event)
        self._by_thread: dict[tuple[str, Any], list[TraceEvent]] = defaultdict(list)
        for event in self.events:
            self._by_thread[(event.cat, event.tid)].append(event)
        self._starts = {k: [e.ts for e in v] for k, v in self._by_thread.items()}
        self._parents = {k: _parents(v) for k, v in self._by_thread.items()}
        self._by_correlation: dict[Any, list[TraceEvent]] = defaultdict(list)
        for event in self.events:
            corr = event.args.get("correlation")
            if corr is not None:
                self._by_correlation[corr].append(event)

    @classmethod
    def load(cls, path: str) -> Trace:
        """The trace in a Chrome JSON file (.gz too). OSError when it cannot be read, ValueError with a sentence
        naming the file when it is not JSON or not a trace."""
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as fh:
            doc = json.load(fh)
        events = doc.get("traceEvents") if isinstance(doc, dict) else doc
        if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
            raise ValueError(f'{path} is not a Chrome trace: expected {{"traceEvents": [...]}} or a list of events')
        try:
            return cls(events)
        except (TypeError, ValueError) as exc:  # a time or duration that is not a number
            raise ValueError(f"{path} is not a Chrome trace: {exc}") from None

    def of(self, *cats: str) -> list[TraceEvent]:
        out: list[TraceEvent] = []
        for cat in cats:
            out.extend(self._by_cat.get(cat, []))
        return sorted(out, key=lambda e: e.ts)

    def enclosing(self, cat: str, tid: Any, ts: float) -> list[TraceEvent]:
        """Events of `cat` on thread `tid` that contain `ts`, outermost first.

        Events of one category on one thread nest, so the chain is the last event that started at or before
        `ts` and its parents, less those that ended before `ts`: a few steps instead of a scan of the thread.
        """
        key = (cat, tid)
        events = self._by_thread.get(key, [])
        index = bisect.bisect_right(self._starts.get(key, []), ts) - 1
        parents = self._parents.get(key, [])
        chain: list[TraceEvent] = []
        while index >= 0:
            event = events[index]
            if event.contains(ts):
                chain.append(event)
            index = parents[index]
        chain.reverse()
        return chain

    def overlapping(self, cat: str, tid: Any, start: float, end: float) -> list[TraceEvent]:
        """Events of `cat` on `tid` that overlap [start, end]: those running at `start`, then those starting
        inside."""
        key = (cat, tid)
        events = self._by_thread.get(key, [])
        starts = self._starts.get(key, [])
        running = [e for e in self.enclosing(cat, tid, start) if e.ts < start < e.end]
        return running + events[bisect.bisect_left(starts, start) : bisect.bisect_right(starts, end)]

    def correlated(self, event: TraceEvent) -> list[TraceEvent]:
        corr = event.args.get("correlation")
        return [e for e in self._by_correlation.get(corr, []) if e is not event] if corr is not None else []

    def python_stack(self, tid: Any, ts: float) -> list[PyFrame]:
        """Python functions running at `ts` on `tid`, innermost first (built-ins left out)."""
        frames = [PyFrame.parse(e.name) for e in self.enclosing("python_function", tid, ts)]
        return [f for f in reversed(frames) if f is not None]

    def annotation_at(self, tid: Any, ts: float, prefix: str) -> TraceEvent | None:
        hits = [e for e in self.enclosing("user_annotation", tid, ts) if e.name.startswith(prefix)]
        return hits[-1] if hits else None

    def step_ranges(self) -> list[tuple[float, float, int]]:
        out = []
        for e in self.of("user_annotation"):
            if e.name.startswith(STEP_PREFIX) and e.name[len(STEP_PREFIX) :].isdigit():
                out.append((e.ts, e.end, int(e.name[len(STEP_PREFIX) :])))
        return sorted(out)

    def region_ranges(self) -> list[TraceEvent]:
        """The guard's regions, as emitted while tracing (`nosync::region::<name>`), in start order."""
        return [e for e in self.of("user_annotation") if e.name.startswith(REGION_RANGE_PREFIX)]

    def host_tid(self) -> Any:
        """The thread that ran the guarded block: the one with the step ranges, else the busiest with ops."""
        for e in self.of("user_annotation"):
            if e.name.startswith(STEP_PREFIX):
                return e.tid
        counts: dict[Any, int] = defaultdict(int)
        for e in self.of("cpu_op"):
            counts[e.tid] += 1
        return max(counts, key=counts.__getitem__) if counts else None

    def gpu_activity(self) -> list[TraceEvent]:
        """Kernels, copies and memsets on the device timeline, in start order."""
        return self.of(*GPU_CATS)

    def launch_of(self, gpu_event: TraceEvent) -> TraceEvent | None:
        """The runtime or driver call that enqueued `gpu_event` (cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync,
        cudaGraphLaunch, ...), found by correlation id."""
        for event in self.correlated(gpu_event):
            if event.cat in RUNTIME_CATS:
                return event
        return None

    def runtime_inside(self, op: TraceEvent) -> list[TraceEvent]:
        """Runtime calls made while `op` ran on its thread."""
        return self.overlapping("cuda_runtime", op.tid, op.ts, op.end)


def phase_at(ts: float, steps: list[tuple[float, float, int]]) -> tuple[str, int | None]:
    """The guard's rule: inside a step range → that step; between two → the next; else before/after."""
    for start, end, step in steps:
        if start <= ts <= end:
            return Phase.IN_STEP, step
    for start, _end, step in steps:
        if ts < start:
            return (Phase.BEFORE_STEPS, None) if step == steps[0][2] else (Phase.IN_STEP, step)
    return (Phase.AFTER_STEPS, None) if steps else (Phase.BEFORE_STEPS, None)


def _parents(events: list[TraceEvent]) -> list[int]:
    """For events of one thread in start order: the index of each one's enclosing event (-1 for none)."""
    parents: list[int] = []
    stack: list[int] = []
    for i, event in enumerate(events):
        while stack and events[stack[-1]].end <= event.ts:
            stack.pop()
        parents.append(stack[-1] if stack else -1)
        stack.append(i)
    return parents


def _memory_sample(raw: dict[str, Any]) -> MemorySample:
    args = raw.get("args") or {}
    device_type = args.get("Device Type", 0)
    device = "cpu" if device_type in (0, "CPU") else f"cuda:{args.get('Device Id', 0)}"
    return MemorySample(
        ts=float(raw.get("ts", 0.0)),
        device=device,
        allocated=int(args.get("Total Allocated", 0) or 0),
        reserved=int(args.get("Total Reserved", 0) or 0),
        delta=int(args.get("Bytes", 0) or 0),
    )


@dataclass(frozen=True)
class TraceSync:
    """One host-blocking sync in a trace, with what the trace says about its origin."""

    ts: float
    tid: Any
    call: str  # the runtime call: cudaStreamSynchronize, ...
    kind: str  # dtoh_sync, htod_sync, device_sync
    op: str  # outermost aten op around it ("" if none, e.g. a C++ extension)
    python: tuple[PyFrame, ...]  # innermost first
    memcpy: tuple[str, ...] = ()


def sync_events(trace: Trace) -> list[TraceSync]:
    """Every blocking sync of the trace, one per runtime call, with the copy direction when there is one."""
    out: list[TraceSync] = []
    for event in trace.of("cuda_runtime", "cuda_driver"):
        if event.name not in BLOCKING_SYNC_CALLS:
            continue
        ops = trace.enclosing("cpu_op", event.tid, event.ts)
        op = ops[0] if ops else None
        memcpy = _memcpy_near(trace, event, op)
        if event.name == "cudaDeviceSynchronize":
            kind = "device_sync"
        elif any("HtoD" in m for m in memcpy):
            kind = "htod_sync"
        else:
            kind = "dtoh_sync"
        out.append(
            TraceSync(
                ts=event.ts,
                tid=event.tid,
                call=event.name,
                kind=kind,
                op=op.name if op else "",
                python=tuple(trace.python_stack(event.tid, event.ts)),
                memcpy=tuple(memcpy),
            )
        )
    return out


def profiler_stop_sync(trace: Trace, syncs: list[TraceSync]) -> TraceSync | None:
    """The cudaDeviceSynchronize torch.profiler makes when it stops recording, if the trace caught it: the last
    sync, outside any aten op, after the thread's last op, or with torch's profiler in its Python stack."""
    if not syncs or syncs[-1].call != "cudaDeviceSynchronize" or syncs[-1].op:
        return None
    last = syncs[-1]
    if last.python:
        return last if any("profiler" in f.filename and f.filename.startswith("torch/") for f in last.python) else None
    ops = trace.of("cpu_op")
    return last if all(e.end <= last.ts for e in ops if e.tid == last.tid) else None


def _memcpy_near(trace: Trace, sync: TraceEvent, op: TraceEvent | None) -> list[str]:
    """GPU copies launched by runtime calls inside the same op (or right before a bare sync)."""
    if op is not None:
        launches = [e for e in trace.runtime_inside(op) if e.name.startswith("cudaMemcpy")]
    else:
        launches = [
            e
            for e in trace.of("cuda_runtime")
            if e.tid == sync.tid and e.name.startswith("cudaMemcpy") and sync.ts - 5e3 <= e.ts <= sync.ts
        ][-1:]
    names: list[str] = []
    for launch in launches:
        names.extend(e.name for e in trace.correlated(launch) if e.cat == "gpu_memcpy")
    return names
