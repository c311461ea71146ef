"""The stand-in device: torch's PrivateUse1 backend, renamed and given kernels that compute on the CPU.

`install()` is idempotent and does, once per process:
  * `torch.utils.rename_privateuse1_backend(DEVICE_TYPE)`: torch allows one rename per process and no
    undo, so this is the one global the plugin leaves behind. The registrations that give the name a
    meaning (the `torch.emu` module, the hooks and device guard, the kernels) stay with it. A renamed
    PrivateUse1 is also torch's "current accelerator" from then on (`torch.accelerator.current_accelerator()`,
    the device `pin_memory()` pins for, which fails for this one): on a CUDA machine, CUDA work belongs in a
    process that never installed the emulation.
  * a `torch.emu` module that says the device is *not* available, so that code choosing "the
    accelerator" (`torch.accelerator.is_available()`) never picks it by itself;
  * a fallback kernel for factories on the device (`torch.zeros(..., device="emu")`) and a `copy_` kernel
    (reached with Python dispatch off, from `torch.tensor(data, device=...)`); every other op on the
    device goes through `EmulatedTensor.__torch_dispatch__`.

"emu" is a name no library mistakes for real hardware (unlike "npu", "xpu", "mps" or "hpu", which
diffusers and transformers test for and treat specially).
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any

import torch

from . import kernels, streams, tensor
from .identity import DEVICE_TYPE, is_emulated

__all__ = ["DEVICE_TYPE", "EmulationUnavailable", "generator", "install", "is_emulated", "unavailable_reason"]
_state: dict[str, Any] = {}  # "device" once installed; keeps the registrations alive


class EmulationUnavailable(RuntimeError):
    """This torch cannot host the stand-in device; the message says why."""


def unavailable_reason() -> str | None:
    """Why the stand-in device cannot be installed in this process, or None if it can (or is)."""
    acc = getattr(torch._C, "_acc", None)
    if acc is None or not hasattr(acc, "register_python_privateuseone_hook"):
        return f"torch {torch.__version__} has no Python device backends (torch._C._acc)"
    name = torch._C._get_privateuse1_backend_name()
    if name not in ("privateuseone", DEVICE_TYPE):
        return f"the PrivateUse1 backend is already taken by {name!r} (another extension renamed it)"
    return None


def install() -> torch.device:
    """Create the stand-in device (once per process) and return it."""
    device = _state.get("device")
    if device is not None:
        return device
    reason = unavailable_reason()
    if reason is not None:
        raise EmulationUnavailable(f"CPU emulation is not available: {reason}")
    if torch._C._get_privateuse1_backend_name() != DEVICE_TYPE:
        torch.utils.rename_privateuse1_backend(DEVICE_TYPE)
    if not hasattr(torch, DEVICE_TYPE):
        torch._register_device_module(DEVICE_TYPE, _device_module())
    _state["hooks"] = _Hooks()
    _state["guard"] = _DeviceGuard()
    torch._C._acc.register_python_privateuseone_hook(_state["hooks"])
    torch._C._acc.register_python_privateuseone_device_guard(_state["guard"])
    device = torch.device(DEVICE_TYPE, 0)
    tensor.bind(device)
    _state["kernels"] = kernels.register()
    _state["tensor_from_data"] = tensor.accept_device_elements()
    _state["tensor_data"] = tensor.accept_device_data()
    _state["device"] = device
    return device


@contextlib.contextmanager
def tensor_data_as_is() -> Iterator[None]:
    """torch's own `Tensor.data` inside the block, where `install` put the emulation's: dynamo compiling a model on the
    plain CPU must trace torch, not the emulation. The emulation's setter is a Python frame dynamo compiles wherever
    torch assigns `.data` outside a graph (a module's `.to()` after a casting hook's break), once per dtype, past the
    recompile limit: a finding no GPU has. `torch.tensor` stays the emulation's: a dynamo imported after `install`
    took that wrapper for torch.tensor and would not know the builtin (a break at every `torch.tensor(...)`)."""
    if "device" not in _state:
        yield
        return
    installed = torch.Tensor.__dict__.get("data")
    _set_tensor_data(_state["tensor_data"])
    try:
        yield
    finally:
        _set_tensor_data(installed)


def _set_tensor_data(descriptor: Any) -> None:
    """`Tensor.data` as `descriptor`, or TensorBase's own where it is None."""
    if descriptor is not None:
        torch.Tensor.data = descriptor  # type: ignore[assignment]
    elif "data" in torch.Tensor.__dict__:
        del torch.Tensor.data


class EmulatedGenerator(torch.Generator):
    """A CPU generator that reports the stand-in device: torch cannot create a generator for a
    Python-defined backend, and diffusers' `randn_tensor` samples on the generator's device."""

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return install()


def generator(seed: int | None = None) -> torch.Generator:
    """A generator for sampling on the stand-in device (`torch.Generator(device="emu")` cannot exist)."""
    install()
    gen = EmulatedGenerator()
    if seed is not None:
        gen.manual_seed(seed)
    return gen


class DeviceStream(streams.Stream):
    """A stream of the device's own module: its `synchronize()` is `torch.emu.synchronize`."""

    namespace = DEVICE_TYPE


def _device_module() -> types.ModuleType:
    module = types.ModuleType(f"torch.{DEVICE_TYPE}", "pytest-nosync's emulated accelerator (computes on the CPU)")
    current = DeviceStream()
    functions = {
        "is_available": lambda: False,  # never chosen as "the accelerator" by code that looks for one
        "is_initialized": lambda: True,
        "_is_in_bad_fork": lambda: False,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "synchronize": lambda device=None: None,
        "manual_seed": lambda seed: None,
        "manual_seed_all": lambda seed: None,
        "get_amp_supported_dtype": lambda: [torch.float16, torch.bfloat16],
        # no caching allocator to empty (diffusers' offloading calls it on the pipeline's device type after a move)
        "empty_cache": lambda: None,
        # streams, for code that prefetches on one (diffusers' group offloading with use_stream=True)
        "Stream": DeviceStream,
        "Event": streams.Event,
        "stream": lambda stream=None: contextlib.nullcontext(stream),
        "current_stream": lambda device=None: current,
        "default_stream": lambda device=None: current,
    }
    for name, fn in functions.items():
        setattr(module, name, fn)
    return module


class _Hooks(torch._C._acc.PrivateUse1Hooks if hasattr(torch._C, "_acc") else object):  # type: ignore[misc]
    def is_available(self) -> bool:
        return False

    def has_primary_context(self, device_index: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class _DeviceGuard(torch._C._acc.DeviceGuard if hasattr(torch._C, "_acc") else object):  # type: ignore[misc]
    def type_(self) -> Any:
        return torch._C._autograd.DeviceType.PrivateUse1
