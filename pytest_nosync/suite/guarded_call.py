"""One pipeline call under a guard: the single place the suite, the regression cases, the context-parallel ranks
and the profile command run a pipeline guarded."""

from __future__ import annotations

from typing import Any

import torch

from ..detectors.dynamo import RECOMPILE_MESSAGE
from ..findings import Report
from ..guard import Guard
from ..guard_options import GuardOptions


def guarded_call(
    pipe: Any, kwargs: dict[str, Any], options: GuardOptions, *, test_id: str = "", check: str = "", target: str = ""
) -> Report:
    """Call `pipe(**kwargs)` under a guard whose steps end at the pipeline's step callback, and return its report.

    Build `kwargs` before calling: making them (host tensors copied to the device) is the harness's work, not the
    pipeline's, and must not happen inside the guard. A recompile under `fail_on_recompile` ends the call; the guard
    has recorded it as a finding, so it is not raised again.
    """
    guard = Guard(pipe, options, test_id=test_id, check=check, target=target)
    try:
        with guard, torch.no_grad():
            pipe(**kwargs, callback_on_step_end=guard.callback_on_step_end)
    except RuntimeError as exc:
        if RECOMPILE_MESSAGE not in str(exc):
            raise
    return guard.report
