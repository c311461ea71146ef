"""Where detection runs: which backend ("cuda" or the CPU emulation) and the device pipelines run on under it.

`resolve` turns "auto" into a concrete backend once (the plugin does it at configure time, a library guard when it
is entered); `execution_device` is where a pipeline goes under that backend. Also the device's memory counters and
the collector paused for a guarded block, and `environment`: what a run report says the run ran on (versions, the
device), read here because this module keeps torch's real answer to whether CUDA is available.
"""

from __future__ import annotations

import gc
import platform
import sys
from collections.abc import Callable, Iterable
from typing import Any

import torch

from .. import emulation
from ..checks import Placement, placement
from ..emulation import cuda_map, tensor
from ..findings import BACKENDS
from ..run_report import diffusers_location, diffusers_version

_cuda_is_available = torch.cuda.is_available  # the real answer, whatever the CUDA mapping of the emulation says

# Why a test that checks only on a GPU skips on a machine without one: one reason for all of them, so that the run's
# summary counts them on one line (plugin.NotRun).
CUDA_ONLY = "CUDA-only, and no CUDA device is visible here"


class BackendUnavailable(RuntimeError):
    """The chosen backend cannot run here; the message says what to do instead."""


def cuda_available() -> bool:
    return _cuda_is_available()


def cuda_device_count() -> int:
    return torch.cuda.device_count()


def plain_device() -> torch.device:
    """Where a test runs without checking: cuda where a GPU is visible, else the CPU."""
    return torch.device("cuda" if cuda_available() else "cpu")


def plain_dtype() -> torch.dtype:
    """The dtype a test runs in without checking: bfloat16 where a GPU is visible, else float32."""
    return torch.bfloat16 if cuda_available() else torch.float32


def environment(backend: str = "", dtype: str = "") -> dict[str, Any]:
    """What a reader needs to reproduce a run: versions, device, backend, and the dtype its pipelines ran in."""
    diffusers = diffusers_version()
    device = None
    if cuda_available():
        try:
            device = torch.cuda.get_device_name()
        except Exception:
            device = "cuda (name unavailable)"
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": str(torch.__version__),  # a str subclass that xdist's transport (execnet) cannot send
        "cuda": torch.version.cuda,
        "diffusers": diffusers,
        "diffusers_path": diffusers_location(),
        "device": device or "cpu",
        "backend": backend,
        **({"dtype": dtype} if dtype else {}),
    }


def resolve(name: str, syncs: bool = True) -> str:
    """'auto' → 'cuda' when a CUDA device is visible, else 'emulate'. With syncs=False the sync machinery
    need not exist (allocation and host checks run anywhere)."""
    if name not in BACKENDS:
        raise BackendUnavailable(f"unknown backend {name!r}: choose one of {', '.join(BACKENDS)}")
    if name == "auto":
        name = "cuda" if cuda_available() else "emulate"
    if name == "cuda" and not cuda_available():
        raise BackendUnavailable(
            "no CUDA device is visible: run on a GPU runner (`pytest -m gpu --nosync`), "
            "or choose CPU emulation with `--nosync-backend emulate`"
        )
    if syncs and name == "emulate":
        reason = emulation.unavailable_reason()
        if reason is not None:
            raise BackendUnavailable(f"CPU emulation is not available: {reason}")
    return name


def execution_device(backend: str = "auto") -> torch.device:
    """The device a pipeline runs on under `backend` ('auto' resolved first): cuda, or the emulated device."""
    if resolve(backend) == "cuda":
        return torch.device("cuda")
    return emulation.install()  # creates the stand-in device on first use (see pytest_nosync.emulation.device)


def map_cuda(checks: Iterable[str]) -> Callable[[], None] | None:
    """Send CUDA-written code (`.to("cuda")`, `device="cuda"`, `torch.cuda.*`) to the emulated device for a block of
    `checks` (emulation.cuda_map) until the returned callable undoes it. None, and CUDA left alone, where a mapping
    is in place already (the plugin's, for its run: it decides) or the emulation cannot be installed here."""
    if cuda_map.active() or emulation.unavailable_reason() is not None:
        return None
    return cuda_map.install(for_checks(execution_device("emulate"), checks))


def dtype_problem(dtype_name: str, device_name: str | None, backend: str) -> str | None:
    """Why the run's device (`device_name`, else the backend's) cannot compute in `dtype_name`, or None: a GPU without
    bfloat16 kernels (before Ampere), or a device whose convolution, matmul, attention or normalization refuses the
    dtype (a few ops in it, once)."""
    dtype = getattr(torch, dtype_name)
    device = torch.device(device_name) if device_name else execution_device(backend)
    bf16 = torch.cuda.is_bf16_supported
    if device.type == "cuda" and dtype == torch.bfloat16 and not bf16(including_emulation=False):
        name = torch.cuda.get_device_name(device)
        return f"{name} has no bfloat16 kernels (before Ampere): run float16 or float32 there"
    try:
        x = torch.ones(1, 2, 4, 4, device=device, dtype=dtype)
        y = torch.nn.functional.conv2d(x, torch.ones(2, 2, 1, 1, device=device, dtype=dtype))
        y = torch.nn.functional.scaled_dot_product_attention(y, y, y)
        torch.nn.functional.group_norm(y @ y, 1).softmax(-1)
    except (RuntimeError, NotImplementedError, TypeError) as exc:
        first = (str(exc).splitlines() or [""])[0][:200]
        return f"the {device.type} device cannot run it: {first}"
    return None


def for_checks(device: torch.device, checks: Iterable[str]) -> torch.device:
    """Where a block of `checks` runs when the backend's device is `device`: the plain CPU under the emulation when
    every check runs there (checks.Placement: dynamo cannot trace the stand-in's tensors), else `device`."""
    if emulation.is_emulated(device) and placement(checks) is Placement.PLAIN_CPU:
        return torch.device("cpu")
    return device


def allocated_bytes(backend: str) -> int:
    """Bytes of device memory in use now: CUDA's caching allocator, or the emulated device's live storages."""
    if backend == "cuda":
        return _cuda_stat("allocated_bytes", "current")
    return tensor.memory.allocated


def live_and_block_bytes(backend: str) -> tuple[int, int]:
    """(bytes the live device tensors asked for, bytes of the blocks holding them), from one read of CUDA's stats.
    Growth is judged on the first. CUDA's caching allocator counts a block's size (`allocated_bytes`): rounded up, and
    a cached block reused whole for a smaller request (a remainder under 1 MiB is not split off) counts that remainder
    too. Which block a request gets depends on what the process did before, so a step that replaced its state with
    tensors of the same sizes read as growth in one census run and not in the next. `requested_bytes` counts what was
    asked; the emulated device counts its storages exactly (both figures)."""
    if backend == "cuda":
        stats = torch.cuda.memory_stats_as_nested_dict()
        live, blocks = (int(stats.get(name, {}).get("all", {}).get("current", 0)) for name in _LIVE_AND_BLOCKS)
        return live, blocks
    return tensor.memory.allocated, tensor.memory.allocated


_LIVE_AND_BLOCKS = ("requested_bytes", "allocated_bytes")


def peak_bytes(backend: str) -> int:
    """The most bytes of device memory in use at once since the last `reset_peak` (host-side figures: no sync)."""
    if backend == "cuda":
        return _cuda_stat("allocated_bytes", "peak")
    return tensor.memory.peak


def reset_peak(backend: str) -> None:
    if backend == "cuda":
        torch.cuda.reset_peak_memory_stats()
        return
    tensor.memory.reset_peak()


_collecting_own = False  # a detector's own collection runs now: no CollectorFrees counts it back


run_froze_heap = False  # a checking pytest run froze what its collection imported (plugin.heap_freeze)
_modules_at_run_freeze = 0  # how many modules were imported when the run last froze
# Modules imported since the run's last freeze that make the next block freeze them for the run. A check that imports
# inductor lazily (an in-process compile: torch._inductor, sympy, triton) adds about 800 modules and 150,000 objects,
# a seventh of a second a full collection on the CPU; a diffusers model imported on first use adds a handful.
IMPORTS_WORTH_FREEZING = 100


def freeze_for_the_run() -> None:
    """In a checking run: freeze what exists now (gc.freeze) until the run's end (plugin.heap_freeze unfreezes)."""
    global run_froze_heap, _modules_at_run_freeze
    gc.freeze()
    run_froze_heap = True
    _modules_at_run_freeze = len(sys.modules)


_left_frozen = False  # a block froze on top of a caller's freeze and left it: the process has a freeze, and a big one
_own_freezes = 0  # blocks that froze the heap themselves and have not ended: one inside them freezes nothing more


class PausedCollector:
    """Python's cyclic collector paused for a guarded block and run only when `collect()` says (a context manager;
    the collector's state is restored on exit, also when the block raises).

    A collection at a moment of Python's choosing frees garbage of earlier work, or the block's own, in one step or
    another: memory figures read then depend on when it ran. `collect()` frees everything the block dropped, reference
    cycles included, and no CollectorFrees counts it back. It scans only what the block made: the objects that were
    there before are frozen for the block (gc.freeze), so a full collection costs milliseconds, where one of a process
    with torch, transformers and diffusers imported took a fifth of a second here. Garbage of earlier work stays put
    until the block ends.

    Where the process froze objects itself, the caller's freeze is never undone (gc.unfreeze would take all of it):
    - a checking pytest run froze what its collection imported (plugin.heap_freeze, `run_froze_heap`): a full
      collection scans what the run made since, a few objects, so nothing more is frozen (frozen, a previous check's
      garbage would stay until the run's end), unless the run imported many modules since its last freeze
      (`IMPORTS_WORTH_FREEZING`): then what exists at the block's start is frozen for the run, modules and all. That
      happens a few times a run (inductor's first compile); a reference cycle alive then that dies later (a test's
      pipeline) stays until the run's end;
    - any other freeze (a serving runtime's `gc.freeze()`, an interpreter that starts with objects frozen, as the
      device's Python 3.12 does): what exists when the block begins is frozen on top of it, as if the process had
      called `gc.freeze()` there, and stays frozen after the block. Left to scan everything made since the caller's
      freeze — torch, diffusers, the models — a guarded call cost 20x a plain one on the CPU, 50x on an H200; a
      reference cycle of those objects that dies later is not collected, as for any frozen object."""

    def __enter__(self) -> PausedCollector:
        global _left_frozen, _own_freezes
        self._resume = gc.isenabled()
        gc.disable()
        self._froze = False
        if _own_freezes:  # a block inside another's own freeze: that one is not a caller's, and covers this one
            return self
        # gc.get_freeze_count() walks the frozen objects: 44 ms a block once a run or a block froze the imports
        self._froze = not run_froze_heap and not _left_frozen and gc.get_freeze_count() == 0
        if run_froze_heap:
            self.collect()  # garbage made since the run's freeze (the census's: a previous check's) goes now
            if len(sys.modules) - _modules_at_run_freeze >= IMPORTS_WORTH_FREEZING:
                # modules live for the run: left unfrozen, every collection of every later block scanned them (the
                # main job's growth twins took 20 s on an H200 after a twin compiled with inductor, 1.5 s alone). What
                # else is alive now is frozen with them: a few times a run, not at every block (see the docstring)
                freeze_for_the_run()
            return self
        try:
            self.collect(1)  # young garbage (a previous test's pipeline) goes now, not frozen for the block
            gc.freeze()
        except BaseException:  # interrupted: no exit will run, so the collector is left as it was
            if self._resume:
                gc.enable()
            raise
        _own_freezes += self._froze  # counted only once frozen: an interrupted entry leaves no count behind
        _left_frozen = _left_frozen or not self._froze  # on top of a caller's freeze: it stays (see the docstring)
        return self

    def collect(self, generation: int = 2) -> None:
        global _collecting_own
        _collecting_own = True
        try:
            gc.collect(generation)
        finally:
            _collecting_own = False

    def __exit__(self, *exc: object) -> None:
        global _own_freezes
        if self._froze:
            gc.unfreeze()  # the block's own freeze, and nobody else's
            _own_freezes -= 1
        if self._resume:
            gc.enable()


class CollectorFrees:
    """Device bytes Python's cyclic collector freed while this watches (a context manager: the gc callback is removed
    on exit). A collection runs when Python likes and can free garbage earlier work left (a previous test's
    pipeline) in the middle of a step: a memory figure that counts this back reads what the step's own code did.
    Collections are rare (a tiny pipeline's call triggers none on a CPU), so the counter is read only then."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.freed = 0
        self._before = 0

    def __enter__(self) -> CollectorFrees:
        gc.callbacks.append(self._on_collection)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)

    def in_use(self) -> int:
        """Device memory in use now with what the collector freed counted back, read consistently: reading CUDA's
        counter builds a dict in Python, which can start a collection after the counter was read (a young reference
        cycle freed there would be counted twice)."""
        while True:
            freed = self.freed
            allocated = allocated_bytes(self.backend)
            if self.freed == freed:
                return allocated + freed

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        if _collecting_own:
            return
        allocated = allocated_bytes(self.backend)
        if phase == "start":
            self._before = allocated
        else:
            self.freed += max(0, self._before - allocated)


def allocations(backend: str) -> int:
    """Device allocations made so far (a counter): nearly every device op allocates its output."""
    if backend == "cuda":
        return _cuda_stat("allocation", "allocated")
    return tensor.memory.count


def _cuda_stat(name: str, field: str) -> int:
    """One counter of CUDA's caching allocator (all pools) on the current device. Read from the nested stats:
    `torch.cuda.memory_stats()`, behind `memory_allocated()` too, flattens and sorts hundreds of entries in Python,
    and every guarded block reads twice."""
    return int(torch.cuda.memory_stats_as_nested_dict().get(name, {}).get("all", {}).get(field, 0))


def generator(device: torch.device | str, seed: int) -> torch.Generator:
    """A seeded generator on `device`. The emulated device cannot have a torch.Generator of its own, so it
    gets a CPU generator that reports the emulated device (diffusers samples where the generator is)."""
    kind = device.type if isinstance(device, torch.device) else str(device).split(":")[0]
    if kind == emulation.DEVICE_TYPE:
        return emulation.generator(seed)
    return torch.Generator(device=device).manual_seed(seed)
