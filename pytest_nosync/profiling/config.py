"""How a guarded block is traced: the export mode, the profiler's options and nsys mode (budgets on the trace are
GuardOptions.trace_budgets).

Plain data, read by the tracer detector (detectors.tracer) and built from the plugin's options or by hand:

    with nosync_guard(pipe, checks=("host_overhead",), trace=TraceConfig(mode="always")) as g: ...
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    """mode: "always" profiles every guarded block and keeps its trace; "on-failure" (default) profiles nothing while
    blocks pass: a failing suite call is re-run under the profiler (suite.guarded_call), a block that cannot be re-run
    (a marker's, a fixture's) gets its trace with "always"; "never" keeps none. Trace budgets profile every block
    in every mode (they are read off the trace) and keep a failing block's trace unless the mode is "never".

    The file is `directory/<sanitised name>.json[.gz]` (the name is the guard's test id), or `path` when given.
    """

    mode: str = "on-failure"
    directory: str = DEFAULT_DIR
    path: str | None = None
    gzip: bool = False
    profiler: ProfilerOptions = field(default_factory=ProfilerOptions)
    nsys: bool = False

    def __post_init__(self) -> None:
        if self.mode not in TRACE_MODES:
            raise ValueError(f"trace mode must be one of {', '.join(TRACE_MODES)}, got {self.mode!r}")

    @property
    def active(self) -> bool:
        """Whether a block is traced as it runs: every block in "always" mode, or NVTX ranges for nsys."""
        return self.nsys or self.mode == "always"


def parse_schedule(text: str) -> tuple[int, int, int]:
    """ "WAIT,WARMUP,ACTIVE" → (wait, warmup, active); ValueError with a sentence otherwise."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or int(parts[2]) < 1:
        raise ValueError(f"expected WAIT,WARMUP,ACTIVE as three whole numbers, ACTIVE >= 1 (e.g. 1,1,2), got {text!r}")
    wait, warmup, active = (int(p) for p in parts)
    return wait, warmup, active
