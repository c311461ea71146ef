"""Host overhead: module-tree walks in steady-state steps, and host time outside the denoiser.

Every walk of a module tree (`named_modules`, `modules`, `parameters`, `named_parameters`, `buffers`, ...)
goes through `Module.named_modules`; it is wrapped for the guarded block and counts the modules each walk
visits. What matters is how much of the tree a step visits, not whether a walk started: reading
`next(iter(m.parameters()))` visits one module, `transformer.dtype` on diffusers visits all of them. A
steady-state step (after `warmup_steps`) fails when one walk visits more than `max_walk_fraction` of the
denoiser's modules. Host time per step, and the part outside the denoiser's forward, is reported.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from typing import Any

import torch

from .. import attribution
from ..findings import IN_STEP, Finding
from ..patching import Patches
from .base import Detector

HINT = (
    "a module-tree walk in every step: cache what it computes (dtype, device, hook registries) "
    "once, outside the denoising loop"
)
DENOISER_REGION = "transformer_forward"
MIN_TREE = 64  # without a denoiser to compare with, a walk of this many modules is a full walk


class HostOverheadDetector(Detector):
    name = "host_overhead"

    def __init__(self, warmup_steps: int = 1, max_walk_fraction: float = 0.25, max_host_ms: float | None = None):
        self.warmup_steps = warmup_steps
        self.max_walk_fraction = max_walk_fraction
        self.max_host_ms = max_host_ms
        self._patches = Patches()
        self.visits: dict[int, int] = defaultdict(int)
        self.tree_size = 0
        self.denoiser_ms: dict[int, float] = defaultdict(float)
        self._region_started: list[float] = []

    def arm(self, guard: Any) -> None:
        super().arm(guard)
        denoiser = getattr(guard.pipeline, guard.denoiser, None) if guard.pipeline is not None else None
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
        guard = self.guard
        frames = attribution.raw_frames(caller, limit=24)
        step = guard.effective_step
        visited = 0
        try:
            for item in walk:
                visited += 1
                yield item
        finally:
            if step is not None:
                self.visits[step] += visited
            if visited > self.threshold():
                tree = f" of {self.tree_size}" if self.tree_size else ""
                guard.record(
                    "host_overhead",
                    frames,
                    hint=HINT,
                    detail=f"walks {visited}{tree} modules ({type(root).__name__}.named_modules)",
                    source=self.name,
                    data={"visited": visited, "tree_size": self.tree_size},
                )

    def on_region(self, name: str, entering: bool) -> None:
        if name != DENOISER_REGION:
            return
        if entering:
            self._region_started.append(time.perf_counter())
        elif self._region_started:
            step = self.guard.current_step
            elapsed = (time.perf_counter() - self._region_started.pop()) * 1e3
            if step is not None:
                self.denoiser_ms[step] += elapsed

    def threshold(self) -> float:
        return self.max_walk_fraction * self.tree_size if self.tree_size else float(MIN_TREE)

    def reconcile(self, findings: list[Finding]) -> list[Finding]:
        """Walks in warm-up steps (lazy initialisation) are not judged; steady-state ones are."""
        return [
            f
            for f in findings
            if not (f.kind == "host_overhead" and f.phase == IN_STEP and (f.step or 0) < self.warmup_steps)
        ]

    def findings(self) -> list[Finding]:
        overhead = self._overhead_ms()
        if self.max_host_ms is None or not overhead or statistics.median(overhead.values()) <= self.max_host_ms:
            return []
        median = statistics.median(overhead.values())
        return [
            Finding(
                kind="host_overhead",
                where="<host time>:0",
                step=max(overhead),
                phase=IN_STEP,
                region="loop",
                count=len(overhead),
                hint="host work between denoiser calls: move it before the loop or onto the device",
                detail=f"{median:.2f} ms/step outside the denoiser (budget {self.max_host_ms} ms)",
                source=self.name,
                data={"overhead_ms": overhead},
            )
        ]

    def _overhead_ms(self) -> dict[int, float]:
        steps = self.guard.step_ms.items()
        return {s: round(ms - self.denoiser_ms.get(s, 0.0), 3) for s, ms in steps if s >= self.warmup_steps}

    def metrics(self) -> dict[str, Any]:
        return {
            "module_visits_per_step": {str(k): self.visits.get(k, 0) for k in sorted(self.guard.step_ms)},
            "tree_size": self.tree_size,
            "host_ms_outside_denoiser": {str(k): v for k, v in self._overhead_ms().items()},
        }
