"""Explicit synchronizations: `torch.cuda.synchronize()`, `Event.synchronize()`, `torch.accelerator.synchronize()`,
and the emulated device's `synchronize()` (its streams' `synchronize()` calls it).

Sync debug mode does not flag these (they are asked for, not hidden), yet one in a step stalls the
pipeline just the same. The functions are wrapped for the guarded block and put back after it.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from ... import attribution, hints
from ...emulation.identity import DEVICE_TYPE
from ...findings import Kind
from ...patching import Patches
from ..guard_options import GuardOptions
from .base import Detector, StepContext

ERROR_MESSAGE = "pytest-nosync: explicit synchronize inside a guarded step (fail-fast mode)"


def _targets() -> list[tuple[Any, str]]:
    targets: list[tuple[Any, str]] = [(torch.cuda, "synchronize"), (torch.cuda.Event, "synchronize")]
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "synchronize"):
        targets.append((accelerator, "synchronize"))
    emulated = getattr(torch, DEVICE_TYPE, None)  # the emulated device's module, once installed: its streams call it
    if emulated is not None:
        targets += [(emulated, "synchronize"), (emulated.Event, "synchronize")]
    # once each: under the CUDA mapping torch.cuda.Event is the emulated device's Event class, wrapped twice otherwise
    return list({(id(owner), name): (owner, name) for owner, name in targets}.values())


class ExplicitSyncDetector(Detector):
    name = "explicit_sync"

    def __init__(self, options: GuardOptions) -> None:
        super().__init__(options)
        self._patches = Patches()

    def arm(self, ctx: StepContext) -> None:
        super().arm(ctx)
        for owner, name in _targets():
            original = getattr(owner, name)
            self._patches.setattr(owner, name, self._wrap(original))

    def disarm(self) -> None:
        self._patches.undo()

    def _wrap(self, original: Any) -> Any:
        detector = self

        @functools.wraps(original)
        def synchronize(*args: Any, **kwargs: Any) -> Any:
            ctx = detector.ctx
            if not ctx.observing:  # the plugin's own synchronize (a profiler stopping)
                return original(*args, **kwargs)
            frame = attribution.caller_frame()
            expression, _ = attribution.executing_expression(frame)
            ctx.record(
                Kind.DEVICE_SYNC,
                attribution.frames_from(frame),
                hint=hints.hint_for("synchronize"),
                detail=expression or "synchronize()",
                source=detector.name,
                data={"pattern": "synchronize"},
            )
            if detector.fails_fast():
                raise RuntimeError(ERROR_MESSAGE)
            return original(*args, **kwargs)

        return synchronize

    def absorb_exception(self, exc: BaseException) -> bool:
        # Already recorded when it was raised.
        return isinstance(exc, RuntimeError) and ERROR_MESSAGE in str(exc)
