"""Which sync pattern an expression is, and the one-line remedy for it.

A sync warning says only that a sync happened. The expression being executed when it happened
(`sigmas[i].item()`, `torch.tensor(rks, device=device)`, `if mask.any():`) says which pattern it is,
which way the data moved and how to fix it. Adding a pattern is adding one entry to PATTERNS.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .findings import Kind


@dataclass(frozen=True)
class Pattern:
    name: str
    regex: re.Pattern[str]
    kind: str
    hint: str


def _p(name: str, regex: str, kind: str, hint: str) -> Pattern:
    return Pattern(name, re.compile(regex), Kind(kind), hint)


# First match wins: specific patterns before general ones.
PATTERNS: tuple[Pattern, ...] = (
    _p(
        "synchronize",
        r"\bsynchronize\s*\(",
        "device_sync",
        "explicit synchronize: drop it from the hot loop, or wait on a torch.cuda.Event for one stream",
    ),
    _p(
        "item",
        r"\.item\s*\(",
        "dtoh_sync",
        ".item() reads a device scalar: keep it a tensor (torch.where, tensor math) or compute it on the host",
    ),
    _p(
        "tolist",
        r"\.tolist\s*\(",
        "dtoh_sync",
        ".tolist() copies to the host: keep the values on the device or build the list before the loop",
    ),
    _p(
        "to_host",
        r"\.(cpu|numpy)\s*\(|\.to\s*\(\s*(['\"]cpu['\"]|device\s*=\s*['\"]cpu['\"]|torch\.device\(['\"]cpu)",
        "dtoh_sync",
        "a copy to the host waits for the device: move it out of the loop or copy non_blocking into pinned memory",
    ),
    _p(
        "format",
        r"\bprint\s*\(|\b(str|repr|format)\s*\(|\bf[\"']|\.format\s*\(|%\s*\(?\w",
        "dtoh_sync",
        "formatting a device tensor (print, str, repr, an f-string) copies it to the host and waits: format it "
        "outside the loop, or log a value you keep on the host",
    ),
    _p(
        "scalar_cast",
        r"^\s*(float|int|bool|complex)\s*\(|math\.\w+\s*\(",
        "dtoh_sync",
        "a Python number of a device tensor: keep the computation in tensors or read it once before the loop",
    ),
    _p(
        "repeat_interleave",
        r"repeat_interleave\s*\(",
        "dtoh_sync",
        "repeat_interleave with tensor repeats sizes its output from device values: pass output_size=",
    ),
    _p(
        "data_dependent_shape",
        r"\.nonzero\s*\(|torch\.nonzero\s*\(|torch\.where\s*\([^,()]*\)$|masked_select|\.unique\s*\(|torch\.unique|"
        r"argwhere|\.any\s*\(\s*\)\s*\.item|bincount",
        "dtoh_sync",
        "the output shape depends on device values (nonzero/unique/mask): use a fixed-shape form "
        "(torch.where with two branches, masked_fill, scheduler.set_begin_index)",
    ),
    _p(
        "tensor_from_data",
        r"torch\.(tensor|as_tensor|asarray|from_numpy)\s*\(",
        "htod_sync",
        "a tensor built from host data is copied to the device on every call: build it once "
        "(a buffer or cached attribute), or create it on the device (torch.full/arange/stack)",
    ),
    _p(
        "to_device",
        r"\.(to|cuda|copy_|type)\s*\(",
        "htod_sync",
        "a blocking copy of pageable host memory: keep the constant on the device, or pin it and "
        "copy with non_blocking=True",
    ),
    _p(
        "shape_from_value",
        r"torch\.(zeros|ones|empty|full|arange|linspace|randn|rand|randint)\w*\s*\(|\.(view|reshape|expand|"
        r"repeat|narrow|split|chunk)\s*\(",
        "dtoh_sync",
        "a shape or size computed from a device value: compute sizes from Python ints/shapes, not tensors",
    ),
)

CONDITION_HINT = (
    "a device tensor used as a condition (if/while/assert) is read back to the host: "
    "use torch.where or decide on host values"
)
MASK_INDEX_HINT = "boolean-mask indexing sizes its output from device values: use torch.where or masked_fill"
DEVICE_INDEX_HINT = (
    "a host tensor indexed with device indices (a table indexed by a timestep) copies them to the host: keep the "
    "table on the device (a buffer), or index it with a Python int"
)
GENERIC_HINT = "the host waits for the device here: keep values on the device, or move this out of the step"

_CONDITION_OPS = ("POP_JUMP", "JUMP_IF", "TO_BOOL", "UNARY_NOT")


@dataclass(frozen=True)
class SyncDiagnosis:
    pattern: str
    kind: str
    hint: str


@functools.lru_cache(maxsize=1024)  # a sync site repeats every step
def diagnose(expression: str, opname: str = "", default_kind: Kind = Kind.DTOH_SYNC) -> SyncDiagnosis:
    """Classify the expression that was executing when a sync happened."""
    if opname.startswith(_CONDITION_OPS):
        return SyncDiagnosis("condition", Kind.DTOH_SYNC, CONDITION_HINT)
    if opname in ("BINARY_SUBSCR", "BINARY_OP") and "[" in expression and "synchronize" not in expression:
        return SyncDiagnosis("mask_index", Kind.DTOH_SYNC, MASK_INDEX_HINT)
    for pattern in PATTERNS:
        if pattern.regex.search(expression):
            return SyncDiagnosis(pattern.name, pattern.kind, pattern.hint)
    return SyncDiagnosis("unknown", default_kind, GENERIC_HINT)


def hint_for(pattern_name: str) -> str:
    for pattern in PATTERNS:
        if pattern.name == pattern_name:
            return pattern.hint
    named = {"condition": CONDITION_HINT, "mask_index": MASK_INDEX_HINT, "device_index": DEVICE_INDEX_HINT}
    return named.get(pattern_name, GENERIC_HINT)


def indexed_on_host(subscripted: object) -> SyncDiagnosis | None:
    """What a subscript that synced is, from the tensor it indexes (`attribution.subscripted`): indices of a host
    tensor (DDIM's `self.alphas_cumprod[timestep]`) are copied back to the host; a device tensor's boolean mask is
    `mask_index`. None where the indexed value is no host tensor."""
    device = getattr(subscripted, "device", None)
    if getattr(device, "type", "cuda") == "cpu":
        return SyncDiagnosis("device_index", Kind.DTOH_SYNC, DEVICE_INDEX_HINT)
    return None
