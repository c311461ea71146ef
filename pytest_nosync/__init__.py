"""pytest-nosync: keep diffusion pipelines free of CPU<->GPU syncs, graph breaks and per-step growth.

Library use, without pytest:

    from pytest_nosync import nosync_guard

    with nosync_guard(pipe) as g:
        pipe(prompt_embeds=..., num_inference_steps=2, callback_on_step_end=g.callback_on_step_end)
    print(render_report(g.report))

The names below are imported on first use: pytest loads this package's plugin in every run of an environment that
has it installed, and a run that checks nothing should not import torch for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .detection.devices import execution_device
    from .detection.guard import Guard, nosync_guard
    from .detection.guard_options import GuardOptions
    from .findings import Finding, Frame, Report
    from .policy import AllowEntry, Policy
    from .render import render_report
    from .suite.scenarios import NotApplicable, apply_scenario

_HOMES = {
    "AllowEntry": "policy",
    "Finding": "findings",
    "Frame": "findings",
    "Guard": "detection.guard",
    "GuardOptions": "detection.guard_options",
    "NotApplicable": "suite.scenarios",
    "Policy": "policy",
    "Report": "findings",
    "apply_scenario": "suite.scenarios",
    "execution_device": "detection.devices",
    "nosync_guard": "detection.guard",
    "render_report": "render",
}
__all__ = [
    "AllowEntry",
    "Finding",
    "Frame",
    "Guard",
    "GuardOptions",
    "NotApplicable",
    "Policy",
    "Report",
    "apply_scenario",
    "execution_device",
    "nosync_guard",
    "render_report",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})  # a name imported on first use is in both
