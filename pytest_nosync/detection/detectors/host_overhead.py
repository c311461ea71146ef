"""Host overhead: module-tree walks in steady-state steps, and host time outside the denoiser.

Every walk of a module tree (`named_modules`, `modules`, `parameters`, `named_parameters`, `buffers`, ...)
goes through `Module.named_modules`; it is wrapped for the guarded block and counts the modules each walk
visits. What matters is how much of the tree a step visits, not whether a walk started: reading
`next(iter(m.parameters()))` visits one module, `transformer.dtype` on diffusers visits all of them. A
steady-state step (after `warmup_steps`) fails when one walk visits more than `max_walk_fraction` of the
denoiser's modules. Host time per step, and the part outside the denoiser's forward, is reported.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from typing import Any

import torch

from ... import attribution
from ...findings import Finding, Kind, Phase, Report
from ...patching import Patches
from ..guard_options import GuardOptions
from .base import Detector, StepContext
from .denoiser_clock import DenoiserClock

HINT = (
    "a module-tree walk in every step: cache what it computes (dtype, device, hook registries) "
    "once, outside the denoising loop"
)
MIN_TREE = 64  # without a denoiser to compare with, a walk of this many modules is a full walk


class HostOverheadDetector(Detector):
    name = "host_overhead"

    def __init__(self, options: GuardOptions) -> None:
        super().__init__(options)
        self.warmup_steps = options.warmup_steps
        self.max_walk_fraction = options.max_walk_fraction
        self._patches = Patches()
        self.visits: dict[int, int] = defaultdict(int)
        self.tree_size = 0
        self.denoiser = DenoiserClock()

    def arm(self, ctx: StepContext) -> None:
        super().arm(ctx)
        denoiser = ctx.denoiser
        if isinstance(denoiser, torch.nn.Module):
            self.tree_size = sum(1 for _ in denoiser.named_modules())
        original = torch.nn.Module.named_modules
        detector = self

        def named_modules(module: Any, memo: Any = None, prefix: str = "", remove_duplicate: bool = True) -> Any:
            walk = original(module, memo, prefix, remove_duplicate)
            if memo is not None:  # the recursion inside one walk
                return walk
            return detector._counted(module, walk, sys._getframe(1))

        self._patches.setattr(torch.nn.Module, "named_modules", named_modules)

    def disarm(self) -> None:
        self._patches.undo()

    def _counted(self, root: Any, walk: Any, caller: Any) -> Any:
        ctx = self.ctx
        step = ctx.effective_step
        visited = 0
        try:
            for item in walk:
                visited += 1
                yield item
        finally:
            if step is not None:
                self.visits[step] += visited
            if visited > self.threshold():
                # The stack is read only for a walk worth reporting, from the caller's frame, still on the line that
                # consumed the walk: most walks are short (a `next(iter(m.parameters()))`) and cost no stack.
                tree = f" of {self.tree_size}" if self.tree_size else ""
                ctx.record(
                    Kind.HOST_OVERHEAD,
                    attribution.raw_frames(caller, limit=24),
                    hint=HINT,
                    detail=f"walks {visited}{tree} modules ({type(root).__name__}.named_modules)",
                    source=self.name,
                    data={"visited": visited, "tree_size": self.tree_size},
                )

    def on_region(self, name: str, entering: bool) -> None:
        self.denoiser.on_region(name, entering, self.ctx.current_step)

    def threshold(self) -> float:
        return self.max_walk_fraction * self.tree_size if self.tree_size else float(MIN_TREE)

    def reconcile(self, findings: list[Finding]) -> list[Finding]:
        """Walks in warm-up steps (lazy initialisation) are not judged; steady-state ones are."""
        return [
            f
            for f in findings
            if not (f.kind == "host_overhead" and f.phase == Phase.IN_STEP and (f.step or 0) < self.warmup_steps)
        ]

    def unchecked(self) -> str | None:
        ran = len(self.ctx.step_ms)
        if ran > self.warmup_steps:
            return None
        return (
            f"walks are judged in the steps after the first {self.warmup_steps} (warm-up: lazy initialisation walks "
            f"once), and the block ran {ran} step(s): run at least {self.warmup_steps + 1}"
        )

    def _overhead_ms(self) -> dict[int, float]:
        steps = self.ctx.step_ms.items()
        return {s: self.denoiser.outside(s, ms) for s, ms in steps if s >= self.warmup_steps}

    def conclude(self, report: Report) -> None:
        report.metrics["module_visits_per_step"] = {str(k): self.visits.get(k, 0) for k in sorted(self.ctx.step_ms)}
        report.metrics["tree_size"] = self.tree_size
        report.metrics["host_ms_outside_denoiser"] = {str(k): v for k, v in self._overhead_ms().items()}


def detectors(options: GuardOptions) -> list[Detector]:
    return [HostOverheadDetector(options)]
