"""pytest-nosync: keep diffusion pipelines free of CPU<->GPU syncs, graph breaks and per-step growth.

Library use, without pytest:

    from pytest_nosync import nosync_guard

    with nosync_guard(pipe) as g:
        pipe(prompt_embeds=..., num_inference_steps=2, callback_on_step_end=g.callback_on_step_end)
    print(render_report(g.report))
"""

from .devices import execution_device
from .findings import Finding, Frame, Report
from .guard import Guard, nosync_guard
from .guard_options import GuardOptions
from .policy import AllowEntry, Policy
from .render import render_report

__all__ = [
    "AllowEntry",
    "Finding",
    "Frame",
    "Guard",
    "GuardOptions",
    "Policy",
    "Report",
    "execution_device",
    "nosync_guard",
    "render_report",
]
__version__ = "0.1.0"
