"""The checks: one vocabulary shared by the marker, the guard, the suite and the docs, each check with its facts.

A check is what a test asks for (`checks=["syncs"]`): which detector module runs it, which finding kinds it reports,
where it runs under the CPU emulation, whether it traces with dynamo, whether it needs the sync machinery, its
default budget, whether the suite runs it per target, and how the suite runs it on a pipeline (the steps its measured
call needs, how long its warm-up lasts, whether it needs a GPU). Every list and rule about checks is derived from
CHECKS: no code asks for a check by its name.

Adding a check: one detector module (pytest_nosync/detection/detectors/<module>.py with `detectors(options) ->
list[Detector]`) and one entry here. Plain data: importing this module imports nothing heavy (the plugin reads it when
it registers its options).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from .findings import SYNC_KINDS, Kind


class Placement(str, Enum):
    """Where a check runs when the backend is the CPU emulation."""

    EMULATED_DEVICE = "emulated device"  # on the stand-in device, whose residency decides what a sync is
    PLAIN_CPU = "plain CPU"  # dynamo cannot trace the stand-in's wrapper tensors; its findings do not depend on it


@dataclass(frozen=True)
class Check:
    name: str
    help: str
    detector: str  # module of pytest_nosync.detection.detectors with `detectors(options) -> list[Detector]`
    kinds: frozenset[Kind]  # what its findings are (besides `error`, which any check may report)
    under_emulation: Placement = Placement.EMULATED_DEVICE
    dynamo: bool = False  # traces the denoiser with torch._dynamo
    per_step: bool = False  # measures each step's window (memory, ops, times, walks): it needs real step boundaries
    budget: int = 0  # failing events tolerated by default
    suite: bool = False  # the suite runs it on every target, as test_<name>
    opt_in: bool = False  # the suite and the census run it on every pipeline when --nosync-checks names it
    column: str = ""  # its column in a census table (the suite's checks): what its cells count
    per_steady_step: bool = False  # a census cell counts the most any step after the first had, not the total
    # How the suite's measured call runs it (suite.checks.plan): it runs at least its warm-up steps (not judged) and
    # then `judged_steps`; the warm-up is the first step, or, `warms_until_steady`, the steps the pipeline's own state
    # takes to stop growing (a multistep scheduler's history, a cache hook's fill: growth that is legitimate)
    judged_steps: int = 1
    warms_until_steady: bool = False
    # its first pass blames growth on no line; the same seeded call again, noting where each allocation is made
    # (`alloc_sites`, slower), names it
    locates_on_rerun: bool = False
    needs_gpu: str = ""  # why it runs on a GPU only ("" when it runs with any backend): a usage error elsewhere

    @property
    def needs_sync_backend(self) -> bool:
        """Whether it sees syncs, so the backend's sync machinery (CUDA's debug mode, the emulation) must exist."""
        return bool(self.kinds & SYNC_KINDS)


def _check(name: str, help: str, detector: str, *kinds: Kind, **facts: object) -> tuple[str, Check]:
    return name, Check(name, help, detector, frozenset(kinds), **facts)  # type: ignore[arg-type]


CHECKS: dict[str, Check] = dict(
    (
        _check("syncs", "no device-to-host read or blocking host-to-device copy inside a denoising step", "syncs",
               Kind.DTOH_SYNC, Kind.HTOD_SYNC, Kind.DEVICE_SYNC, suite=True, column="syncs per steady step",
               per_steady_step=True),
        _check("graph_breaks", "one dynamo pass over the denoiser: no graph break, no recompile between steps",
               "dynamo", Kind.GRAPH_BREAK, Kind.RECOMPILE, under_emulation=Placement.PLAIN_CPU, dynamo=True,
               suite=True, column="graph breaks, recompiles"),
        _check("recompiles", "no recompile of the compiled denoiser between steps", "dynamo", Kind.RECOMPILE,
               under_emulation=Placement.PLAIN_CPU, dynamo=True),
        _check("alloc_growth", "steady-state steps leave no memory behind (the line that allocated it)", "memory",
               Kind.ALLOC_GROWTH, per_step=True, suite=True, column="growth", judged_steps=2, warms_until_steady=True,
               locates_on_rerun=True),
        _check("host_overhead", "no module-tree walk in a steady-state step; host ms per step", "host_overhead",
               Kind.HOST_OVERHEAD, per_step=True, suite=True, column="tree walks"),
        _check("cudagraphs", "the denoiser compiled with mode='reduce-overhead' runs its steps as captured CUDA "
               "graphs: every skip inductor reports (mutated inputs, dynamic shapes, changed data pointers) and every "
               "op it partitions the step's graph around (CPU tensors, device copies) fails, at its line (a GPU only; "
               "inductor compiles for tens of seconds)", "cudagraphs", Kind.CUDAGRAPH_SKIP, Kind.CUDAGRAPH_PARTITION,
               opt_in=True, column="CUDA-graph skips, partitions",
               judged_steps=2,  # a CUDA graph tree warms a function up (the warm-up step), records it, then replays it
               needs_gpu="CUDA graphs capture device work"),
        _check("step_metrics", "records each step's host ms (outside the denoiser too), device ms and peak device "
               "memory, to compare with a saved run", "step_metrics", Kind.HOST_MS, Kind.DEVICE_MS, Kind.PEAK_MEMORY,
               per_step=True),
        _check("device_ops", "records the aten ops each step runs on the device, by op and source line (a dispatch "
               "mode: time figures of the same call are not taken)", "step_metrics", Kind.DEVICE_OPS, per_step=True),
    )
)  # fmt: skip

SUITE_CHECKS = tuple(name for name, check in CHECKS.items() if check.suite)  # each pipeline's, by default
PIPELINE_CHECKS = tuple(name for name, check in CHECKS.items() if check.suite or check.opt_in)  # --nosync-checks


class UnknownCheck(ValueError):
    """A check name nobody registered; the message lists the known ones."""


def lookup(names: Iterable[str]) -> tuple[Check, ...]:
    """The checks of `names`, or UnknownCheck naming the first unknown one."""
    names = tuple(names)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise UnknownCheck(f"unknown check {unknown[0]!r}; expected some of {', '.join(CHECKS)}")
    return tuple(CHECKS[n] for n in names)


def placement(names: Iterable[str]) -> Placement:
    """Where a block running `names` runs under the emulation: on the plain CPU only when every one of them does."""
    checks = lookup(names)
    if checks and all(c.under_emulation is Placement.PLAIN_CPU for c in checks):
        return Placement.PLAIN_CPU
    return Placement.EMULATED_DEVICE


def per_step(names: Iterable[str]) -> bool:
    """Whether any of `names` measures step windows (so its steps cannot be re-drawn once measured)."""
    return any(c.per_step for c in lookup(names))


def needs_sync_backend(names: Iterable[str]) -> bool:
    return any(c.needs_sync_backend for c in lookup(names))
