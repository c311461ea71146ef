"""What a person reads off a trace in Perfetto, computed: `diagnose(trace)` → a plain-data TraceDiagnosis.

Steps are the guard's: `nosync::step<N>` ranges, with the guard's rule for what lies between two steps (it
belongs to the next one), so a step's *window* runs from the previous step's end to its own end (step 0 from
its own start). Per step:

- GPU busy/idle: all device activity (kernels, copies, memsets; every stream, every device) merged into busy
  intervals; a gap is the time between two consecutive ones. Idle is the gap time inside the window, its
  fraction is of the window's time between its first and last device activity (before the first kernel of the
  trace and after the last nothing is "between kernels"). Each large gap names the host work that filled it.
- kernels and GPU time, eager vs compiled, layout transforms and copies (see classify): counted in the step
  whose window holds their *launch* (host time), since that is the code that asked for them.
- launch delay: a kernel's start minus the start of the runtime call that launched it (correlation id); one
  per launch (a CUDA graph launch counts its first kernel only). Small means the GPU waits for the host.
- host: the longest work by self time, and the host time between two calls of the denoiser.
- memory: the allocator's total at the window's start and end, and its peak (profile_memory).

Everything is in host time (µs in the trace, ms or µs in the TraceDiagnosis, as the field names say).
"""

from __future__ import annotations

import bisect
import itertools
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..findings import DENOISER_REGION, Phase
from . import classify
from .trace import REGION_RANGE_PREFIX, PyFrame, Trace, TraceEvent, phase_at, profiler_stop_sync, sync_events

NO_REGION = "loop"  # inside a step, outside every annotated region
TOP = 3  # gaps and hotspots kept per step
TOP_OVERALL = 5
_STACK_DEPTH = 8
_HOST_CATS = ("python_function", "cpu_op")
_PLUMBING = ("contextlib.py", "functools.py", "threading.py")


@dataclass(frozen=True)
class HostWork:
    """What the host thread was doing over an interval. `python`: trace names, innermost first (built-ins such
    as `<built-in function sleep>` included); `where`: the first frame outside torch and this plugin, as
    file:line of the function's def (trace locations are function-level)."""

    region: str | None = None
    op: str | None = None
    python: tuple[str, ...] = ()
    where: str | None = None

    def label(self) -> str:
        """`<built-in function sleep> in slow_host_work() at pipe.py:80, in aten::item [scheduler_step]`."""
        parts = []
        if self.python:
            head = PyFrame.parse(self.python[0])
            parts.append(f"{head.function}()" if head else self.python[0])
            user = next((f for f in map(PyFrame.parse, self.python) if f and self.where == _frame_where(f)), None)
            if user is not None and user is not head and user != head:
                parts.append(f"in {user.function}() at {self.where}")
            elif self.where:
                parts.append(f"at {self.where}")
        if self.op:
            parts.append(f"in {self.op}")
        if self.region:
            parts.append(f"[{self.region}]")
        return " ".join(parts) or "no host work recorded"


@dataclass(frozen=True)
class Gap:
    step: int | None
    at_ms: float  # from the trace's first event
    ms: float
    before: str  # the device activity that ended when the gap began
    after: str
    host: HostWork = field(default_factory=HostWork)


@dataclass(frozen=True)
class Sync:
    step: int | None
    phase: str
    call: str  # cudaStreamSynchronize, ...
    kind: str  # dtoh_sync, htod_sync, device_sync
    op: str
    python: tuple[str, ...] = ()
    where: str | None = None


@dataclass(frozen=True)
class Hotspot:
    name: str
    self_ms: float
    host: HostWork = field(default_factory=HostWork)


@dataclass(frozen=True)
class Percentiles:
    median: float
    p95: float  # nearest rank: a delay that was observed
    count: int


@dataclass(frozen=True)
class MemoryWindow:
    device: str
    start_bytes: int
    end_bytes: int
    peak_bytes: int

    @property
    def growth_bytes(self) -> int:
        return self.end_bytes - self.start_bytes


@dataclass(frozen=True)
class RegionStats:
    name: str
    calls: int = 0
    host_ms: float = 0.0
    kernels: int = 0
    compiled_kernels: int = 0
    gpu_ms: float = 0.0


@dataclass(frozen=True)
class StepStats:
    step: int
    at_ms: float
    wall_ms: float  # the window: previous step's end (or own start) to own end
    denoiser_calls: int = 0
    denoiser_ms: float = 0.0
    max_ms_between_denoiser_calls: float | None = None
    between_calls: HostWork | None = None  # the heaviest host work in that longest interval
    gpu_busy_ms: float | None = None
    gpu_idle_ms: float | None = None
    gpu_idle_fraction: float | None = None
    kernels: int = 0
    compiled_kernels: int = 0
    gpu_ms: float = 0.0
    compiled_gpu_ms: float = 0.0
    layout_transforms: int = 0
    copies: int = 0
    transfers: int = 0
    layout_kernels: dict[str, int] = field(default_factory=dict)  # "nchwToNhwcKernel via aten::conv3d" → count
    copy_kernels: dict[str, int] = field(default_factory=dict)  # "Memcpy DtoD via aten::copy_" → count
    launch_delay_us: Percentiles | None = None
    syncs: int = 0
    gaps: tuple[Gap, ...] = ()
    hotspots: tuple[Hotspot, ...] = ()
    memory: tuple[MemoryWindow, ...] = ()
    regions: tuple[RegionStats, ...] = ()


@dataclass(frozen=True)
class TraceDiagnosis:
    steps: tuple[StepStats, ...] = ()
    regions: tuple[RegionStats, ...] = ()
    syncs: tuple[Sync, ...] = ()
    gaps: tuple[Gap, ...] = ()  # the largest of the whole trace
    launch_delay_us: Percentiles | None = None
    gpu: bool = False
    python_stacks: bool = False
    memory: bool = False
    notes: tuple[str, ...] = ()

    def step(self, n: int) -> StepStats:
        return next(s for s in self.steps if s.step == n)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> TraceDiagnosis:
        return TraceDiagnosis(
            steps=tuple(_step_from(s) for s in raw.get("steps", ())),
            regions=tuple(RegionStats(**r) for r in raw.get("regions", ())),
            syncs=tuple(Sync(**{**s, "python": tuple(s.get("python", ()))}) for s in raw.get("syncs", ())),
            gaps=tuple(_gap_from(g) for g in raw.get("gaps", ())),
            launch_delay_us=_pct_from(raw.get("launch_delay_us")),
            gpu=bool(raw.get("gpu")),
            python_stacks=bool(raw.get("python_stacks")),
            memory=bool(raw.get("memory")),
            notes=tuple(raw.get("notes", ())),
        )


# ---- the analysis --------------------------------------------------------------------------------------
@dataclass
class _Launch:
    """One GPU event and what the host was doing when it was enqueued."""

    event: TraceEvent
    at: float  # launch time on the host (the GPU start when no launch call was recorded)
    launched: bool  # a launch call was recorded
    step: int | None
    region: str | None
    compiled: bool
    kind: str | None  # classify.LAYOUT / COPY / TRANSFER / None
    via: str | None  # outermost aten op at the launch


def diagnose(trace: Trace, denoiser_region: str = DENOISER_REGION) -> TraceDiagnosis:
    """Read the trace; see the module doc for what each figure means."""
    return _Analysis(trace, denoiser_region).run()


class _Analysis:
    def __init__(self, trace: Trace, denoiser_region: str) -> None:
        self.trace = trace
        self.denoiser_region = denoiser_region
        self.host = trace.host_tid()
        self.origin = min((e.ts for e in trace.events), default=0.0)
        self.steps = trace.step_ranges()
        self.windows = _windows(self.steps)
        self.regions = [e for e in trace.region_ranges() if e.tid == self.host]
        self.gpu = trace.gpu_activity()
        self.gpu_by_end = {round(e.end, 3): e for e in self.gpu}
        self.gpu_by_start: dict[float, TraceEvent] = {}
        for e in self.gpu:
            self.gpu_by_start.setdefault(round(e.ts, 3), e)
        self.self_times = _self_times(trace, self.host)
        self.self_starts = [e.ts for e, _ in self.self_times]

    def run(self) -> TraceDiagnosis:
        launches = [self._launch(e) for e in self.gpu]
        delays = self._launch_delays(launches)
        busy = _merge((e.ts, e.end) for e in self.gpu)
        gaps = [(a, b) for (_, a), (b, _) in itertools.pairwise(busy)]
        syncs = self._syncs()
        by_step: dict[int | None, list[_Launch]] = defaultdict(list)
        for launch in launches:
            by_step[launch.step].append(launch)
        per_step_gaps: dict[int, list[Gap]] = {}
        steps = []
        for step, start, end in self.windows:
            step_gaps = self._gaps_in(step, start, end, gaps)
            per_step_gaps[step] = step_gaps
            steps.append(self._step(step, start, end, by_step[step], delays.get(step, []), busy, step_gaps, syncs))
        overall = sorted((g for gs in per_step_gaps.values() for g in gs), key=lambda g: -g.ms)[:TOP_OVERALL]
        notes = []
        if not launches:
            notes.append("no GPU activity in this trace (a CPU run): GPU idle, kernels and launch delays need CUDA")
        if not self.trace.of("python_function"):
            notes.append("no Python stacks recorded (with_stack off): places are aten ops and regions")
        if not self.trace.memory:
            notes.append("no memory events recorded (profile_memory off)")
        if not self.steps:
            notes.append("no step ranges (nosync::step<N>) in this trace: the whole trace is outside the steps")
        all_delays = [d for ds in delays.values() for d in ds]
        return TraceDiagnosis(
            steps=tuple(steps),
            regions=tuple(self._region_stats(launches, None)),
            syncs=tuple(syncs),
            gaps=tuple(overall),
            launch_delay_us=_percentiles(all_delays),
            gpu=bool(launches),
            python_stacks=bool(self.trace.of("python_function")),
            memory=bool(self.trace.memory),
            notes=tuple(notes),
        )

    # ---- GPU events --------------------------------------------------------------------------------
    def _launch(self, event: TraceEvent) -> _Launch:
        call = self.trace.launch_of(event)
        at = call.ts if call is not None else event.ts
        # without its launch call (not recorded), what the host ran at the GPU's start time says nothing
        ops = self.trace.enclosing("cpu_op", call.tid, at) if call is not None else []
        annotations = self.trace.enclosing("user_annotation", call.tid, at) if call is not None else []
        regions = [a for a in annotations if a.name.startswith(REGION_RANGE_PREFIX)]
        aten = [o for o in ops if o.name.startswith("aten::")]  # the user-facing op, past dynamo's wrappers
        return _Launch(
            event=event,
            at=at,
            launched=call is not None,
            step=_step_at(at, self.steps),
            region=self._region_name(regions[-1]) if regions else None,
            compiled=event.cat == "kernel" and classify.is_compiled(event.name, [e.name for e in ops + annotations]),
            kind=classify.classify(event.cat, event.name, ops[-1].name if ops else None),
            via=(aten or ops)[0].name if ops else None,
        )

    def _launch_delays(self, launches: list[_Launch]) -> dict[int | None, list[float]]:
        """Kernel start − launch start, once per launch call (a graph's first kernel)."""
        first: dict[Any, _Launch] = {}
        for launch in launches:
            corr = launch.event.args.get("correlation")
            if launch.event.cat != "kernel" or corr is None or not launch.launched:
                continue
            if corr not in first or launch.event.ts < first[corr].event.ts:
                first[corr] = launch
        out: dict[int | None, list[float]] = defaultdict(list)
        for launch in first.values():
            out[launch.step].append(launch.event.ts - launch.at)
        return out

    def _gaps_in(self, step: int, start: float, end: float, gaps: list[tuple[float, float]]) -> list[Gap]:
        pieces = []
        first = max(0, bisect.bisect_left(gaps, (start,)) - 1)  # gaps are disjoint and in order
        for a, b in itertools.takewhile(lambda g: g[0] < end, itertools.islice(gaps, first, None)):
            lo, hi = max(a, start), min(b, end)
            if hi > lo:
                pieces.append((hi - lo, lo, hi, a, b))
        pieces.sort(reverse=True)
        out = []
        for length, lo, hi, a, b in pieces[:TOP]:
            out.append(
                Gap(
                    step=step,
                    at_ms=_ms(lo - self.origin),
                    ms=_ms(length),
                    before=self._gpu_name_ending(a),
                    after=self._gpu_name_starting(b),
                    host=self._filler(lo, hi),
                )
            )
        return out

    def _gpu_name_ending(self, ts: float) -> str:
        event = self.gpu_by_end.get(round(ts, 3))
        return classify.short_name(event.name) if event else "?"

    def _gpu_name_starting(self, ts: float) -> str:
        event = self.gpu_by_start.get(round(ts, 3))
        return classify.short_name(event.name) if event else "?"

    # ---- host work ---------------------------------------------------------------------------------
    def _region_name(self, event: TraceEvent) -> str:
        return event.name[len(REGION_RANGE_PREFIX) :]

    def _region_over(self, start: float, end: float) -> str | None:
        best, best_overlap = None, 0.0
        for event in self.regions:
            overlap = min(end, event.end) - max(start, event.ts)
            if overlap > 0 and overlap >= best_overlap:  # ties: the later (inner) one
                best, best_overlap = event, overlap
        return self._region_name(best) if best is not None else None

    def _filler(self, start: float, end: float) -> HostWork:
        """The host work that covered the interval: the outermost op and the innermost Python function that ran
        for at least half of it (else the one that ran longest in it), and the region."""
        half = (end - start) / 2
        ops = self.trace.overlapping("cpu_op", self.host, start, end)
        op = _covering(ops, start, end, half, outermost=True)
        functions = self.trace.overlapping("python_function", self.host, start, end)
        function = _covering(functions, start, end, half, outermost=False)
        at = (max(start, function.ts) + min(end, function.end)) / 2 if function is not None else (start + end) / 2
        return self._host_at(at, self._region_over(start, end), op.name if op is not None else None)

    def _host_at(self, ts: float, region: str | None, op: str | None) -> HostWork:
        chain = self.trace.enclosing("python_function", self.host, ts)
        names = tuple(e.name for e in reversed(chain))[:_STACK_DEPTH]
        return HostWork(region=region, op=op, python=names, where=_where(names))

    def _hotspots(self, start: float, end: float, limit: int = TOP) -> list[Hotspot]:
        lo, hi = bisect.bisect_left(self.self_starts, start), bisect.bisect_right(self.self_starts, end)
        inside = [(t, e) for e, t in self.self_times[lo:hi] if e.end <= end]
        inside.sort(key=lambda item: -item[0])
        out = []
        for self_time, event in inside[:limit]:
            # the event's own Python stack: the functions around all of it (not what ran in its middle)
            chain = [
                e
                for e in self.trace.enclosing("python_function", self.host, event.ts)
                if e.ts <= event.ts and e.end >= event.end
            ]
            names = tuple(e.name for e in reversed(chain))[:_STACK_DEPTH]
            ops = [e for e in self.trace.enclosing("cpu_op", self.host, event.ts) if e.end >= event.end]
            host = HostWork(
                region=self._region_over(event.ts, event.end),
                op=ops[0].name if ops else None,
                python=names,
                where=_where(names),
            )
            out.append(Hotspot(name=event.name[:120], self_ms=_ms(self_time), host=host))
        return out

    # ---- per step ----------------------------------------------------------------------------------
    def _step(
        self,
        step: int,
        start: float,
        end: float,
        launches: list[_Launch],
        delays: list[float],
        busy: list[tuple[float, float]],
        gaps: list[Gap],
        syncs: list[Sync],
    ) -> StepStats:
        kernels = [x for x in launches if x.event.cat == "kernel"]
        idle, busy_ms, fraction = self._idle(start, end, busy)
        calls = [e for e in self.regions if self._region_name(e) == self.denoiser_region]
        mine = [e for e in calls if start <= e.ts <= end]
        between, between_host = self._between_calls(calls, start, end)
        waste: dict[str, dict[str, int]] = {classify.LAYOUT: defaultdict(int), classify.COPY: defaultdict(int)}
        for x in launches:
            if x.kind in waste:
                waste[x.kind][f"{classify.short_name(x.event.name)} via {x.via or 'no op'}"] += 1
        return StepStats(
            step=step,
            at_ms=_ms(start - self.origin),
            wall_ms=_ms(end - start),
            denoiser_calls=len(mine),
            denoiser_ms=_ms(sum(e.dur for e in mine)),
            max_ms_between_denoiser_calls=between,
            between_calls=between_host,
            gpu_busy_ms=busy_ms,
            gpu_idle_ms=idle,
            gpu_idle_fraction=fraction,
            kernels=len(kernels),
            compiled_kernels=sum(1 for x in kernels if x.compiled),
            gpu_ms=_ms(sum(x.event.dur for x in kernels)),
            compiled_gpu_ms=_ms(sum(x.event.dur for x in kernels if x.compiled)),
            layout_transforms=sum(1 for x in launches if x.kind == classify.LAYOUT),
            copies=sum(1 for x in launches if x.kind == classify.COPY),
            transfers=sum(1 for x in launches if x.kind == classify.TRANSFER),
            layout_kernels=_by_count(waste[classify.LAYOUT]),
            copy_kernels=_by_count(waste[classify.COPY]),
            launch_delay_us=_percentiles(delays),
            syncs=sum(1 for s in syncs if s.step == step and s.phase == Phase.IN_STEP),
            gaps=tuple(gaps),
            hotspots=tuple(self._hotspots(start, end)),
            memory=tuple(self._memory(start, end)),
            regions=tuple(self._region_stats(launches, (start, end))),
        )

    def _idle(self, start: float, end: float, busy: list[tuple[float, float]]) -> tuple[Any, Any, Any]:
        if not busy:
            return None, None, None
        lo, hi = max(start, busy[0][0]), min(end, busy[-1][1])
        if hi <= lo:
            return 0.0, 0.0, 0.0
        first = max(0, bisect.bisect_left(busy, (lo,)) - 1)
        inside = itertools.takewhile(lambda iv: iv[0] < hi, itertools.islice(busy, first, None))
        busy_us = sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in inside)
        idle_us = (hi - lo) - busy_us
        return _ms(idle_us), _ms(busy_us), round(idle_us / (hi - lo), 4)

    def _between_calls(self, calls: list[TraceEvent], start: float, end: float) -> tuple[float | None, HostWork | None]:
        """The longest host interval from the end of a denoiser call in this window to the start of the next call
        (the scheduler step, the callback, the next iteration's preparation), and what ran longest in it."""
        longest: tuple[float, float] | None = None
        for prev, nxt in itertools.pairwise(calls):
            if start <= prev.end <= end and (longest is None or nxt.ts - prev.end > longest[1] - longest[0]):
                longest = (prev.end, nxt.ts)
        if longest is None:
            return None, None
        hot = self._hotspots(longest[0], longest[1], limit=1)
        # a hotspot that is a sliver of the interval does not explain it (untraced Python, without stacks)
        if hot and hot[0].self_ms * 1e3 >= (longest[1] - longest[0]) / 4:
            host = hot[0].host
        else:
            host = HostWork(region=self._region_over(*longest))
        return _ms(longest[1] - longest[0]), host

    def _memory(self, start: float, end: float) -> list[MemoryWindow]:
        by_device: dict[str, list] = defaultdict(list)
        for sample in self.trace.memory:
            by_device[sample.device].append(sample)
        out = []
        for device, samples in sorted(by_device.items()):
            before = [s for s in samples if s.ts < start]
            inside = [s for s in samples if start <= s.ts <= end]
            if before:
                first = before[-1].allocated
            elif inside:
                first = inside[0].allocated - inside[0].delta
            else:
                continue
            last = inside[-1].allocated if inside else first
            peak = max([first] + [s.allocated for s in inside])
            out.append(MemoryWindow(device, first, last, peak))
        return out

    def _region_stats(self, launches: list[_Launch], window: tuple[float, float] | None) -> list[RegionStats]:
        calls: dict[str, list[TraceEvent]] = defaultdict(list)
        for event in self.regions:
            if window is None or window[0] <= event.ts <= window[1]:
                calls[self._region_name(event)].append(event)
        kernels: dict[str, list[_Launch]] = defaultdict(list)
        for x in launches:
            if x.event.cat == "kernel":
                kernels[x.region or NO_REGION].append(x)
        names = sorted(set(calls) | set(kernels))
        return [
            RegionStats(
                name=name,
                calls=len(calls.get(name, ())),
                host_ms=_ms(sum(e.dur for e in calls.get(name, ()))),
                kernels=len(kernels.get(name, ())),
                compiled_kernels=sum(1 for x in kernels.get(name, ()) if x.compiled),
                gpu_ms=_ms(sum(x.event.dur for x in kernels.get(name, ()))),
            )
            for name in names
        ]

    def _syncs(self) -> list[Sync]:
        out = []
        syncs = sync_events(self.trace)
        own = profiler_stop_sync(self.trace, syncs)  # the profiler's, not the pipeline's
        for sync in syncs:
            if sync is own:
                continue
            phase, step = phase_at(sync.ts, self.steps)
            names = tuple(f"{p.filename}({p.lineno}): {p.function}" for p in sync.python)[:_STACK_DEPTH]
            out.append(Sync(step, str(phase), sync.call, sync.kind, sync.op, names, _where(names)))  # plain data
        return out


# ---- helpers -------------------------------------------------------------------------------------------
def _windows(steps: list[tuple[float, float, int]]) -> list[tuple[int, float, float]]:
    """Each step's window under the guard's rule: from the previous step's end (step 0: its start) to its end."""
    out = []
    previous_end: float | None = None
    for start, end, step in steps:
        out.append((step, previous_end if previous_end is not None else start, end))
        previous_end = end
    return out


def _step_at(ts: float, steps: list[tuple[float, float, int]]) -> int | None:
    phase, step = phase_at(ts, steps)
    return step if phase == Phase.IN_STEP else None


def _merge(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _covering(events: list[TraceEvent], start: float, end: float, half: float, outermost: bool) -> TraceEvent | None:
    """The event that ran for at least half of [start, end] (outermost or innermost of those); else the one that
    ran longest in it, if that is at least a quarter: a sliver of an op is not what filled a gap."""

    def overlap(e: TraceEvent) -> float:
        return min(end, e.end) - max(start, e.ts)

    covering = [e for e in events if overlap(e) >= half > 0]
    if covering:
        return max(covering, key=lambda e: e.dur) if outermost else min(covering, key=lambda e: e.dur)
    longest = max(events, key=overlap, default=None)
    return longest if longest is not None and overlap(longest) >= half / 2 > 0 else None


def _self_times(trace: Trace, tid: Any) -> list[tuple[TraceEvent, float]]:
    """Self time of every Python function and aten op on the host thread (their duration less their children's),
    the way a flame graph's self column reads."""
    events = sorted(
        (e for cat in _HOST_CATS for e in trace.of(cat) if e.tid == tid and e.dur > 0), key=lambda e: (e.ts, -e.dur)
    )
    self_time = [e.dur for e in events]
    stack: list[int] = []
    for i, event in enumerate(events):
        while stack and events[stack[-1]].end <= event.ts:
            stack.pop()
        if stack:
            self_time[stack[-1]] -= min(event.end, events[stack[-1]].end) - event.ts
        stack.append(i)
    return [(e, max(0.0, t)) for e, t in zip(events, self_time, strict=True)]


def _internal(filename: str) -> bool:
    if filename.startswith("<") or filename.startswith("torch/") or "/torch/" in filename:
        return True
    if "pytest_nosync/" in filename and not any(f"pytest_nosync/{d}/" in filename for d in ("suite", "targets")):
        return True
    return filename.rsplit("/", 1)[-1] in _PLUMBING


def _frame_where(frame: PyFrame) -> str:
    return f"{frame.filename}:{frame.lineno}"


def _where(names: Sequence[str]) -> str | None:
    """file:line of the first frame outside torch and this plugin (the innermost frame if all are inside)."""
    frames = [f for f in (PyFrame.parse(n) for n in names) if f is not None]
    for frame in frames:
        if not _internal(frame.filename):
            return _frame_where(frame)
    return _frame_where(frames[0]) if frames else None


def _by_count(counts: Mapping[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _percentiles(values: list[float]) -> Percentiles | None:
    if not values:
        return None
    ordered = sorted(values)
    p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
    return Percentiles(round(statistics.median(ordered), 1), round(p95, 1), len(ordered))


def _ms(us: float) -> float:
    return round(us / 1e3, 3)


def _pct_from(raw: Mapping[str, Any] | None) -> Percentiles | None:
    return Percentiles(**raw) if raw else None


def _host_from(raw: Mapping[str, Any] | None) -> HostWork | None:
    if raw is None:
        return None
    return HostWork(raw.get("region"), raw.get("op"), tuple(raw.get("python", ())), raw.get("where"))


def _gap_from(raw: Mapping[str, Any]) -> Gap:
    return Gap(**{**raw, "host": _host_from(raw.get("host")) or HostWork()})


def _step_from(raw: Mapping[str, Any]) -> StepStats:
    values = dict(raw)
    values["between_calls"] = _host_from(values.get("between_calls"))
    values["launch_delay_us"] = _pct_from(values.get("launch_delay_us"))
    values["gaps"] = tuple(_gap_from(g) for g in values.get("gaps", ()))
    values["hotspots"] = tuple(
        Hotspot(h["name"], h["self_ms"], _host_from(h.get("host")) or HostWork()) for h in values.get("hotspots", ())
    )
    values["memory"] = tuple(MemoryWindow(**m) for m in values.get("memory", ()))
    values["regions"] = tuple(RegionStats(**r) for r in values.get("regions", ()))
    values["layout_kernels"] = dict(values.get("layout_kernels", {}))
    values["copy_kernels"] = dict(values.get("copy_kernels", {}))
    return StepStats(**values)
