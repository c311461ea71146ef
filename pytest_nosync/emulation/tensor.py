"""Tensors on the stand-in device: torch metadata of their own, values held by a CPU tensor.

Every op on them reaches `EmulatedTensor.__torch_dispatch__` (after autograd, so gradients work as on any
device): unwrap the CPU values, tell the sync listener what the op would mean on a GPU, run the op on the
CPU, wrap the results back onto the device. Ops that mix a non-scalar host tensor into device math fail,
as they do on a GPU; 0-dim host tensors are fine as operands, as CUDA allows.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import torch
import torch.utils._device

from . import syncs
from .identity import DEVICE_TYPE

_CPU = torch.device("cpu")
_DEVICE: torch.device  # set by bind(), once the backend has its name
ops_run = [0]  # ops dispatched on the device so far (the detector reports its share)


class DeviceMemory:
    """The bytes of device storage alive, and their peak: what `torch.cuda.memory_allocated()` and
    `max_memory_allocated()` report on a GPU, without a caching allocator's rounding. A storage is counted once,
    whatever number of views share it, and released when its last tensor is gone."""

    def __init__(self) -> None:
        self.live: dict[int, tuple[int, weakref.ref]] = {}  # id of a live storage → (its bytes, a weak reference)
        self.allocated = 0
        self.peak = 0
        self.count = 0  # storages made so far

    def add(self, raw: torch.Tensor) -> None:
        storage = raw.untyped_storage()  # torch keeps one Python object per storage while it lives
        key = id(storage)
        if key in self.live:
            return
        nbytes = storage.nbytes()
        self.count += 1
        # a weak reference with a callback: a third of weakref.finalize's cost, on every new device storage
        self.live[key] = (nbytes, weakref.ref(storage, lambda _, key=key: self._release(key)))
        self.allocated += nbytes
        if self.allocated > self.peak:
            self.peak = self.allocated

    def _release(self, key: int) -> None:
        entry = self.live.pop(key, None)
        if entry is not None:
            self.allocated -= entry[0]

    def reset_peak(self) -> None:
        self.peak = self.allocated


memory = DeviceMemory()


class EmulatedTensor(torch.Tensor):
    # No __slots__: a host tensor handed device data (`param.data = x`) becomes one of these in place, which Python
    # allows only between classes of one layout (see `to_device`).
    _raw: torch.Tensor

    @staticmethod
    def __new__(cls, raw: torch.Tensor, requires_grad: bool | None = None) -> EmulatedTensor:
        if requires_grad is not None:  # called as a parameter's class, as accelerate does (`type(param)(value, ...)`)
            return torch.nn.Parameter(raw, requires_grad)  # type: ignore[return-value]
        # Positional arguments: this runs for every op output, and keyword parsing costs a third of it.
        # requires_grad stays False: autograd, above this layer, sets it on the wrapper.
        tensor = _make_wrapper(
            cls, raw.size(), raw.stride(), raw.storage_offset(), None, raw.dtype, raw.layout, _DEVICE
        )
        tensor._raw = raw
        memory.add(raw)
        return tensor

    # No __torch_function__ layer: ops go straight to __torch_dispatch__ (half the Python overhead).
    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        return dispatch(func, args, kwargs or {})

    @property
    def data(self) -> torch.Tensor:  # type: ignore[override]
        return _TENSOR_DATA.__get__(self)

    @data.setter
    def data(self, new: torch.Tensor) -> None:
        # `param.data = x` (Module.to(dtype), weight loading) swaps the TensorImpl's contents; the CPU values
        # live in an attribute of the Python object, so they must follow.
        if new.__class__ is not EmulatedTensor and new.device.type == "cpu":
            to_host(self, new)  # group offloading handing a parameter back to the host
            return
        _TENSOR_DATA.__set__(self, new)
        self._raw = new._raw if new.__class__ is EmulatedTensor else new

    def tolist(self) -> Any:  # torch refuses tolist() on subclasses; on a GPU it is a copy to the host
        return self.to(_CPU).tolist()

    def numpy(self, *, force: bool = False) -> Any:
        raise TypeError(
            f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
            "memory first."
        )

    def __format__(self, spec: str) -> str:  # f"{t:.3f}" of a device scalar reads it back, as on a GPU
        return self.item().__format__(spec) if self.dim() == 0 else object.__format__(self, spec)

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        # Formatting reads every value back (print, str, repr, f-strings): on a GPU a copy to the host that waits for
        # the device, so here a copy the sync listener sees, at the line that formatted it.
        text = repr(self.to(_CPU))
        return text[:-1] + f", device='{self.device}')" if text.endswith(")") else text


_make_wrapper = torch.Tensor._make_wrapper_subclass
_TENSOR_DATA = torch._C.TensorBase.data


def to_device(tensor: torch.Tensor, new: EmulatedTensor) -> None:
    """`tensor.data = new` for a host tensor and device data, as a GPU does it: the same Python object, now on the
    device, sharing `new`'s values. A plain tensor's TensorImpl cannot take a wrapper's, so the object changes sides
    whole: its class for EmulatedTensor, its TensorImpl for a fresh wrapper's. Identity, requires_grad and being a
    Parameter (`isinstance` reads `_is_param` on tensor subclasses) stay what they were; a gradient does not follow
    (the features that move parameters so, offloading, run without one)."""
    requires_grad, host_class = tensor.requires_grad, tensor.__class__
    _swap_sides(tensor, EmulatedTensor, EmulatedTensor(new._raw))
    tensor._raw = new._raw
    tensor._host_class = host_class  # type: ignore[attr-defined]
    if issubclass(host_class, torch.nn.Parameter):
        tensor._is_param = True  # type: ignore[attr-defined]
    tensor.requires_grad_(requires_grad)


def to_host(tensor: EmulatedTensor, new: torch.Tensor) -> None:
    """`tensor.data = new` for a device tensor and host data: the way back of `to_device`, to the class the tensor
    had on the host (a Parameter when it is one)."""
    requires_grad, state = tensor.requires_grad, tensor.__dict__
    host_class = state.get("_host_class", torch.nn.Parameter if state.get("_is_param") else torch.Tensor)
    _swap_sides(tensor, host_class, new.detach())  # detach(): an alias of new's values, as `.data =` shares them
    for name in ("_raw", "_host_class", "_is_param"):
        state.pop(name, None)
    tensor.requires_grad_(requires_grad)


def _swap_sides(tensor: torch.Tensor, cls: type, impl_of: torch.Tensor) -> None:
    """Give `tensor` the class `cls` and the TensorImpl of `impl_of`, or leave it as it was: the class first (Python
    refuses a class of another layout before anything changed), the TensorImpl then, the class put back if that
    fails."""
    before = tensor.__class__
    tensor.__class__ = cls
    try:
        torch._C._swap_tensor_impl(tensor, impl_of)
    except BaseException:
        tensor.__class__ = before
        raise


def accept_device_data() -> Any:
    """Let `host_tensor.data = device_tensor` work on the emulated device, as it does on a GPU: group offloading
    onloads a parameter so (`param.data = param.data.to(device)`), and a plain tensor's TensorImpl cannot take a
    wrapper subclass's. `Tensor.data` gets a property that, on that mismatch only, moves the tensor object to the
    device whole (`to_device`); every other assignment is torch's own. Part of the emulation's installed state, like
    `torch.tensor` accepting device elements; returns what `Tensor.data` was before (None: TensorBase's)."""
    before = torch.Tensor.__dict__.get("data")

    def setter(self: torch.Tensor, new: torch.Tensor) -> None:
        if new.__class__ is EmulatedTensor and self.__class__ is not EmulatedTensor:
            to_device(self, new)
        else:
            _TENSOR_DATA.__set__(self, new)

    torch.Tensor.data = property(_TENSOR_DATA.__get__, setter)  # type: ignore[assignment]
    return before


def unwrap(value: Any, hosted: list) -> Any:
    """The CPU counterpart of an argument; `hosted` collects non-scalar host tensors (mixed devices)."""
    cls = value.__class__
    if cls is EmulatedTensor:
        return value._raw
    if cls is list or cls is tuple:
        return cls([unwrap(v, hosted) for v in value])
    if cls is torch.device:
        return _CPU if value.type == DEVICE_TYPE else value
    if isinstance(value, torch.Tensor) and value.dim() > 0:
        hosted.append(value)
    return value


def wrap(value: Any, inputs: tuple) -> Any:
    cls = value.__class__
    if cls is torch.Tensor:
        for arg in inputs:  # in-place ops, out= and copy_ return an argument: keep its identity
            if arg is value or (arg.__class__ is EmulatedTensor and arg._raw is value):
                return arg
        return EmulatedTensor(value)
    if cls is list or cls is tuple:
        return cls([wrap(v, inputs) for v in value])
    return value


def _stays_on_host(func: Any, args: tuple, kwargs: dict) -> bool:
    """Whether the result is a host tensor: asked for (`.to("cpu")`, `device=`), or a host tensor indexed."""
    device = kwargs.get("device") if kwargs else None
    if device is not None:
        return device.type != DEVICE_TYPE
    return args[0].__class__ is not EmulatedTensor and func in _HOST_INDEXED


def dispatch(func: Any, args: tuple, kwargs: dict) -> Any:
    ops_run[0] += 1
    if syncs.listener is not None:
        event = syncs.classify(func, args, kwargs)
        if event is not None:
            syncs.listener(event)  # may raise (fail-fast mode): before the op runs, at the offending line
    hosted: list = []
    raw_args = [a._raw if a.__class__ is EmulatedTensor else unwrap(a, hosted) for a in args]
    raw_kwargs = {k: unwrap(v, hosted) for k, v in kwargs.items()} if kwargs else kwargs
    if hosted and not syncs.mixing_allowed(func):
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{_DEVICE} and cpu! (in {func.name()}; pytest-nosync emulates a GPU, where this fails too)"
        )
    out = func._op(*raw_args, **raw_kwargs)  # the OpOverload's builtin, minus one Python frame
    if _stays_on_host(func, args, kwargs):
        return out
    out = wrap(out, args + tuple(kwargs.values()) if kwargs else args)
    if func in _RESHAPING_IN_PLACE or (kwargs and "out" in kwargs):
        _refresh_metadata(args + tuple(kwargs.values()))
    return out


_RESHAPING_IN_PLACE: frozenset = frozenset()  # set by bind()
_HOST_INDEXED: frozenset = frozenset()  # a host tensor indexed with device indices stays on the host


def bind(device: torch.device) -> None:
    """Make `device` the device of every EmulatedTensor (called once, after the backend is named)."""
    global _DEVICE, _RESHAPING_IN_PLACE, _HOST_INDEXED
    _DEVICE = device
    _RESHAPING_IN_PLACE = _overloads(
        "resize_", "resize_as_", "unsqueeze_", "squeeze_", "transpose_", "t_", "as_strided_", "swapdims_", "set_"
    )
    _HOST_INDEXED = _overloads("index", "index_put", "index_put_", "_index_put_impl_")


def _overloads(*names: str) -> frozenset:
    packets = [getattr(torch.ops.aten, name) for name in names]
    return frozenset(getattr(packet, overload) for packet in packets for overload in packet.overloads())


def _refresh_metadata(args: tuple) -> None:
    """Follow an in-place change of shape (out= resized, unsqueeze_, ...): the wrapper's sizes are fixed at
    creation, so the wrapper gets a new TensorImpl built from its CPU values (as swap_tensors does)."""
    for arg in args:
        if arg.__class__ is not EmulatedTensor:
            continue
        raw = arg._raw
        if arg.shape != raw.shape or arg.stride() != raw.stride() or arg.storage_offset() != raw.storage_offset():
            torch._C._swap_tensor_impl(arg, EmulatedTensor(raw))


def _read_back(data: Any) -> Any:
    """Python values of nested data holding device tensors: each one read back (a sync, as on a GPU)."""
    if data.__class__ is EmulatedTensor:
        return data.item() if data.dim() == 0 else data.tolist()
    if isinstance(data, (list, tuple)):
        return type(data)(_read_back(item) for item in data)
    return data


def accept_device_elements() -> Any:
    """Let `torch.tensor([device_scalar, ...])` work on the emulated device, as it does on a GPU.

    torch builds tensors from data with the Python dispatch key excluded, so a list holding wrapper
    tensors, or any build on the device while a dispatch mode is active, trips an internal assert. On that
    error only, the device values are read back one by one (each read is a device→host sync, recorded where
    the list is built), the tensor is built on the host and copied to the device (the host→device copy a GPU
    makes too). Part of the emulation's installed state, like the device name itself; returns the original.

    The default device still applies (`with torch.device("meta")`, `set_default_device`): torch's DeviceContext
    gives it to the factories in `torch.utils._device._device_constructors()`, a set it builds on its first call,
    by identity, from the `torch.*` attributes of that moment. Built after the swap, it would hold this wrapper,
    which no torch-function mode ever sees (they see the builtin it calls): `torch.tensor` would ignore the
    default device. transformers reads it back with `torch.tensor([]).device` while building a model on meta for
    `from_pretrained`; told "cpu", it ran its weight init on the meta model and marked every module initialized,
    so the non-persistent buffers it re-creates empty after loading were never filled. The set is built here,
    before the swap, so that it holds the builtin.
    """
    _device_constructors = getattr(torch.utils._device, "_device_constructors", None)
    if _device_constructors is not None:
        _device_constructors()  # cached from now on: the builtin torch.tensor stays a device constructor
    original = torch.tensor

    @functools.wraps(original)
    def tensor(data: Any, *args: Any, **kwargs: Any) -> torch.Tensor:
        try:
            return original(data, *args, **kwargs)
        except RuntimeError as exc:
            if "func != nullptr" not in str(exc):
                raise
        device = kwargs.pop("device", None)
        built = original(_read_back(data), *args, **kwargs)
        return built.to(device) if device is not None else built

    torch.tensor = tensor
    return original
