"""Allocation growth: device memory that a steady-state step leaves behind, and the line that allocated it.

How much: the device's own counter at each step end (the bytes CUDA's caching allocator was asked for, not its
rounded blocks: see `devices.live_and_block_bytes`; or the emulated device's live storages), which costs nothing
while steps are clean. Where, only when asked (`alloc_sites`, or a re-run of a growing call: the suite does this): a
dispatch mode notes the allocation site of every new storage and watches it die (a weakref on the storage, so a
leaked view still counts); a site whose live allocations grow at every judged step is the leak. Multistep schedulers
legitimately keep `order` model outputs: the first `warmup_steps` steps are never judged, and only growth that
continues is flagged. A block that allocated nothing on the device checked nothing, and says so.

Python's cyclic collector runs when it likes. Left to run, it freed garbage of earlier work (a previous test's
pipeline) in the middle of a step, which then looked as if it freed memory and hid what it kept; and it freed the
block's own garbage in one step or another, so that a verdict depended on when it ran (QwenImage Edit's flipped
between census runs on the H100). So the collector is paused for the block and run where the figures are read
(`devices.PausedCollector`): before the first step, and at each step end. A step's growth is then what it left
reachable, whenever Python would have collected: state a step replaces, reference cycles and all, is not growth.
Garbage of earlier work is frozen or freed before the first reading, so nothing a collection in the block frees, an
explicit `gc.collect()` included, is counted back.
"""

from __future__ import annotations

import itertools
import sys
import weakref
from collections import defaultdict
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from ... import attribution
from ...findings import Finding, Frame, Kind, Location, Phase, Report
from .. import devices
from ..guard_options import GuardOptions
from .base import Detector, StepContext

UNATTRIBUTED = Location("<unattributed>", 0)  # growth seen without allocation sites (alloc_sites off)
HINT = (
    "memory allocated here in every step stays alive: don't append per-step tensors to lists/caches, "
    "and overwrite or free state that the next step replaces"
)


class _Allocation:
    __slots__ = ("alive", "nbytes", "site", "step")

    def __init__(self, nbytes: int, site: tuple[Frame, ...], step: int | None) -> None:
        self.nbytes = nbytes
        self.site = site
        self.step = step
        self.alive = True


class AllocationTracker(TorchDispatchMode):
    """Notes every storage an op allocates, with its Python stack, and when it is freed."""

    # A higher-order op (FlexAttention's flex_attention) comes here whole and runs as itself, its output noted:
    # without this torch raises for every one the mode has no rule for.
    supports_higher_order_operators = True

    def __init__(self, current_step: Any) -> None:
        super().__init__()
        self._current_step = current_step
        self.allocations: list[_Allocation] = []
        self.live_bytes = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        inputs = {_storage_key(t) for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)}
        for tensor in tree_flatten(out)[0]:
            if isinstance(tensor, torch.Tensor):
                self._track(tensor, inputs)
        return out

    def _track(self, tensor: torch.Tensor, inputs: set[Any]) -> None:
        key = _storage_key(tensor)
        if key in inputs:  # a view or an in-place result: nothing new was allocated
            return
        owner = _storage(tensor)
        nbytes = owner.nbytes() if isinstance(owner, torch.UntypedStorage) else tensor.nbytes
        frame = sys._getframe(2)  # skip this method and __torch_dispatch__
        site = tuple(attribution.raw_frames(frame, limit=24))
        allocation = _Allocation(nbytes, site, self._current_step())
        self.allocations.append(allocation)
        self.live_bytes += nbytes
        try:
            weakref.finalize(owner, self._freed, allocation)
        except TypeError:  # not weak-referenceable: count it as short-lived rather than leaked
            self._freed(allocation)

    def _freed(self, allocation: _Allocation) -> None:
        allocation.alive = False
        self.live_bytes -= allocation.nbytes

    def live_by_site(self) -> dict[str, tuple[int, int, tuple[Frame, ...]]]:
        """where → (live allocations, live bytes, stack) of allocations still alive."""
        sites: dict[str, list[Any]] = defaultdict(lambda: [0, 0, ()])
        for a in self.allocations:
            if a.alive:
                where, stack = attribution.attribute(a.site)
                entry = sites[where]
                entry[0] += 1
                entry[1] += a.nbytes
                entry[2] = stack
        return {k: (v[0], v[1], v[2]) for k, v in sites.items()}


def _storage(tensor: torch.Tensor) -> Any:
    raw = getattr(tensor, "_raw", None)  # the emulated device keeps the values in a CPU tensor
    if isinstance(raw, torch.Tensor):
        tensor = raw
    try:
        return tensor.untyped_storage()
    except (RuntimeError, NotImplementedError):  # wrapper subclasses without a storage of their own
        return tensor


def _storage_key(tensor: torch.Tensor) -> Any:
    return id(_storage(tensor))


class MemoryDetector(Detector):
    name = "memory"

    def __init__(self, options: GuardOptions) -> None:
        super().__init__(options)
        self.warmup_steps = max(0, options.warmup_steps)
        self._tracker: AllocationTracker | None = None
        self._begin: dict[int, int] = {}
        self._end: dict[int, int] = {}
        self._block_begin: dict[int, int] = {}  # CUDA's block bytes, reported beside what growth is judged on
        self._block_end: dict[int, int] = {}
        self._sites: dict[int, dict[str, tuple[int, int, tuple[Frame, ...]]]] = {}
        self._allocations = 0
        self._paused: devices.PausedCollector | None = None

    def arm(self, ctx: StepContext) -> None:
        super().arm(ctx)
        self._allocations = devices.allocations(self.options.backend)
        self._paused = devices.PausedCollector().__enter__()
        if self.options.alloc_sites:
            try:
                self._tracker = AllocationTracker(lambda: ctx.effective_step)
                self._tracker.__enter__()
            except BaseException:  # the guard disarms only what armed: the paused collector is this one's to resume
                self._tracker = None
                self._paused.__exit__()
                self._paused = None
                raise

    def disarm(self) -> None:
        try:
            self._allocations = devices.allocations(self.options.backend) - self._allocations
            if self._tracker is not None:
                self._tracker.__exit__(None, None, None)
        finally:
            if self._paused is not None:
                self._paused.__exit__()
                self._paused = None

    def _read(self, live: dict[int, int], blocks: dict[int, int], step: int) -> None:
        live[step], blocks[step] = devices.live_and_block_bytes(self.options.backend)

    def on_step_begin(self, step: int) -> None:
        if not self._begin and self._paused is not None:  # what the block dropped before its first step is no step's
            self._paused.collect()
        self._read(self._begin, self._block_begin, step)

    def on_step_end(self, step: int) -> None:
        if self._paused is not None:
            self._paused.collect()
        self._read(self._end, self._block_end, step)
        if self._tracker is not None:
            self._sites[step] = self._tracker.live_by_site()

    def growth(self) -> dict[int, int]:
        """Bytes each step left behind: end(k) - end(k-1) (step 0: end(0) - begin(0))."""
        return _growth(self._begin, self._end)

    def judged_steps(self) -> list[int]:
        return [s for s in sorted(self._end) if s >= self.warmup_steps]

    def findings(self) -> list[Finding]:
        judged = self.judged_steps()
        growth = self.growth()
        if len(judged) < 2 or not all(growth.get(s, 0) > 0 for s in judged):
            return []
        per_step = [growth[s] for s in judged]
        out = []
        for where, stack, counts, sizes in self._growing_sites(judged) if self._tracker is not None else ():
            out.append(
                self._finding(
                    where,
                    stack,
                    detail=f"+{_human(sizes[-1] - sizes[0])} over steps {judged[0]}..{judged[-1]} "
                    f"({counts[-1] - counts[0]} more live allocations)",
                    data={"bytes_per_step": per_step, "site_live_bytes": sizes, "site_live_count": counts},
                )
            )
        if not out:
            how = (
                "no tracked allocation site grew"
                if self._tracker is not None
                else "run it with alloc_sites=True (marker nosync(alloc_sites=True)) to name the line that allocates it"
            )
            out.append(
                self._finding(
                    UNATTRIBUTED,
                    (),
                    detail=f"+{_human(sum(per_step))} over steps {judged[0]}..{judged[-1]} ({how})",
                    data={"bytes_per_step": per_step},
                )
            )
        return out

    def unchecked(self) -> str | None:
        judged = self.judged_steps()
        if not self._begin and not self.ctx.raised:  # growth is per step: a block without one passed as clean
            return (
                "growth is judged step by step, and the block saw no denoising step: pass the pipeline to the guard, "
                "mark its steps (`with g.step()`) or use whole_block=True"
            )
        if self._end and len(judged) < 2:  # (a step begun and never ended raised: its error is the verdict)
            ran = len(self._end)
            return (
                f"growth is judged on two steps after the scheduler's warm-up ({self.warmup_steps} step(s)), and the "
                f"block ran {ran} step(s): run at least {self.warmup_steps + 2}"
            )
        if self._allocations:
            return None
        return (
            f"nothing was allocated on the {self.options.backend} device in this guarded block, so no growth could be "
            "seen: put the model and tensors on the `nosync_device` fixture's device"
        )

    def _growing_sites(self, judged: list[int]) -> list[tuple[str, tuple[Frame, ...], list[int], list[int]]]:
        base = judged[0] - 1
        steps = ([base] if base in self._sites else []) + judged
        out = []
        for where in self._sites[judged[-1]]:
            counts = [self._sites[s].get(where, (0, 0, ()))[0] for s in steps]
            sizes = [self._sites[s].get(where, (0, 0, ()))[1] for s in steps]
            if all(b > a for a, b in itertools.pairwise(counts)):
                out.append((where, self._sites[judged[-1]][where][2], counts, sizes))
        return sorted(out, key=lambda s: s[3][-1] - s[3][0], reverse=True)

    def _finding(self, where: str, stack: tuple[Frame, ...], detail: str, data: dict[str, Any]) -> Finding:
        judged = self.judged_steps()
        return Finding(
            kind=Kind.ALLOC_GROWTH,
            where=where,
            stack=stack,
            step=judged[-1],
            phase=Phase.IN_STEP,
            region="loop",
            count=len(judged),
            hint=HINT,
            detail=detail,
            source=self.name,
            data=data,
        )

    def conclude(self, report: Report) -> None:
        report.metrics["alloc_bytes_per_step"] = {str(k): v for k, v in self.growth().items()}
        if self.options.backend == "cuda":  # the allocator's rounded blocks: growth there alone is not judged
            blocks = _growth(self._block_begin, self._block_end)
            report.metrics["alloc_block_bytes_per_step"] = {str(k): v for k, v in blocks.items()}
        report.metrics["alloc_warmup_steps"] = self.warmup_steps


def detectors(options: GuardOptions) -> list[Detector]:
    return [MemoryDetector(options)]


def _growth(begin: dict[int, int], end: dict[int, int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for step, amount in sorted(end.items()):
        before = end.get(step - 1, begin.get(step))
        if before is not None:
            out[step] = amount - before
    return out


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)
