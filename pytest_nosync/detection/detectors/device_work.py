"""Whether the device did anything in the guarded block: a sync check that saw nothing run there checked nothing.

A test whose tensors stayed on the host (a CUDA-written test run on the CPU with a CPU fallback, a pipeline never
moved) would pass every sync check without one being possible. Under emulation the count is the ops that ran on
the emulated device; on CUDA, the allocations the caching allocator served (nearly every device op makes an
output), or a sync seen (`float()` of a tensor already on the GPU allocates nothing, and reads it). A pipeline whose
denoiser is not on the backend's device when the steps begin checked nothing either (a marked test may move its
pipeline in the body, before the steps).
"""

from __future__ import annotations

from typing import Any

import torch

from ...emulation import install, tensor
from ...findings import SYNC_KINDS, Finding, Report
from .. import devices
from ..guard_options import GuardOptions
from .base import Detector, StepContext

HOW = (
    "create the model and tensors on the device of the `nosync_device` fixture (`pytest_nosync.execution_device()` "
    "outside pytest), or mark the test `nosync(device_work=False)` if it knowingly guards host-only code"
)


class DeviceWorkDetector(Detector):
    name = "device_work"

    def __init__(self, options: GuardOptions) -> None:
        super().__init__(options)
        self._before = self._after = 0
        self._misplaced: str | None = None
        self._placed = False
        self._synced = False  # a sync was seen: the device was used, whatever was allocated

    def arm(self, ctx: StepContext) -> None:
        super().arm(ctx)
        self._before = self._after = self._count()

    def on_step_begin(self, step: int) -> None:
        if not self._placed:  # the first step: the pipeline must be where the backend observes it by now
            self._placed = True
            self._misplaced = _misplaced(self.ctx.denoiser, self.options, _device(self.options.backend))

    def disarm(self) -> None:
        self._after = self._count()

    def _count(self) -> int:
        if self.options.backend == "cuda":
            return devices.allocations("cuda")
        return tensor.ops_run[0]

    @property
    def work(self) -> int:
        return self._after - self._before

    def settled(self, findings: list[Finding]) -> None:
        self._synced = any(f.kind in SYNC_KINDS for f in findings)  # the profiler's too: after every reconcile

    def unchecked(self) -> str | None:
        if self._misplaced:
            return self._misplaced
        if self.work or self._synced or not self.options.device_work:
            return None
        seen = "no allocation on the GPU" if self.options.backend == "cuda" else "no op ran on the emulated device"
        return f"{seen} in this guarded block, so no sync could happen or be seen: {HOW}"

    def conclude(self, report: Report) -> None:
        key = "cuda_allocations" if self.options.backend == "cuda" else "emulated_ops"
        report.metrics[key] = self.work


def _device(backend: str) -> torch.device:
    if backend == "cuda":
        return torch.device("cuda")
    return install()


def _misplaced(module: Any, options: GuardOptions, device: torch.device) -> str | None:
    """Why a pipeline left elsewhere ran unobserved (it would pass), or None. A denoiser that offloading hooks onload
    when they run it (accelerate's, diffusers' group offloading) is where it runs, whatever it holds before."""
    parameters = getattr(module, "parameters", None)
    first = next(iter(parameters()), None) if parameters is not None else None
    if first is None or first.device.type == device.type or _offloaded(module):
        return None
    return (
        f"the {options.backend} backend observes tensors on {device}, but the pipeline's {options.denoiser} was on "
        f"{first.device} when the steps began: move the pipeline first, `pipe.to(nosync_device)` (the "
        "`nosync_device` fixture; `pytest_nosync.execution_device()` outside pytest)"
    )


def _offloaded(module: Any) -> bool:
    hooks = getattr(getattr(module, "_diffusers_hook", None), "hooks", {}) or {}
    return hasattr(module, "_hf_hook") or any("offload" in name for name in hooks)
