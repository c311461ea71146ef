"""CUDA syncs seen by torch's sync debug mode.

"warn" collects every sync: torch issues a UserWarning from the Python frame that called the syncing op,
and our `showwarning` takes the stack right there. "error" fails fast: torch raises at the offending line
(so `--pdb` stops on it); only inside the steps, so syncs before the loop don't stop the run early.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from ... import attribution, hints
from ...findings import Mode, Phase
from ..guard_options import GuardOptions
from .base import Detector, StepContext

SYNC_MESSAGE = "called a synchronizing CUDA operation"
_MODES = {"default": 0, Mode.WARN: 1, Mode.ERROR: 2}


def _set_mode(mode: int) -> None:
    torch._C._cuda_set_sync_debug_mode(mode)


class CudaSyncDetector(Detector):
    name = "sync_debug"

    def __init__(self, options: GuardOptions) -> None:
        super().__init__(options)
        self._previous_mode = 0
        self._catcher: Any = None

    def arm(self, ctx: StepContext) -> None:
        super().arm(ctx)
        torch.cuda.init()
        self._previous_mode = torch.cuda.get_sync_debug_mode()
        self._catcher = warnings.catch_warnings()
        self._catcher.__enter__()
        # "always": repeats of the same line must each be seen, whatever the filters say (-W error too).
        warnings.filterwarnings("always", message=SYNC_MESSAGE, category=UserWarning)
        warnings.filterwarnings("ignore", message="Synchronization debug mode is a prototype", category=UserWarning)
        self._forward = warnings.showwarning
        warnings.showwarning = self._on_warning
        _set_mode(self._mode_for(ctx.phase == Phase.IN_STEP))

    def disarm(self) -> None:
        try:
            _set_mode(self._previous_mode)
        finally:
            if self._catcher is not None:
                self._catcher.__exit__(None, None, None)
                self._catcher = None

    def _mode_for(self, in_step: bool) -> int:
        if self.options.mode == Mode.ERROR and (in_step or self.options.count_outside_steps):
            return _MODES[Mode.ERROR]
        return _MODES["warn"]

    def on_step_begin(self, step: int) -> None:
        _set_mode(self._mode_for(True))

    def on_step_end(self, step: int) -> None:
        _set_mode(self._mode_for(False))

    def _on_warning(
        self,
        message: Any,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        if SYNC_MESSAGE not in str(message):
            self._forward_warning(message, category, filename, lineno, file, line)
            return
        frame = attribution.caller_frame()
        self.record_sync(frame)

    def _forward_warning(self, message: Any, category: Any, filename: str, lineno: int, file: Any, line: Any):
        if self._forward is not warnings._showwarning_orig:  # type: ignore[attr-defined]
            self._forward(message, category, filename, lineno, file, line)
        else:
            warnings._showwarnmsg_impl(  # type: ignore[attr-defined]
                warnings.WarningMessage(message, category, filename, lineno, file, line)
            )

    def record_sync(self, frame: Any) -> None:
        expression, opname = attribution.executing_expression(frame)
        diagnosis = _diagnose(frame, expression, opname)
        self.ctx.record(
            diagnosis.kind,
            attribution.frames_from(frame),
            hint=diagnosis.hint,
            detail=expression,
            source=self.name,
            data={"pattern": diagnosis.pattern},
        )

    def absorb_exception(self, exc: BaseException) -> bool:
        if not isinstance(exc, RuntimeError) or SYNC_MESSAGE not in str(exc):
            return False
        frames = attribution.frames_from_traceback(exc.__traceback__)
        innermost = _innermost(exc.__traceback__)
        expression, opname = attribution.executing_expression(*innermost)
        diagnosis = _diagnose(innermost[0], expression, opname)
        self.ctx.record(
            diagnosis.kind,
            frames,
            hint=diagnosis.hint,
            detail=expression,
            source=self.name + ":error",
            data={"pattern": diagnosis.pattern},
        )
        return True


def _diagnose(frame: Any, expression: str, opname: str) -> hints.SyncDiagnosis:
    """The pattern of a sync; a subscript's from the tensor it indexes, which only the frame shows (a boolean mask of a
    device tensor and a host table indexed by a device timestep are the same opcode)."""
    diagnosis = hints.diagnose(expression, opname)
    if diagnosis.pattern == "mask_index":
        return hints.indexed_on_host(attribution.subscripted(frame, expression)) or diagnosis
    return diagnosis


def _innermost(tb: Any) -> tuple[Any, int | None, int | None]:
    """(frame, lasti, lineno) of the innermost frame outside torch and this plugin where an exception was raised: the
    line whose expression says what synced. (A wrapper of torch's, such as the emulation's `torch.tensor` that stays
    installed in a process that used it, would otherwise be read instead of the caller's line.)"""
    last = user = None
    while tb is not None:
        last = tb
        if not attribution.is_internal(tb.tb_frame.f_code.co_filename):
            user = tb
        tb = tb.tb_next
    chosen = user or last
    if chosen is None:
        return None, None, None
    return chosen.tb_frame, chosen.tb_lasti, chosen.tb_lineno
