"""What one denoising step costs, as numbers to compare between two commits (pytest_nosync.step_cost judges).

Two checks, two detectors, because counting ops inflates the times of the call it counts in (on a GPU the suite
runs them in separate calls; under emulation, where every op is Python already, in one):
  step_metrics  host ms of each step and the part outside the denoiser's forward, device ms (CUDA events; a GPU
                only) and the peak of device memory during the step above what was in use when the first step
                began (the pipeline's weights, other pipelines and garbage left by earlier work are not the step's:
                with them a run that built another target first differed from one that did not);
  device_ops    the aten ops each step ran on the device, by op name and by the source line that issued them.
A step's window runs from the end of the step before it (or, for the first, from its opening) to its end: the work
between two denoiser calls belongs to the next step, as findings there do, so a loop iteration is one step's cost.
Nothing here judges; the numbers go to `Report.metrics["step_metrics"]` / `["device_ops"]`.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections import Counter, defaultdict
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

try:  # FlexAttention's operator and its eager switch: a torch without them has nothing of them to count
    from torch._higher_order_ops.flex_attention import flex_attention
    from torch.nn.attention import flex_attention as public_flex
except ImportError:
    flex_attention = public_flex = None

from ... import attribution, source_identity
from ...emulation import DEVICE_TYPE
from ...findings import Location, Report
from ...patching import Patches
from .. import devices
from ..guard_options import GuardOptions
from .base import Detector, StepContext, ended_by_check
from .denoiser_clock import DenoiserClock

NO_STEP = (
    "no denoising step was seen: per-step numbers need steps (a pipeline passed to the guard, `with g.step()`, or "
    "whole_block=True)"
)


class StepTimer(Detector):
    """Host ms, host ms outside the denoiser, device ms and peak device memory of each step's window."""

    name = "step_metrics"

    def __init__(self, options: GuardOptions) -> None:
        super().__init__(options)
        self.host_ms: dict[int, float] = {}
        self.denoiser = DenoiserClock()
        self.peak_bytes: dict[int, int] = {}
        self._window_start = 0.0
        self._events: dict[int, Any] = {}  # step → CUDA event at the end of its window (-1: the first window's start)
        self._collector = devices.CollectorFrees(options.backend)
        self._in_use_before = 0  # device memory in use when the first step began
        self._freed_before_window = 0  # what the collector had freed when the current window opened

    def arm(self, ctx: StepContext) -> None:
        super().arm(ctx)
        self.cuda = self.options.backend == "cuda"
        self._collector.__enter__()

    def disarm(self) -> None:
        self._collector.__exit__()

    def _mark(self, key: int) -> None:
        if self.cuda:  # recorded on the stream, read after the block: no synchronization inside it
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self._events[key] = event
        devices.reset_peak(self.options.backend)
        self._freed_before_window = self._collector.freed

    def on_step_begin(self, step: int) -> None:
        if not self._window_start:  # the first step: its window opens here; later ones opened at the last step's end
            self._window_start = time.perf_counter()
            self._in_use_before = self._collector.in_use()
            self._mark(-1)

    def on_step_end(self, step: int) -> None:
        now = time.perf_counter()
        self.host_ms[step] = (now - self._window_start) * 1e3
        self._window_start = now
        # Garbage the collector freed in an earlier window is counted back; in this window it may have been freed
        # after the peak or before it, and is not (the step reads at most that much lower: never a false increase).
        peak = devices.peak_bytes(self.options.backend) + self._freed_before_window
        self.peak_bytes[step] = peak - self._in_use_before
        self._mark(step)

    def on_region(self, name: str, entering: bool) -> None:
        self.denoiser.on_region(name, entering, self.ctx.current_step)

    def _device_ms(self) -> dict[int, float]:
        if not self._events:
            return {}
        last = self._events[max(self._events)]
        last.synchronize()  # after the block, detectors disarmed: the events' times are final
        out: dict[int, float] = {}
        previous = self._events.get(-1)
        for step in sorted(k for k in self._events if k >= 0):
            if previous is not None:
                out[step] = previous.elapsed_time(self._events[step])
            previous = self._events[step]
        return out

    def unchecked(self) -> str | None:
        return None if self.host_ms else NO_STEP

    def conclude(self, report: Report) -> None:
        device_ms = self._device_ms()
        steps = {}
        for step, host in sorted(self.host_ms.items()):
            steps[str(step)] = {
                "host_ms": round(host, 3),
                "host_ms_outside_denoiser": self.denoiser.outside(step, host),
                "device_ms": round(device_ms[step], 3) if step in device_ms else None,
                "peak_bytes": self.peak_bytes.get(step, 0),
            }
        report.metrics["step_metrics"] = steps


class _Counting(TorchDispatchMode):
    def __init__(self, counter: OpCounter) -> None:
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.counter.saw(func, args, kwargs, out)
        return out


# FlexAttention's eager wrapper compiles its call (backend "eager"), which dynamo cannot do under a dispatch mode; its
# debug switch calls the operator directly instead, with the same unfused math
_FLEX_EAGER_SWITCH = "_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG"


@functools.cache
def _flex_rule() -> Any:
    """FlexAttention's higher-order operator, given a rule for the counting mode (a higher-order operator runs under a
    dispatch mode only where it has one): counted as one op, as the dispatcher sees it, and run with the mode popped
    (the dispatcher pops it for the rule). None where this torch has no such operator or switch."""
    if flex_attention is None or not hasattr(public_flex, _FLEX_EAGER_SWITCH):
        return None

    def _counted(mode: _Counting, *args: Any, **kwargs: Any) -> Any:
        out = flex_attention(*args, **kwargs)
        mode.counter.saw(flex_attention, args, kwargs, out)
        return out

    if _Counting not in flex_attention.python_key_table:  # torch refuses a second rule for one mode
        flex_attention.py_impl(_Counting)(_counted)
    return public_flex


class OpCounter(Detector):
    """The aten ops each step ran on the device (an op with a device tensor among its inputs or outputs), by name and
    by the line outside torch and this plugin that issued them. With `ops_steps` the counting mode is on only from the
    end of the step before the first (work between steps belongs to the next) to the end of the last."""

    name = "device_ops"

    def __init__(self, options: GuardOptions) -> None:
        super().__init__(options)
        # step → (op, code, line) → count; names and places are formatted once, in conclude (this runs per op)
        self.sites: dict[int, Counter[tuple[Any, Any, int]]] = defaultdict(Counter)
        self._internal: dict[Any, bool] = {}
        self._mode: _Counting | None = None
        self._steps = 0
        self._cannot = ""  # why counting stopped the call, when it did
        self._patches = Patches()
        self.first, self.last = options.ops_steps or (0, None)

    def arm(self, ctx: StepContext) -> None:
        super().arm(ctx)
        if self.options.backend == "cuda":
            self.device_type = "cuda"
        else:
            self.device_type = DEVICE_TYPE
        if self.first <= 0:
            self._count(True)

    def _count(self, on: bool) -> None:
        if on and self._mode is None:
            flex = _flex_rule()
            if flex is not None:
                self._patches.setattr(flex, _FLEX_EAGER_SWITCH, True)
            self._mode = _Counting(self)
            self._mode.__enter__()
        elif not on and self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
            self._patches.undo()

    def disarm(self) -> None:
        self._count(False)
        if self._cannot:
            # FlexAttention's failed compile leaves its wrapper marked as skipped: every later FlexAttention call of
            # the process would fail too, counted or not, until dynamo is reset
            torch._dynamo.reset()

    def on_step_end(self, step: int) -> None:
        self._steps += 1
        if step + 1 == self.first:
            self._count(True)
        elif step == self.last and _get_current_dispatch_mode() is self._mode:  # another mode above it: at disarm
            self._count(False)

    def absorb_exception(self, exc: BaseException) -> bool:
        """Where FlexAttention has no rule for the counting mode (`_flex_rule`: a torch without its switch), eager
        FlexAttention cannot run under it: its operator has no rule for the mode, and its fallback compiles the call,
        which then fails. That raise is this check's limit, not the code's fault: the ops are not counted, and the
        check says so instead of blaming the line that called attention."""
        raised_in = attribution.frames_from_traceback(exc.__traceback__)
        if self._mode is None or not any(frame.filename.endswith(FLEX_ATTENTION) for frame in raised_in):
            return False
        self._cannot = (
            "device_ops counts ops with a dispatch mode, and eager FlexAttention cannot run under one (it raised "
            f"{type(exc).__name__}): this call's ops were not counted"
        )
        ended_by_check(exc)
        return True

    def unchecked(self) -> str | None:
        if self._cannot:
            return self._cannot
        if not self._steps:
            return NO_STEP
        if self._steps <= self.first:
            return f"device_ops counts from step {self.first} (ops_steps) and the block ran {self._steps} step(s)"
        return None

    def _on_device(self, value: Any) -> bool:
        if isinstance(value, torch.Tensor):
            return value.device.type == self.device_type
        if isinstance(value, (list, tuple)):
            return any(self._on_device(v) for v in value)
        return False

    def saw(self, func: Any, args: tuple, kwargs: dict | None, out: Any) -> None:
        ctx = self.ctx
        step = ctx.effective_step
        if step is None or not ctx.observing:
            return
        if not (self._on_device(out) or self._on_device(args) or (kwargs and self._on_device(tuple(kwargs.values())))):
            return
        code, line = self._site()
        self.sites[step][(func, code, line)] += 1

    def _site(self) -> tuple[Any, int]:
        """(code object, line) of the innermost frame outside torch and this plugin."""
        frame = sys._getframe(1)  # this plugin's frames are skipped like torch's
        internal = self._internal
        while frame is not None:
            code = frame.f_code
            flag = internal.get(code)
            if flag is None:
                flag = internal[code] = attribution.is_internal(code.co_filename)
            if not flag:
                return code, frame.f_lineno
            frame = frame.f_back
        return None, 0

    def conclude(self, report: Report) -> None:
        steps = range(report.steps)  # work after the last step (decoding) is not a step's
        out = {}
        for step in steps:
            if step not in self.sites:
                continue
            ops: Counter[str] = Counter()
            sites: Counter[tuple[str, Location]] = Counter()  # (op, place) → count
            for (func, code, line), count in self.sites[step].items():
                name = str(func)
                ops[name] += count
                sites[(name, Location(code.co_filename, line) if code is not None else Location("<unknown>"))] += count
            out[str(step)] = {
                "total": sum(ops.values()),
                "ops": dict(sorted(ops.items())),
                "sites": _portable_sites(sites),
            }
        report.metrics["device_ops"] = out


FLEX_ATTENTION = os.path.join("torch", "nn", "attention", "flex_attention.py")


def _portable_sites(sites: Counter[tuple[str, Location]]) -> list[dict[str, Any]]:
    """Each issuing line as its place inside its package: the same line in another checkout is the same place. Its
    identity (function, source text, occurrence), which survives edits above it, is added by
    pytest_nosync.step_cost.identify_sites when the numbers are saved or a comparison needs it: it parses each
    file, most of what counting cost."""
    by_where: dict[Location, Counter[str]] = defaultdict(Counter)
    for (op, where), count in sites.items():
        by_where[where][op] += count
    out = []
    for where, ops in by_where.items():
        place = Location(source_identity.package_path(where.file), where.line)
        out.append({"where": str(place), "ops": dict(sorted(ops.items()))})
    return sorted(out, key=lambda site: site["where"])


def detectors(options: GuardOptions) -> list[Detector]:
    built: list[Detector] = []
    if "step_metrics" in options.checks:
        built.append(StepTimer(options))
    if "device_ops" in options.checks:
        built.append(OpCounter(options))
    return built
