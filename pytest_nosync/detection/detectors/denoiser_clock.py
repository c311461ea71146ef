"""Host time inside the denoiser's forward, per step: what "host ms outside the denoiser" subtracts from a step."""

from __future__ import annotations

import time
from collections import defaultdict

from ...findings import DENOISER_REGION


class DenoiserClock:
    def __init__(self) -> None:
        self.ms: dict[int, float] = defaultdict(float)
        self._started: list[float] = []

    def on_region(self, name: str, entering: bool, step: int | None) -> None:
        """A region edge; `step` is the step the exit lands in (None outside the steps: not counted)."""
        if name != DENOISER_REGION:
            return
        if entering:
            self._started.append(time.perf_counter())
        elif self._started:
            elapsed = (time.perf_counter() - self._started.pop()) * 1e3
            if step is not None:
                self.ms[step] += elapsed

    def outside(self, step: int, host_ms: float) -> float:
        """A step's host ms less the time spent in the denoiser."""
        return round(host_ms - self.ms.get(step, 0.0), 3)
