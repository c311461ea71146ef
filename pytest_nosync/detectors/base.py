"""What a detector is: something the guard arms around a block, tells about steps, and disarms."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..findings import Finding

if TYPE_CHECKING:
    from ..guard import Guard


class Detector:
    """Base class: override what you need. `disarm` must restore every global `arm` changed.

    The guard calls arm → (on_step_begin/on_step_end/on_region)* → disarm, disarm also when the block
    raised, then `findings()`, `reconcile()`, and once the report is judged `metrics()` and `artifacts()`.
    Detectors report through `guard.record(...)` or return findings from `findings()`; they never look at
    pytest.
    """

    name = "detector"
    uses_profiler = False  # reads a torch.profiler trace: shares the tracer's when a guard traces

    def arm(self, guard: Guard) -> None:
        self.guard = guard

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

    def metrics(self) -> dict[str, Any]:
        return {}

    def artifacts(self) -> dict[str, str]:
        """Files this detector wrote for the report (name → path), e.g. the trace."""
        return {}

    def use_trace_from(self, tracer: Any) -> None:
        """For `uses_profiler` detectors: read `tracer.load_trace()` instead of running a profiler of its own."""

    def absorb_exception(self, exc: BaseException) -> bool:
        """Record a finding for an exception this detector caused (fail-fast mode). True if it did."""
        return False
