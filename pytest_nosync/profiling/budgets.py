"""Budgets on a TraceDiagnosis, as findings: assertions on the figures a trace gives, off until one is set.

    findings = budget_findings(diagnosis, TraceBudgets(max_gpu_idle_fraction=0.2), warmup_steps=1)

Steps before `warmup_steps` are not judged (first-call work: allocator growth, cuDNN autotuning, lazy init).
GPU idle and host time become `host_overhead` findings whose `where` is the place that filled the gap (the
first Python frame outside torch and this plugin, else `<region NAME>` or `<op NAME>`); layout transforms and
copies become `layout_transform` findings at the kernel's launching op.
"""

from __future__ import annotations

from typing import Any

from ..findings import Finding, Phase
from .config import TraceBudgets
from .diagnose import HostWork, TraceDiagnosis

HOST_HINT = (
    "the GPU waits for host work between kernels: move it out of the loop, make it a device op, or "
    "capture the step (torch.compile mode='reduce-overhead' / CUDA graphs)"
)
LAYOUT_HINT = (
    "layout transforms around an op (e.g. Conv3d in NCDHW run as NDHWC): keep activations in the op's preferred "
    "layout (channels_last_3d) across the block, or compile it so the transforms fuse"
)
COPY_HINT = "device copies each step: avoid .contiguous()/.to()/cat on the hot path, or preallocate and reuse"


def _where(host: HostWork | None) -> str:
    if host is None:
        return "<host time>:0"
    if host.where:
        return host.where
    if host.region:
        return f"<region {host.region}>:0"
    if host.op:
        return f"<op {host.op}>:0"
    return "<host time>:0"


def budget_findings(diagnosis: TraceDiagnosis, budgets: TraceBudgets, warmup_steps: int = 0) -> list[Finding]:
    """One finding per step and budget exceeded (steps before `warmup_steps` are not judged)."""
    out: list[Finding] = []
    for s in diagnosis.steps:
        if s.step < warmup_steps:
            continue
        limit = budgets.max_gpu_idle_fraction
        if limit is not None and s.gpu_idle_fraction is not None and s.gpu_idle_fraction > limit:
            gap = s.gaps[0] if s.gaps else None
            largest = f"; largest gap {gap.ms:.3f} ms: {gap.host.label()}" if gap else ""
            out.append(
                _finding(
                    "host_overhead",
                    _where(gap.host if gap else None),
                    s.step,
                    gap.host.region if gap else None,
                    f"GPU idle {s.gpu_idle_fraction:.0%} of step {s.step} ({s.gpu_idle_ms:.3f} ms, budget "
                    f"{limit:.0%}){largest}",
                    HOST_HINT,
                    {"gpu_idle_fraction": s.gpu_idle_fraction, "gpu_idle_ms": s.gpu_idle_ms, "budget": limit},
                )
            )
        limit = budgets.max_cpu_ms_between_denoiser_calls
        between = s.max_ms_between_denoiser_calls
        if limit is not None and between is not None and between > limit:
            host = s.between_calls
            out.append(
                _finding(
                    "host_overhead",
                    _where(host),
                    s.step,
                    host.region if host else None,
                    f"{between:.3f} ms of host time between two denoiser calls (budget {limit} ms)"
                    + (f"; longest: {host.label()}" if host else ""),
                    HOST_HINT,
                    {"ms_between_denoiser_calls": between, "budget": limit},
                )
            )
        for count, kernels, limit, what, hint in (
            (
                s.layout_transforms,
                s.layout_kernels,
                budgets.max_layout_transforms_per_step,
                "layout transform",
                LAYOUT_HINT,
            ),
            (s.copies, s.copy_kernels, budgets.max_copies_per_step, "device copy", COPY_HINT),
        ):
            if limit is None or count <= limit:
                continue
            top = next(iter(kernels), "")
            via = top.split(" via ", 1)[1] if " via " in top else "no op"
            out.append(
                _finding(
                    "layout_transform",
                    f"<op {via}>:0",
                    s.step,
                    None,
                    f"{count} {what} kernel(s) in step {s.step} (budget {limit}): "
                    + ", ".join(f"{k} ×{n}" for k, n in list(kernels.items())[:4]),
                    hint,
                    {"count": count, "budget": limit, "kind": what, "kernels": dict(kernels)},
                )
            )
    return out


def _finding(
    kind: str, where: str, step: int, region: str | None, detail: str, hint: str, data: dict[str, Any]
) -> Finding:
    return Finding(
        kind=kind,
        where=where,
        step=step,
        phase=Phase.IN_STEP,
        region=region or "loop",
        detail=detail,
        hint=hint,
        source="trace",
        data=data,
    )
