"""GuardOptions: everything a guard needs to know about what to check and how, as one typed value.

The plugin resolves each test's options (command line, then marker, then ini file, then these defaults) into
one GuardOptions; library users build it by hand or through `nosync_guard(**fields)`. Detectors receive it
whole and read the fields they need, so an option that reaches a detector is one field here (and, for the
plugin, one row of its option table).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ..checks import lookup
from ..findings import Mode
from ..policy import AllowEntry, KnownMatcher, Policy, parse_allow
from ..profiling.config import TraceBudgets, TraceConfig

MODES = tuple(Mode)
_FLAGS = ("count_outside_steps", "device_work", "alloc_sites", "profile")  # the fields that are True or False


@dataclass(frozen=True)
class GuardOptions:
    """What a guard checks and how it judges.

    checks: names from pytest_nosync.checks.CHECKS. backend: "auto", "cuda" or "emulate" (the guard resolves
    "auto" once, when it is entered). mode: "warn" collects every sync and fails once; "error" raises at the
    first one inside a step. budget/allow/count_outside_steps: how findings are judged (Policy). device_work: a
    sync check that saw nothing run on the device fails (False: the block knowingly runs host-only code). known: the
    known-issues baseline's matcher. trace: keep a torch.profiler trace of the block; trace_budgets: limits on
    the trace's figures. profile: confirm syncs with the profiler. denoiser: the pipeline attribute whose first
    call opens a step (comma-separated where steps run one of several). warmup_steps: steps before steady state
    (not judged by alloc_growth, host_overhead).
    max_walk_fraction: a module-tree walk visiting more of the denoiser than this fails host_overhead.
    alloc_sites: alloc_growth notes the line of every device allocation (slow), to name the one that grows.
    ops_steps: (first, last) steps whose ops device_ops counts, None for every step; outside them its counting mode
    is off (it costs a Python call per op), so the steps a caller drops cost nothing to count.
    """

    checks: tuple[str, ...] = ("syncs",)
    backend: str = "auto"
    mode: Mode = Mode.WARN
    budget: int = 0
    allow: tuple[AllowEntry, ...] = ()
    count_outside_steps: bool = False
    device_work: bool = True
    alloc_sites: bool = False
    profile: bool = False
    trace: TraceConfig | None = None
    trace_budgets: TraceBudgets = field(default_factory=TraceBudgets)
    known: KnownMatcher | None = None
    denoiser: str = "transformer"
    warmup_steps: int = 1
    max_walk_fraction: float = 0.25
    ops_steps: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        # Accept the spellings people type (a single check name, allow-list pairs); store the typed form.
        if isinstance(self.checks, str):
            object.__setattr__(self, "checks", (self.checks,))
        object.__setattr__(self, "checks", tuple(self.checks))
        if not all(isinstance(c, str) for c in self.checks):
            raise ValueError(f"checks must be check names (e.g. 'syncs'), got {self.checks!r}")
        lookup(self.checks)  # UnknownCheck (a ValueError) names an unknown one, where the options are made
        for name in _FLAGS:  # `device_work="False"` is a true string: it read as True
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 0:
            raise ValueError(f"budget must be a whole number of findings (0 or more), got {self.budget!r}")
        object.__setattr__(self, "allow", parse_allow(self.allow))
        if self.mode not in MODES:
            raise ValueError(f"mode must be 'warn' (collect every sync) or 'error' (fail fast), got {self.mode!r}")
        object.__setattr__(self, "mode", Mode(self.mode))

    @property
    def policy(self) -> Policy:
        return Policy(budget=self.budget, allow=self.allow, count_outside_steps=self.count_outside_steps)

    @property
    def traces(self) -> bool:
        """Whether a tracer runs: a trace may be kept, or budgets read one."""
        return (self.trace is not None and self.trace.active) or self.trace_budgets.any


FIELDS = frozenset(f.name for f in fields(GuardOptions))


def split_options(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(GuardOptions fields, the rest) of keyword arguments."""
    ours = {k: v for k, v in kwargs.items() if k in FIELDS}
    return ours, {k: v for k, v in kwargs.items() if k not in FIELDS}
