"""What a detector is, and the little it may ask of the guard that arms it (StepContext).

A detector is built from the guard's GuardOptions, armed around a block, told about steps and regions, and
disarmed, also when the block raised. It reports through `ctx.record(...)` or returns findings from
`findings()`; it never looks at pytest, and it knows the guard only through the StepContext protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager, suppress
from typing import Any, Protocol

from ... import attribution
from ...findings import DENOISER_REGION, Finding, Frame, Kind, Mode, Phase, Report
from ..guard_options import GuardOptions


class CannotCheck(Exception):
    """Raised by `arm` when the check cannot run here; the message says why and what to do. The guard runs the
    block without that detector and fails the report with the sentence: green must mean checked."""


class StepContext(Protocol):
    """The guard as a detector sees it: where in the block code runs, and where findings go."""

    @property
    def pipeline(self) -> Any: ...

    @property
    def denoiser(self) -> Any:
        """The pipeline's denoiser module (GuardOptions.denoiser), or None."""

    @property
    def current_step(self) -> int | None:
        """The open step, None between steps."""

    @property
    def effective_step(self) -> int | None:
        """The step code belongs to: the open one, or between two steps the next."""

    @property
    def phase(self) -> str:
        """before_steps, step or after_steps."""

    @property
    def observing(self) -> bool:
        """False while the plugin does its own work inside the block (see `unobserved`)."""

    @property
    def step_ms(self) -> Mapping[int, float]:
        """Host milliseconds of each closed step."""

    @property
    def raised(self) -> bool:
        """The code under test raised in the block: its `error` finding is the verdict on what ran."""

    def unobserved(self) -> AbstractContextManager[None]:
        """The plugin's own work inside the block: detectors record nothing and raise nothing in it."""

    def record(self, kind: str, frames: Iterable[Frame], **details: Any) -> Finding:
        """Record a finding at the current step and region, blaming the first frame outside torch. `details`:
        hint, detail, source, count and data, as in Finding."""


class Detector:
    """Base class: override what you need. `disarm` must restore every global `arm` changed.

    The guard calls arm → (on_step_begin/on_step_end/on_region)* → disarm (also when the block raised), then
    `findings()`, `reconcile()`, `settled()` and `unchecked()`, judges, and hands the judged report to `conclude()`
    for metrics and files.
    """

    name = "detector"
    uses_profiler = False  # reads the tracer's torch.profiler trace (see tracer.TraceDetector.share_with)

    def __init__(self, options: GuardOptions) -> None:
        self.options = options

    def arm(self, ctx: StepContext) -> None:
        self.ctx = ctx

    def disarm(self) -> None:
        pass

    def on_step_begin(self, step: int) -> None:
        pass

    def on_step_end(self, step: int) -> None:
        pass

    def on_region(self, name: str, entering: bool) -> None:
        pass

    def findings(self) -> list[Finding]:
        return []

    def reconcile(self, findings: list[Finding]) -> list[Finding]:
        """Last word on the merged findings of all detectors (e.g. the profiler confirming syncs)."""
        return findings

    def conclude(self, report: Report) -> None:
        """After judging: add this detector's metrics and files to the report."""

    def use_trace_from(self, tracer: Any) -> None:
        """For `uses_profiler` detectors: read `tracer.load_trace()` (one profiler session per guard)."""

    def settled(self, findings: list[Finding]) -> None:
        """The findings once every detector has reconciled them (the profiler's own included), before `unchecked`."""

    def unchecked(self) -> str | None:
        """After the block: why this detector could not check what it claims (None: it did)."""
        return None

    def absorb_exception(self, exc: BaseException) -> bool:
        """Record a finding for an exception this detector caused (fail-fast mode). True if it did; `ended_by_check`
        marks one that is no fail-fast raise but a check stopping the call, which a harness then does not re-raise."""
        return False

    def fails_fast(self) -> bool:
        """Error mode raises here: inside a step, or anywhere when outside syncs count."""
        return self.options.mode == Mode.ERROR and (self.ctx.phase == Phase.IN_STEP or self.options.count_outside_steps)


def ended_by_check(exc: BaseException) -> None:
    """Mark `exc` as a check's own end of the call (a recompile under `fail_on_recompile`, a call the counting mode
    stopped), recorded in the report by the detector that absorbed it: a harness that calls the pipeline (the suite's
    guarded call) ends the call there. A fail-fast raise stays unmarked: it must reach the caller."""
    with suppress(AttributeError):
        exc._nosync_ended_by_check = True  # type: ignore[attr-defined]


def was_ended_by_check(exc: BaseException) -> bool:
    return getattr(exc, "_nosync_ended_by_check", False)


def denoiser_finding(
    kind: Kind, frames: list[Frame], step: int | None, hint: str, message: str, source: str
) -> Finding:
    """A finding the compiler reported of the denoiser's call in `step` (a graph break, a skipped capture): blamed on
    the first of `frames` (innermost first) outside torch, detailed by the message's first line."""
    where, stack = attribution.attribute(frames)
    return Finding(
        kind=kind,
        where=where,
        stack=stack,
        step=step or 0,
        phase=Phase.IN_STEP,
        region=DENOISER_REGION,
        hint=hint,
        detail=message.strip().splitlines()[0][:300],
        source=source,
    )
