"""Graph breaks and recompiles of the denoiser, from one dynamo pass.

For the guarded block the denoiser's forward is compiled with a backend that notes every graph dynamo hands it,
with the reason dynamo cut it there (`gm.compile_subgraph_reason`, the record `torch._dynamo.explain` reports),
and runs it eagerly: breaks, guards and recompiles happen in dynamo, before any backend, so no inductor time is
paid and the denoiser is traced once. The first step compiles; from its end on the stance is `fail_on_recompile`,
so a recompile in a later step raises where it happens and becomes a finding naming the failed guard and the user
line. `graph_breaks` reports both; `recompiles` only the recompiles.

Within the first step dynamo may recompile a frame until its `recompile_limit` (a hook's resume frame, once per layer
of another parameter shape, under layerwise casting or group offloading); then it runs that frame and everything it
calls uncompiled, so no break below it is seen. That is a recompile finding at the frame, from dynamo's own warning.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

import torch
from torch._dynamo.utils import counters

from ...emulation import cuda_map, is_emulated
from ...emulation import device as emulated_device
from ...findings import Finding, Frame, Kind, Report
from ...patching import Patches
from ..guard_options import GuardOptions
from . import trace_inputs
from .base import CannotCheck, Detector, StepContext, denoiser_finding, ended_by_check

BREAK_HINT = (
    "a graph break splits the compiled denoiser: keep Python control flow off tensor values, avoid "
    ".item()/.tolist()/print in forward, or mark the helper with torch.compiler.allow_in_graph"
)
RECOMPILE_HINT = (
    "a recompile between steps: a Python value that changes per step (a float timestep, a step index, a "
    "shape) is baked into the graph; pass it as a tensor or mark it dynamic"
)
_USER_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
_HEADER = re.compile(r"filename: '(?P<file>[^']+)', function name: '(?P<func>[^']+)', line number: (?P<line>\d+)")
_GUARD = re.compile(r"^\s*-\s*\d+/\d+:\s*(?P<guard>.+?)(\s+#.*)?$", re.MULTILINE)
RECOMPILE_MESSAGE = "Detected recompile"
LIMIT_HINT = (
    "dynamo gave up on this frame after its recompile limit: it and everything it calls run uncompiled, and no "
    "graph break below it is counted. A guard that fails per call (a parameter shape per layer, a hook per module) "
    "recompiles it; keep per-layer state out of the traced frame or raise torch._dynamo.config.recompile_limit"
)
_LIMIT_LOGGER = "torch._dynamo.convert_frame"
_LIMIT_MESSAGE = "torch._dynamo hit config."
_LIMIT_FUNCTION = re.compile(r"'(?P<func>[^']+)' \((?P<file>.+):(?P<line>\d+)\)$")
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<func>.+)_at_(?P<line>\d+)$")
# how dynamo's counters name the event, logged or not: its graph-break type, or before those types the bare message
_LIMIT_EVENT = re.compile(r"^(Dynamo recompile limit exceeded|(recompile|cache_size|accumulated_\w+)_limit reached)")


class DynamoDetector(Detector):
    name = "dynamo"

    def __init__(self, options: GuardOptions) -> None:
        super().__init__(options)
        self.report_breaks = "graph_breaks" in options.checks
        self._patches = Patches()
        self._stance: Any = None
        self._recorder: trace_inputs.CallRecorder | None = None
        self.compiles: list[int | None] = []  # the step each graph was compiled in
        self.breaks: list[tuple[int | None, Any]] = []  # (step, GraphCompileReason) of each graph cut by a break
        self.ops = 0
        self.calls = 0
        self._limit_log = _LimitLog(self)
        self._limits_before = self._limits_logged = self._limits_unlogged = 0

    def arm(self, ctx: StepContext) -> None:
        super().arm(ctx)
        denoiser = ctx.denoiser
        if not isinstance(denoiser, torch.nn.Module):
            raise CannotCheck(
                f"the {'/'.join(_checks(self.options))} check compiles the pipeline's denoiser "
                f"({self.options.denoiser!r}), and this guard has none: guard a pipeline (`nosync.guard(pipe)`)"
            )
        _check_traceable(denoiser)
        torch._dynamo.reset()
        recorder = self._recorder = trace_inputs.active()  # the calls' digests, for a verdict shared (suite)
        if recorder is not None:
            recorder.start()
        probing = recorder is not None and recorder.probe
        compiled = denoiser.forward if probing else torch.compile(denoiser.forward, backend=self._backend)

        # the forward's signature stays readable: a modular denoise block keeps only the keywords that
        # `inspect.signature(transformer.forward)` names (QwenImage's, LTX2's, Cosmos3's, Wan Animate 2's)
        @functools.wraps(denoiser.forward)
        def forward(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if recorder is not None:
                recorder.call(denoiser, self.ctx.current_step, args, kwargs, wrapper=forward)
            # dynamo must trace the model, not the emulation's CUDA mapping or its `.data` setter
            with cuda_map.paused(), emulated_device.tensor_data_as_is():
                return compiled(*args, **kwargs)

        self._patches.setattr(denoiser, "forward", forward)
        self._limits_before = _limits_counted()
        logging.getLogger(_LIMIT_LOGGER).addFilter(self._limit_log)

    def _backend(self, gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        step = self.ctx.current_step
        self.compiles.append(step)
        self.ops += sum(1 for node in gm.graph.nodes if node.op == "call_function")
        reason = getattr(gm, "compile_subgraph_reason", None)
        if reason is not None and reason.graph_break:
            self.breaks.append((step, reason))
        return gm.forward

    def on_step_end(self, step: int) -> None:
        if self._stance is None and not (self._recorder is not None and self._recorder.probe):
            self._stance = torch.compiler.set_stance("fail_on_recompile")

    def disarm(self) -> None:
        try:
            if self._stance is not None:
                self._stance.__exit__(None, None, None)
                self._stance = None
            self._patches.undo()
        finally:
            logging.getLogger(_LIMIT_LOGGER).removeFilter(self._limit_log)
            # a limit hit whose warning was not logged (dynamo's logger above WARNING) still counts, without a place
            self._limits_unlogged = max(0, _limits_counted() - self._limits_before - self._limits_logged)
            torch._dynamo.reset()  # leave no compiled code or cache entries behind for later tests

    def findings(self) -> list[Finding]:
        found = [self._unlogged_limits()] if self._limits_unlogged else []
        if not self.report_breaks:
            return found
        return found + [
            denoiser_finding(
                Kind.GRAPH_BREAK,
                [Frame(f.filename, f.lineno or 0, f.name, f.line or "") for f in reversed(reason.user_stack)],
                step,
                BREAK_HINT,
                str(reason.reason),
                self.name,
            )
            for step, reason in self.breaks
        ]

    def absorb_exception(self, exc: BaseException) -> bool:
        message = str(exc)
        if RECOMPILE_MESSAGE not in message:
            return False
        frames = [Frame(m["file"], int(m["line"]), m["func"]) for m in _USER_FRAME.finditer(message)]
        frames.reverse()  # innermost first
        header = _HEADER.search(message)
        if header:
            frames.append(Frame(header["file"], int(header["line"]), header["func"]))
        guard_failure = _GUARD.search(message)
        self._recompile(
            frames, RECOMPILE_HINT, f"recompile: {guard_failure['guard'] if guard_failure else 'guard failure'}"
        )
        ended_by_check(exc)
        return True

    def limit_hit(self, record: logging.LogRecord) -> None:
        """Dynamo's warning that a frame hit its recompile limit (args: limit name, limit, frame, last reason)."""
        args = record.args if isinstance(record.args, tuple) else ()
        if len(args) < 4:
            return
        self._limits_logged += 1
        limit, value, frame, reason = args[:4]
        match = _LIMIT_FUNCTION.search(str(frame))
        frames: list[Frame] = []
        if match:
            func, line = match["func"], int(match["line"])
            resumed = _RESUME.match(func)  # a resume frame starts at the break it resumes after
            if resumed:
                func, line = resumed["func"], int(resumed["line"])
            frames.append(Frame(match["file"], line, func))
        self._recompile(
            frames,
            LIMIT_HINT,
            f"recompile limit: dynamo hit config.{limit} ({value}) on {frame}; last reason: {reason}",
        )

    def _unlogged_limits(self) -> Finding:
        step = next((step for step in self.compiles if step is not None), 0)
        return denoiser_finding(
            Kind.RECOMPILE,
            [],
            step,
            LIMIT_HINT,
            f"recompile limit: dynamo stopped compiling {self._limits_unlogged} frame(s) at its recompile limit; its "
            "warning naming them was not logged (the torch._dynamo logger is above WARNING)",
            self.name,
        )

    def _recompile(self, frames: list[Frame], hint: str, detail: str) -> None:
        self.ctx.record(Kind.RECOMPILE, frames, hint=hint, detail=detail, source=self.name)

    def unchecked(self) -> str | None:
        if self.calls and not self.compiles:
            return (
                f"dynamo captured no graph of the denoiser in {self.calls} call(s): graph breaks and recompiles "
                "were not checked"
            )
        return None

    def conclude(self, report: Report) -> None:
        per_step: dict[str, int] = {}
        for step in self.compiles:
            key = str(step) if step is not None else "before_steps"
            per_step[key] = per_step.get(key, 0) + 1
        report.metrics["compiles_per_step"] = per_step
        if self.report_breaks:
            report.metrics["graph_count"] = len(self.compiles)
            # not graphs - 1 as `explain` counts: a call of other shapes (true CFG's shorter negative prompt)
            # compiles a second whole graph, which is no break
            report.metrics["graph_break_count"] = len(self.breaks)
            report.metrics["op_count"] = self.ops


class _LimitLog(logging.Filter):
    """Hands the detector dynamo's recompile-limit warning while it is armed (a filter on dynamo's logger: the warning
    is the only place dynamo says which frame it stopped compiling), and keeps it from dynamo's own handler, which
    wrote it raw into the terminal: the finding says it, with its place and hint. Dynamo's other records pass."""

    def __init__(self, detector: DynamoDetector) -> None:
        super().__init__()
        self.detector = detector

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(_LIMIT_MESSAGE):
            self.detector.limit_hit(record)
            return False
        return True


def _limits_counted() -> int:
    return sum(n for msg, n in counters["unimplemented"].items() if _LIMIT_EVENT.match(msg))


def _checks(options: GuardOptions) -> list[str]:
    return [c for c in options.checks if c in ("graph_breaks", "recompiles")]


def _check_traceable(module: torch.nn.Module) -> None:
    """Dynamo cannot trace the emulated device's wrapper tensors (it would trace the emulation itself)."""
    first = next(iter(module.parameters()), None)
    if first is not None and is_emulated(first):
        raise CannotCheck(
            "graph breaks and recompiles cannot be checked on the emulated device (dynamo would trace the emulation, "
            "not the model); they do not depend on the device: run this check on the plain CPU (the suite does; in a "
            "test whose only checks are graph_breaks/recompiles, put the pipeline on `cpu`: code written for `cuda` "
            "runs there under the emulation)"
        )


def detectors(options: GuardOptions) -> list[Detector]:
    return [DynamoDetector(options)]
