"""The `nosync` marker: its arguments, validated into guard options and a Policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..devices import GUARD_CHECKS
from ..policy import Policy, parse_allow
from ..profiling.budgets import TraceBudgets, parse_budgets

MARKER_HELP = (
    "nosync(checks=('syncs',), budget=0, allow=[(pattern, reason)], count_outside_steps=False, mode=None, "
    "trace_budgets={name: limit}): guard the test body (or the `nosync` fixture's blocks) for syncs and the "
    "other checks, and the trace's figures against budgets (e.g. {'max_gpu_idle_fraction': 0.2}); "
    "active with --nosync"
)
GPU_MARKER_HELP = "gpu: needs a CUDA device, or --nosync with the CPU emulation backend"

_ARGUMENTS = ("checks", "budget", "allow", "count_outside_steps", "mode", "trace_budgets")


class MarkerError(ValueError):
    """A bad `nosync` marker argument; the message names it."""


@dataclass(frozen=True)
class MarkerOptions:
    checks: tuple[str, ...] = ("syncs",)
    policy: Policy = field(default_factory=Policy)
    mode: str | None = None
    trace_budgets: TraceBudgets = field(default_factory=TraceBudgets)


def parse_marker(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> MarkerOptions:
    """Validate `@pytest.mark.nosync(...)` arguments. Raises MarkerError naming the bad argument."""
    if args:
        raise MarkerError(
            f"nosync marker takes keyword arguments only ({', '.join(_ARGUMENTS)}), got positional {args!r}"
        )
    unknown = [k for k in kwargs if k not in _ARGUMENTS]
    if unknown:
        raise MarkerError(f"nosync marker: unknown argument {unknown[0]!r}; expected one of {', '.join(_ARGUMENTS)}")
    checks = kwargs.get("checks", ("syncs",))
    if isinstance(checks, str):
        checks = (checks,)
    if not isinstance(checks, (tuple, list)) or not checks:
        raise MarkerError(f"nosync marker: 'checks' must be a non-empty list of check names, got {checks!r}")
    bad = [c for c in checks if c not in GUARD_CHECKS]
    if bad:
        raise MarkerError(
            f"nosync marker: 'checks' has unknown check {bad[0]!r}; expected some of {sorted(GUARD_CHECKS)}"
        )
    budget = kwargs.get("budget", 0)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise MarkerError(f"nosync marker: 'budget' must be a whole number >= 0, got {budget!r}")
    outside = kwargs.get("count_outside_steps", False)
    if not isinstance(outside, bool):
        raise MarkerError(f"nosync marker: 'count_outside_steps' must be True or False, got {outside!r}")
    mode = kwargs.get("mode")
    if mode not in (None, "warn", "error"):
        raise MarkerError(f"nosync marker: 'mode' must be 'warn' or 'error', got {mode!r}")
    allow_raw = kwargs.get("allow", ())
    if isinstance(allow_raw, (str, dict)) or not isinstance(allow_raw, (tuple, list)):
        raise MarkerError(f"nosync marker: 'allow' must be a list of (pattern, reason) pairs, got {allow_raw!r}")
    try:
        allow = parse_allow(allow_raw, source="nosync marker: 'allow'")
    except ValueError as exc:
        raise MarkerError(str(exc)) from None
    trace_raw = kwargs.get("trace_budgets", {})
    if not isinstance(trace_raw, dict):
        raise MarkerError(f"nosync marker: 'trace_budgets' must be a dict of budget names to limits, got {trace_raw!r}")
    try:
        trace_budgets = parse_budgets(trace_raw, source="nosync marker: 'trace_budgets'")
    except ValueError as exc:
        raise MarkerError(str(exc)) from None
    return MarkerOptions(
        checks=tuple(checks),
        policy=Policy(budget=budget, allow=allow, count_outside_steps=outside),
        mode=mode,
        trace_budgets=trace_budgets,
    )
