"""Which operations on the stand-in device would make a GPU and its host wait for each other.

Each op is judged by what CUDA does for it: reading a value back (`_local_scalar_dense` behind `.item()`,
`float()`, `bool()`, an `if`), sizing an output from device values (nonzero, masked selection, unique...),
or copying between host and device memory. The op knows the direction of the transfer; the expression
that ran it (read later, by the detector) only names the pattern. Whoever armed a listener is told.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ..findings import Kind
from .identity import DEVICE_TYPE

DTOH = Kind.DTOH_SYNC
HTOD = Kind.HTOD_SYNC


@dataclass(frozen=True)
class EmulatedSync:
    kind: str  # dtoh_sync or htod_sync: known from the op, whatever the expression looks like
    op: str  # the aten op, e.g. "aten::_local_scalar_dense"
    pattern: str = ""  # what the op alone says ("" when only the expression can tell)
    hint: str = ""  # the remedy, for patterns hints.py has no entry for


Listener = Callable[[EmulatedSync], None]
SyncRule = Callable[[Any, tuple, dict], "EmulatedSync | None"]

listener: Listener | None = None  # read on every op: a plain module global is the cheapest test
# Host tensors pinned by the CUDA mapping (cuda_map.pin), by id: tensors compare elementwise, so no WeakSet.
pinned: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def set_listener(new: Listener | None) -> Listener | None:
    """Install `new` (None: nobody listens) and return the previous listener, to put back later."""
    global listener
    previous, listener = listener, new
    return previous


NON_BLOCKING_PAGEABLE_HINT = (
    "non_blocking=True from pageable memory still waits: pin the host tensor (pin_memory()) or keep the value "
    "on the device"
)
HOST_OPERAND_HINT = "host indices or values of a device indexing op are copied to the device first: create them there"
EQUAL_HINT = "torch.equal returns a Python bool read from the device: keep (a == b).all() as a tensor"
HISTC_HINT = "histc without a range reads min/max back from the device: pass min= and max="
LINALG_HINT = "torch.linalg checks errors on the host: use the *_ex variant (check_errors=False) and check info later"


def _on_device(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == DEVICE_TYPE


def _name(func: Any) -> str:
    return func.name()


def _arg(args: tuple, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    return args[index] if len(args) > index else kwargs.get(name, default)


def _read(pattern: str, hint: str = "") -> SyncRule:
    def check(func: Any, args: tuple, kwargs: dict) -> EmulatedSync:
        return EmulatedSync(DTOH, _name(func), pattern, hint)

    return check


def _copy(func: Any, args: tuple, kwargs: dict) -> EmulatedSync | None:
    dst, src = args[0], args[1]
    non_blocking = bool(_arg(args, kwargs, 2, "non_blocking", False))
    to_device, from_device = _on_device(dst), _on_device(src)
    if to_device == from_device:
        return None
    kind, host = (HTOD, src) if to_device else (DTOH, dst)
    if not non_blocking:
        return EmulatedSync(kind, _name(func), "to_device" if to_device else "to_host")
    if host.is_pinned() or pinned.get(id(host)) is host:
        return None  # the one free transfer: from pinned host memory
    return EmulatedSync(kind, _name(func), "non_blocking_pageable", NON_BLOCKING_PAGEABLE_HINT)


def _to_copy(func: Any, args: tuple, kwargs: dict) -> EmulatedSync | None:
    device = kwargs.get("device")
    if device is None or device.type in (DEVICE_TYPE, "meta") or kwargs.get("non_blocking"):
        return None  # stays on the device, copies no value (meta: accelerate's offload), or a pinned non_blocking read
    return EmulatedSync(DTOH, _name(func), "to_host")


def _index(func: Any, args: tuple, kwargs: dict) -> EmulatedSync | None:
    indices = _arg(args, kwargs, 1, "indices", ()) or ()
    if not _on_device(args[0]):
        # A host tensor indexed with device indices: they are copied back first (CUDA allows it). Its remedy is
        # hints.py's (the detector asks hints.hint_for).
        return EmulatedSync(DTOH, _name(func), "device_index")
    for index in indices:
        if index is not None and index.dtype in (torch.bool, torch.uint8):
            return EmulatedSync(DTOH, _name(func), "mask_index")
    hosted = [i for i in indices if i is not None and not _on_device(i)]
    values = _arg(args, kwargs, 2, "values") if "put" in _name(func) else None
    if values is not None and not _on_device(values) and values.dim() > 0:
        hosted.append(values)
    if hosted:
        return EmulatedSync(HTOD, _name(func), "host_operand", HOST_OPERAND_HINT)
    return None


def _repeat_interleave(func: Any, args: tuple, kwargs: dict) -> EmulatedSync | None:
    if kwargs.get("output_size") is not None:
        return None
    return EmulatedSync(DTOH, _name(func), "repeat_interleave")


def _histc(func: Any, args: tuple, kwargs: dict) -> EmulatedSync | None:
    low, high = _arg(args, kwargs, 2, "min", 0), _arg(args, kwargs, 3, "max", 0)
    return EmulatedSync(DTOH, _name(func), "histc_range", HISTC_HINT) if low == high else None


_RULES: dict[Any, SyncRule] = {}


def _build_rules() -> dict[Any, SyncRule]:
    aten = torch.ops.aten
    shape = _read("data_dependent_shape")
    equal = _read("equal", EQUAL_HINT)
    table: dict[Any, SyncRule] = {
        aten._local_scalar_dense.default: _read(""),  # .item(), float(), bool(), if, shapes: the expression tells
        aten.equal.default: equal,
        aten.allclose.default: _read(""),  # a Python bool
        aten.nonzero.default: shape,
        aten.masked_select.default: shape,
        aten._unique.default: shape,
        aten._unique2.default: shape,
        aten.unique_dim.default: shape,
        aten.unique_consecutive.default: shape,
        aten.unique_dim_consecutive.default: shape,
        aten.bincount.default: shape,
        aten.histc.default: _histc,
        aten._linalg_check_errors.default: _read("linalg_check", LINALG_HINT),
        aten.repeat_interleave.Tensor: _repeat_interleave,
        aten.index.Tensor: _index,
        aten.index_put.default: _index,
        aten.index_put_.default: _index,
        aten._index_put_impl_.default: _index,
        aten.copy_.default: _copy,
        aten._to_copy.default: _to_copy,
    }
    return table


def _rules() -> dict[Any, SyncRule]:
    if not _RULES:  # built on first use: resolving the ops is work an import must not do
        _RULES.update(_build_rules())
    return _RULES


def classify(func: Any, args: tuple, kwargs: dict) -> EmulatedSync | None:
    """The sync `func(*args, **kwargs)` would be on a GPU (args still on the stand-in device), or None."""
    check = _rules().get(func)
    return None if check is None else check(func, args, kwargs)


def mixing_allowed(func: Any) -> bool:
    """Copies and indexing may take host and device tensors together; any other op with a non-scalar host
    operand fails on a GPU (and fails under emulation the same way)."""
    check = _rules().get(func)
    return check is _copy or check is _index
