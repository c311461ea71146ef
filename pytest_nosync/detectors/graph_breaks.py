"""Graph breaks of a denoiser, from one dynamo pass over the inputs of a real step.

`torch._dynamo.explain` sees breaks before any backend runs, so no inductor compile is paid. The inputs
come from a forward pre-hook during a real pipeline call (`capture_inputs`), so the traced path is the
one the pipeline takes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils._pytree import tree_map

from .. import attribution
from ..findings import IN_STEP, Finding, Frame

HINT = (
    "a graph break splits the compiled denoiser: keep Python control flow off tensor values, avoid "
    ".item()/.tolist()/print in forward, or mark the helper with torch.compiler.allow_in_graph"
)


@contextmanager
def capture_inputs(module: torch.nn.Module) -> Iterator[dict[str, Any]]:
    """Record (a detached copy of) the args and kwargs of the module's first forward call in the block."""
    captured: dict[str, Any] = {}

    def hook(mod: Any, args: Any, kwargs: Any) -> None:
        if "args" not in captured:
            copy = tree_map(lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v, (args, kwargs))
            captured["args"], captured["kwargs"] = copy

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield captured
    finally:
        handle.remove()


def explain_graph_breaks(
    module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[list[Finding], dict[str, Any]]:
    """Run one dynamo pass over module(*args, **kwargs); one finding per break reason and location."""
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            explained = torch._dynamo.explain(module)(*args, **kwargs)
    finally:
        torch._dynamo.reset()  # leave no compiled code or cache entries behind for later tests
    findings: list[Finding] = []
    for reason in explained.break_reasons:
        frames = [Frame(f.filename, f.lineno or 0, f.name, f.line or "") for f in reversed(reason.user_stack)]
        where, stack = attribution.attribute(frames)
        findings.append(
            Finding(
                kind="graph_break",
                where=where,
                stack=stack,
                step=0,
                phase=IN_STEP,
                region="transformer_forward",
                hint=HINT,
                detail=str(reason.reason).strip().splitlines()[0][:300],
                source="dynamo_explain",
            )
        )
    metrics = {
        "graph_count": explained.graph_count,
        "graph_break_count": max(explained.graph_break_count, len(explained.break_reasons)),
        "op_count": explained.op_count,
    }
    return findings, metrics
