"""Kernels registered for the stand-in device (PrivateUse1) in torch's dispatcher.

Most ops on the device never get here: the tensors carry the Python dispatch key, so they reach
`EmulatedTensor.__torch_dispatch__` first. These are the exceptions:
  * factories (`torch.zeros(..., device="emu")`) have no device tensor to dispatch on: a fallback, and
    explicit kernels for the few whose generic implementation fills an empty tensor through `out=` and
    then returns that tensor (arange, range, eye), whose fixed sizes would be stale;
  * `torch.tensor(data, device=...)` copies with Python dispatch turned off, and a Python kernel reached
    that way must be registered per op: `copy_`;
  * `scaled_dot_product_attention` picks its fused kernel per device type in C++, and a Python backend
    only ever gets the unfused math path (3x slower, and not what the CPU computes). Registered here, it
    stays one op, computed by the CPU's own choice; with gradients required, the math path runs instead,
    since that one has autograd.
"""

from __future__ import annotations

from typing import Any

import torch

from .tensor import dispatch, ops_run, unwrap, wrap


def _factory(op: Any, *args: Any, **kwargs: Any) -> Any:
    ops_run[0] += 1
    hosted: list = []
    out = op(*(unwrap(a, hosted) for a in args), **{k: unwrap(v, hosted) for k, v in kwargs.items()})
    return wrap(out, ())


def _factory_kernel(op: Any) -> Any:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        return _factory(op, *args, **kwargs)

    return kernel


def _copy(dst: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    return dispatch(torch.ops.aten.copy_.default, (dst, src, non_blocking), {})


def _sdpa_arguments(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """aten's scaled_dot_product_attention arguments as its schema splits them, for both kernels below: positional
    (query, key, value, attn_mask, dropout_p, is_causal), then keyword-only (scale, enable_gqa)."""
    return (query, key, value, attn_mask, dropout_p, is_causal), {"scale": scale, "enable_gqa": enable_gqa}


def _sdpa(*args: Any, **kwargs: Any) -> torch.Tensor:
    args, kwargs = _sdpa_arguments(*args, **kwargs)
    return dispatch(torch.ops.aten.scaled_dot_product_attention.default, args, kwargs)


def _sdpa_autograd(*args: Any, **kwargs: Any) -> torch.Tensor:
    args, kwargs = _sdpa_arguments(*args, **kwargs)
    aten = torch.ops.aten
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in args[:4]):  # the tensors
        return aten._scaled_dot_product_attention_math(*args, None, **kwargs)[0]  # None: no dropout mask
    with torch._C._AutoDispatchBelowAutograd():
        return aten.scaled_dot_product_attention(*args, **kwargs)


def register() -> list[Any]:
    """Register the kernels; returns the libraries, which must stay alive as long as the device."""
    fallback = torch.library.Library("_", "IMPL")
    fallback.fallback(_factory, "PrivateUse1")
    aten = torch.library.Library("aten", "IMPL")
    for name in ("arange", "range", "eye"):
        packet = getattr(torch.ops.aten, name)
        for overload in packet.overloads():
            if "out" not in overload:
                qualified = name if overload == "default" else f"{name}.{overload}"
                aten.impl(qualified, _factory_kernel(getattr(packet, overload)), "PrivateUse1")
    aten.impl("copy_", _copy, "PrivateUse1")
    aten.impl("scaled_dot_product_attention", _sdpa, "PrivateUse1")
    aten.impl("scaled_dot_product_attention", _sdpa_autograd, "AutogradPrivateUse1")
    return [fallback, aten]
