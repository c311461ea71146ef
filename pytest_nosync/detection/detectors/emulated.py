"""Syncs seen on the emulated device: the CPU stand-in for a GPU (see pytest_nosync.emulation).

Every op on the stand-in device passes through one Python function; while this detector is armed it is
told about the ops that would synchronize a GPU, with the Python stack that ran them. "warn" records
each one; "error" also raises at the offending line, inside steps only (or anywhere with
`count_outside_steps`), like the CUDA detector.
"""

from __future__ import annotations

import types
from typing import Any

from ... import attribution, hints
from ...emulation import install, syncs
from ..guard_options import GuardOptions
from .base import Detector, StepContext

ERROR_MESSAGE = "pytest-nosync: a synchronizing operation on the emulated device inside a guarded step (fail-fast mode)"
_SCALAR_PATTERN = "scalar_cast"  # a value read back (.item() and friends) whose expression says nothing more
# Expression patterns that say more than the op's: the copy is the tail of torch.tensor(...), a tolist().
_REFINEMENTS = {"to_device": ("tensor_from_data",), "to_host": ("tolist", "format")}


class EmulatedSyncDetector(Detector):
    name = "emulate"

    def __init__(self, options: GuardOptions) -> None:
        super().__init__(options)
        self._previous: Any = None
        self._armed = False

    def arm(self, ctx: StepContext) -> None:
        super().arm(ctx)
        install()
        self._previous = syncs.set_listener(self._on_sync)
        self._armed = True

    def disarm(self) -> None:
        if self._armed:
            syncs.set_listener(self._previous)
            self._previous = None
            self._armed = False

    def _on_sync(self, event: syncs.EmulatedSync) -> None:
        frame = attribution.caller_frame()
        blamed = _first_outside(frame)
        expression, opname = attribution.executing_expression(blamed)
        pattern, hint = _diagnose(event, expression, opname)
        if pattern == "mask_index" and not event.pattern:  # a read of an index, not a mask's: what does it index?
            on_host = hints.indexed_on_host(attribution.subscripted(blamed, expression))
            pattern, hint = (on_host.pattern, on_host.hint) if on_host is not None else (pattern, hint)
        self.ctx.record(
            event.kind,
            attribution.frames_from(frame),
            hint=hint,
            detail=expression or event.op,
            source=self.name,
            data={"pattern": pattern, "op": event.op},
        )
        if self.fails_fast():
            raise RuntimeError(f"{ERROR_MESSAGE}: {event.op}")

    def absorb_exception(self, exc: BaseException) -> bool:
        # Recorded when raised: the exception only needs to be recognised as ours.
        return isinstance(exc, RuntimeError) and ERROR_MESSAGE in str(exc)


def _diagnose(event: syncs.EmulatedSync, expression: str, opname: str) -> tuple[str, str]:
    """(pattern, hint). The op's own pattern wins (`x[mask] = v` is a mask index whatever else the line
    says), unless the expression refines it (`torch.tensor(data, device=d)` is a copy to the device built
    from host data). A plain read of a value (`_local_scalar_dense`) is named by its expression: `.item()`,
    `float()`, an `if`, a shape."""
    diagnosis = hints.diagnose(expression, opname, default_kind=event.kind)
    same_kind = diagnosis.kind == event.kind
    if event.pattern:
        if same_kind and diagnosis.pattern in _REFINEMENTS.get(event.pattern, ()):
            return diagnosis.pattern, diagnosis.hint
        return event.pattern, event.hint or hints.hint_for(event.pattern)
    if same_kind and diagnosis.pattern != "unknown":
        return diagnosis.pattern, diagnosis.hint
    return _SCALAR_PATTERN, hints.hint_for(_SCALAR_PATTERN)


def _first_outside(frame: types.FrameType | None) -> types.FrameType | None:
    """The frame that gets the blame: the first outside torch and the plugin (whose expression we read)."""
    current = frame
    while current is not None and attribution.is_internal(current.f_code.co_filename):
        current = current.f_back
    return current or frame
