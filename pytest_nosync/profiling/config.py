"""How a guarded block is traced: the export mode, the profiler's options and nsys mode (budgets on the trace are
GuardOptions.trace_budgets).

Plain data, read by the tracer detector (detectors.tracer) and built from the plugin's options or by hand:

    with nosync_guard(pipe, checks=("host_overhead",), trace=TraceConfig(mode="always")) as g: ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TRACE_MODES = ("always", "on-failure", "never")
DEFAULT_DIR = "nosync-traces"


@dataclass(frozen=True)
class ProfilerOptions:
    """torch.profiler's options. All off by default: each one makes the profiled run slower than the real one
    (shapes and stacks per op, memory per allocation, FLOP estimates)."""

    record_shapes: bool = False
    profile_memory: bool = False
    with_stack: bool = False
    with_flops: bool = False
    # wait, warmup, active: in denoising steps (the profiler steps at each step's end); None records them all
    schedule: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class TraceConfig:
    """mode: "always" keeps every trace, "on-failure" (default) keeps a failing block's, "never" keeps none
    (the block is still profiled when trace budgets are set: they are read off the trace).

    The file is `directory/<sanitised name>.json[.gz]` (the name defaults to the guard's, the test id), or
    `path` when given. `defer`: hand the keep-or-discard decision of a passing block to the caller (the plugin
    decides once the whole test has run) instead of discarding at once.
    """

    mode: str = "on-failure"
    directory: str = DEFAULT_DIR
    path: str | None = None
    gzip: bool = False
    profiler: ProfilerOptions = field(default_factory=ProfilerOptions)
    nsys: bool = False
    defer: Callable[[Any], None] | None = None

    def __post_init__(self) -> None:
        if self.mode not in TRACE_MODES:
            raise ValueError(f"trace mode must be one of {', '.join(TRACE_MODES)}, got {self.mode!r}")

    @property
    def active(self) -> bool:
        """Whether a trace may be kept (torch.profiler) or nsys ranges are wanted."""
        return self.nsys or self.mode != "never"


def parse_schedule(text: str) -> tuple[int, int, int]:
    """ "WAIT,WARMUP,ACTIVE" → (wait, warmup, active); ValueError with a sentence otherwise."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or int(parts[2]) < 1:
        raise ValueError(f"expected WAIT,WARMUP,ACTIVE as three whole numbers, ACTIVE >= 1 (e.g. 1,1,2), got {text!r}")
    wait, warmup, active = (int(p) for p in parts)
    return wait, warmup, active
