"""How a guarded block is traced: the export mode, the profiler's options and nsys mode; and the budgets on a
trace's figures (GuardOptions.trace_budgets, judged by profiling.budgets).

Plain data, read by the tracer detector (detectors.tracer) and built from the plugin's options or by hand:

    with nosync_guard(pipe, checks=("host_overhead",), trace=TraceConfig(mode="always")) as g: ...
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

TRACE_MODES = ("always", "on-failure", "never")
DEFAULT_DIR = "nosync-traces"
# The bound on a trace directory the plugin chose (export.prune): a trace with stacks of a real pipeline is tens of
# MB, and every run of `--nosync-trace always` adds one per test.
KEEP_TRACES = 50
KEEP_BYTES = 200 * 2**20


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


@dataclass(frozen=True)
class TraceBudgets:
    """Limits on a step's figures; None is off. Fractions are 0..1, times in ms, counts per step."""

    max_gpu_idle_fraction: float | None = None
    max_cpu_ms_between_denoiser_calls: float | None = None
    max_layout_transforms_per_step: int | None = None
    max_copies_per_step: int | None = None

    @property
    def any(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    def merged(self, override: TraceBudgets) -> TraceBudgets:
        """These budgets with every limit `override` sets replaced."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(
            {f.name: getattr(override, f.name) for f in fields(override) if getattr(override, f.name) is not None}
        )
        return TraceBudgets(**values)


NAMES = tuple(f.name for f in fields(TraceBudgets))
_INTEGER = {"max_layout_transforms_per_step", "max_copies_per_step"}


def parse_budgets(values: dict[str, Any] | list[str], source: str = "trace budgets") -> TraceBudgets:
    """From {"name": value} (a marker) or ["name=value", ...] (command line, ini). Raises ValueError with a
    sentence naming the bad entry."""
    pairs: list[tuple[str, Any]] = []
    if isinstance(values, dict):
        pairs = list(values.items())
    else:
        for entry in values:
            name, sep, value = str(entry).partition("=")
            if not sep:
                raise ValueError(f"{source}: expected NAME=VALUE (e.g. max_gpu_idle_fraction=0.2), got {entry!r}")
            pairs.append((name.strip(), value.strip()))
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name not in NAMES:
            raise ValueError(f"{source}: unknown budget {name!r}; expected one of {', '.join(NAMES)}")
        try:
            number = int(value) if name in _INTEGER else float(value)
        except (TypeError, ValueError):
            kind = "a whole number" if name in _INTEGER else "a number"
            raise ValueError(f"{source}: {name} must be {kind}, got {value!r}") from None
        if number < 0 or (name == "max_gpu_idle_fraction" and number > 1):
            raise ValueError(f"{source}: {name} out of range: {value!r}")
        out[name] = number
    return TraceBudgets(**out)
