"""CUDA-written code, run unchanged on the emulated device.

A contributor's tests say `device="cuda"`, `.cuda()`, `torch.Generator("cuda")`, `torch.cuda.synchronize()`. Under
the emulate backend the plugin installs this mapping for the session (`install`, undone by the returned callable):

- a torch-function mode puts what CUDA code sends to "cuda" (a `device=` argument, `.to("cuda")`, `.to(0)`,
  `.cuda()`, a module's `.cuda()`/`.to("cuda")`) on the target device instead, the emulated one by default;
  `pin_memory()` returns the tensor marked as pinned, so that a non_blocking copy from it is free, as on a GPU;
- `torch.Generator("cuda")` gives a generator of the emulated device;
- `torch.cuda` answers as one available device: is_available, device_count, current_device, set_device,
  synchronize (a finding inside a guarded step, as on a GPU: the explicit-sync detector wraps it), Event, Stream,
  stream, current_stream, memory_allocated, max_memory_allocated, reset_peak_memory_stats, empty_cache, ...

Code that branches on `tensor.is_cuda` or `device.type == "cuda"` still sees the emulated device's own type, and
`torch.set_default_device("cuda")` is not mapped (docs/emulation.md).
"""

from __future__ import annotations

import contextlib
import os
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from ..patching import Patches
from . import syncs, tensor
from .device import generator as emulated_generator
from .identity import DEVICE_TYPE
from .streams import Event
from .streams import Stream as _Stream

_TO = {torch.Tensor.to}
_CUDA = {torch.Tensor.cuda}
_PIN = {torch.Tensor.pin_memory}


def is_cuda(device: Any) -> bool:
    """A device argument meaning the GPU: "cuda", "cuda:1", torch.device("cuda"), or a bare index (as in .to(0))."""
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    return isinstance(device, int) and not isinstance(device, bool)


class DeviceMapping(TorchFunctionMode):
    """Rewrites GPU device arguments to `target` before the call runs."""

    def __init__(self, target: torch.device) -> None:
        super().__init__()
        self.target = target

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if "device" in kwargs and is_cuda(kwargs["device"]):
            kwargs = {**kwargs, "device": self.target}
        if func in _TO and len(args) > 1 and is_cuda(args[1]):
            args = (args[0], self.target, *args[2:])
        elif func in _CUDA:  # Tensor.cuda(device=None, non_blocking=False, memory_format=...)
            non_blocking = kwargs.get("non_blocking", args[2] if len(args) > 2 else False)
            return args[0].to(self.target, non_blocking=non_blocking)
        elif func in _PIN:
            return pin(args[0])
        return func(*args, **kwargs)


def pin(host: torch.Tensor) -> torch.Tensor:
    """`pin_memory()` without CUDA: the tensor itself, remembered as pinned (a non_blocking copy from it is free)."""
    syncs.pinned[id(host)] = host
    return host


class Stream(_Stream):
    """torch.cuda.Stream on the emulated device: its `synchronize()` is torch.cuda's."""

    namespace = "cuda"


def _is_emulated(device: Any) -> bool:
    return isinstance(device, (str, torch.device)) and str(device).partition(":")[0] == DEVICE_TYPE


def _generator_class(original: type) -> type:
    class GeneratorMeta(type(original)):  # type: ignore[misc]
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, original)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, original)

    class Generator(original, metaclass=GeneratorMeta):  # type: ignore[misc, valid-type]
        """torch.Generator, with "cuda" giving a generator of the emulated device."""

        def __new__(cls, device: Any = "cpu") -> Any:
            # the emulated device's own name too: a pipeline makes a generator on its execution device (LTX's long
            # multi-prompt pipeline, per window), and torch makes none for a Python-defined backend
            return emulated_generator() if is_cuda(device) or _is_emulated(device) else original(device)

    return Generator


# What code asking about "the GPU" is told: the host's memory is the emulated device's (test suites read
# total_memory to decide whether a big model fits).
_PROPERTIES = types.SimpleNamespace(
    name="pytest-nosync emulated device (CPU)",
    total_memory=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 2**34,
    major=9,
    minor=0,
    multi_processor_count=os.cpu_count() or 1,
    is_integrated=False,
)


def _cuda_module() -> dict[str, Callable[..., Any]]:
    memory = tensor.memory
    current = Stream()
    return {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "init": lambda: None,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "get_device_name": lambda device=None: "pytest-nosync emulated device (CPU)",
        "get_device_capability": lambda device=None: (9, 0),
        "get_device_properties": lambda device=None: _PROPERTIES,
        "mem_get_info": lambda device=None: (_PROPERTIES.total_memory - memory.allocated, _PROPERTIES.total_memory),
        "is_bf16_supported": lambda *args, **kwargs: True,
        "synchronize": lambda device=None: None,
        "Event": Event,
        "Stream": Stream,
        "stream": lambda stream=None: contextlib.nullcontext(stream),
        "current_stream": lambda device=None: current,
        "default_stream": lambda device=None: current,
        "manual_seed": lambda seed: None,
        "manual_seed_all": lambda seed: None,
        "memory_allocated": lambda device=None: memory.allocated,
        "max_memory_allocated": lambda device=None: memory.peak,
        "memory_reserved": lambda device=None: memory.allocated,
        "max_memory_reserved": lambda device=None: memory.peak,
        "reset_peak_memory_stats": lambda device=None: memory.reset_peak(),
        "reset_max_memory_allocated": lambda device=None: memory.reset_peak(),
        "empty_cache": lambda: None,
    }


_active: list[DeviceMapping] = []
_swapped: list[tuple[Any, str, Any, Any]] = []  # (owner, name, original, mapped) of the installed mapping


def _attributes() -> list[tuple[Any, str, Any]]:
    return [
        *((torch.cuda, name, value) for name, value in _cuda_module().items()),
        (torch, "Generator", _generator_class(torch.Generator)),
    ]


def install(target: torch.device) -> Callable[[], None]:
    """Map CUDA onto `target` for the process until the returned callable undoes it."""
    patches = Patches()
    mode = DeviceMapping(target)
    for owner, name, value in _attributes():
        _swapped.append((owner, name, patches.setattr(owner, name, value), value))
    mode.__enter__()
    _active.append(mode)

    def undo() -> None:
        _active.remove(mode)
        _swapped.clear()
        try:
            mode.__exit__(None, None, None)
        finally:
            patches.undo()

    return undo


def retarget(device: torch.device) -> None:
    """Send CUDA to `device` from now on (the plain CPU for a test that only checks graph breaks)."""
    for mode in _active:
        mode.target = device


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The real torch.cuda and no device mapping inside the block: dynamo compiling a model asks torch.cuda questions
    of its own, and must trace the model, not the mapping."""
    if not _active:
        yield
        return
    for owner, name, original, _ in _swapped:
        setattr(owner, name, original)
    top = torch._C._pop_torch_function_stack() if torch._C._len_torch_function_stack() else None
    if top is not None and top is not _active[-1]:  # another mode above ours: leave the stack as it is
        torch._C._push_on_torch_function_stack(top)
        top = None
    try:
        yield
    finally:
        if top is not None:
            torch._C._push_on_torch_function_stack(top)
        for owner, name, _, mapped in _swapped:
            setattr(owner, name, mapped)


def active() -> bool:
    return bool(_active)
