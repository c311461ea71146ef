"""What a GPU event is, from its name and from what launched it: layout transform, copy, transfer, compiled.

Kernel names are matched narrowly, because a broad match counts real work as waste:

- layout: kernels that exist only to change a tensor's memory layout. cuDNN's `nchwToNhwcKernel` /
  `nhwcToNchwKernel` (what a Conv3d in NCDHW pays around an NDHWC implementation, the waste TeleFuser
  found), any `nchw_to_nhwc`-style name in either direction and for 5-D layouts, kernels named `transpose`,
  and inductor kernels fused *only* of layout ops (`triton_poi_fused_clone_0`, `..._permute_...`).
- copy: device-to-device data movement that is not a layout change we can prove. `Memcpy DtoD`/`PtoP`, ATen's
  copy kernels (`direct_copy_kernel_cuda` inside an `elementwise_kernel` is what `.contiguous()`, `.clone()`,
  `.to(dtype)` and `copy_` run), `CatArrayBatchedCopy` (torch.cat), any kernel launched while `aten::copy_` is
  the innermost op on the host (whatever its functor is called), and inductor kernels fused only of copy ops
  (`triton_poi_fused__to_copy_0`).
- transfer: `Memcpy HtoD`/`DtoH` and memsets are not counted as waste here (syncs are the syncs check's job).

A plain `elementwise_kernel` is *not* a copy by name: add, mul and every pointwise op run one.
"""

from __future__ import annotations

import re

LAYOUT = "layout"
COPY = "copy"
TRANSFER = "transfer"

_COPY_NAME = re.compile(r"copy_kernel|CatArrayBatchedCopy")
_TRITON = re.compile(r"^triton_(?:poi|red|per|tem|for|mix)_fused_(?P<ops>.+?)_\d+$")
# Inductor names a kernel after the aten ops fused into it; these move data and compute nothing.
_TRITON_LAYOUT_OPS = frozenset({"clone", "permute", "transpose", "t"})
_TRITON_MOVE_OPS = _TRITON_LAYOUT_OPS | frozenset(
    {"_to_copy", "copy", "_unsafe_view", "view", "expand", "contiguous", "cat", "squeeze", "unsqueeze", "reshape"}
)
COPY_OPS = frozenset({"aten::copy_"})
# The host-side ranges of a torch.compile'd call (dynamo's region, AOTAutograd's function, inductor's graph).
COMPILED_RANGES = ("Torch-Compiled Region", "CompiledFunction", "## Call CompiledFxGraph")


def _is_layout_name(name: str) -> bool:
    """nchwToNhwc, nhwc_to_nchw, ncdhw2ndhwc, transpose...: one layout spelled to the other."""
    lowered = name.lower()
    for a, b in (("nchw", "nhwc"), ("ncdhw", "ndhwc")):
        for sep in ("to", "_to_", "2"):
            if f"{a}{sep}{b}" in lowered or f"{b}{sep}{a}" in lowered:
                return True
    return "transpose" in lowered


def triton_ops(name: str) -> list[str] | None:
    """The aten ops an inductor kernel name lists (`triton_poi_fused__to_copy_clone_0` → [_to_copy, clone]), or
    None when it is not an inductor kernel or a name cannot be split into known data-movement ops."""
    match = _TRITON.match(name)
    if not match:
        return None
    rest, ops = match["ops"], []
    known = sorted(_TRITON_MOVE_OPS, key=len, reverse=True)
    while rest:
        op = next((k for k in known if rest == k or rest.startswith(k + "_")), None)
        if op is None:
            return None
        ops.append(op)
        rest = rest[len(op) + 1 :]
    return ops


def classify(cat: str, name: str, innermost_op: str | None = None) -> str | None:
    """LAYOUT, COPY, TRANSFER or None (real work) for one GPU event; see the module doc for the rules."""
    if cat == "gpu_memset":
        return TRANSFER
    if cat == "gpu_memcpy":
        return COPY if ("DtoD" in name or "PtoP" in name) else TRANSFER
    if name.startswith("triton_"):
        ops = triton_ops(name)
        if ops is None:
            return None
        return LAYOUT if any(op in _TRITON_LAYOUT_OPS for op in ops) else COPY
    if _is_layout_name(name):
        return LAYOUT
    if _COPY_NAME.search(name) or innermost_op in COPY_OPS:
        return COPY
    return None


def is_compiled(name: str, host_ranges: list[str]) -> bool:
    """An inductor kernel, or any kernel (cuBLAS, cuDNN) launched inside a compiled call's host range."""
    return name.startswith("triton_") or any(r.startswith(COMPILED_RANGES) for r in host_ranges)


def short_name(name: str) -> str:
    """`void cudnn::ops::nchwToNhwcKernel<float, ...>(...)` → `nchwToNhwcKernel`; ATen's copy functor is kept
    visible (`elementwise_kernel[direct_copy]`), since the bare template name says nothing."""
    base = name[5:] if name.startswith("void ") else name
    base = base.replace("(anonymous namespace)::", "")
    cut = min((i for i in (base.find("<"), base.find("(")) if i >= 0), default=len(base))
    base = base[:cut].rsplit("::", 1)[-1].strip() or name
    if "direct_copy_kernel" in name and "direct_copy" not in base:
        base += "[direct_copy]"
    return base[:80]
