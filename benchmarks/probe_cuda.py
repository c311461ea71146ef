"""Probe what CUDA sync detection sees on this machine (kept as a reproducible record of the facts)."""

import warnings

import torch

torch.cuda.init()
x = torch.randn(8, device="cuda")
cases = {
    "item": lambda: x.sum().item(),
    "cuda.synchronize": lambda: torch.cuda.synchronize(),
    "event.synchronize": lambda: torch.cuda.Event().synchronize(),
    "stream.synchronize": lambda: torch.cuda.current_stream().synchronize(),
    "accelerator.synchronize": lambda: torch.accelerator.synchronize(),
    "to_cuda_pageable": lambda: torch.arange(8.0).to("cuda"),
    "to_cuda_pinned_nb": lambda: torch.arange(8.0).pin_memory().to("cuda", non_blocking=True),
    "stack": lambda: torch.stack([x[0], x[1]]),
}
for name, fn in cases.items():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        fn()
        torch.cuda.set_sync_debug_mode(0)
    print(f"{name:26s} warnings={len(rec)} {[(r.filename.split('/')[-1], r.lineno) for r in rec]}")

from torch.profiler import ProfilerActivity, profile  # noqa: E402

with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as prof:
    x.sum().item()
    torch.arange(8.0).to("cuda")
for e in prof.events():
    if e.name in ("cudaStreamSynchronize", "cudaMemcpyAsync", "cudaDeviceSynchronize") or "Memcpy" in e.name:
        chain = []
        p = e.cpu_parent
        while p is not None:
            chain.append(p.name)
            p = p.cpu_parent
        print("EVENT", e.name, "device_type", e.device_type, "parents", chain[:4], "stack", (e.stack or [])[:3])
        print("   kernels:", [k.name for k in getattr(e, "kernels", [])])
for e in prof.events():
    if e.name.startswith("aten::") and e.stack:
        print("OP", e.name, e.stack[:4], "kernels", [k.name for k in e.kernels])

try:
    import cupy

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as prof:
        a = cupy.arange(8)
        a.get()
    for e in prof.events():
        if "ynchron" in e.name or "Memcpy" in e.name or "cudaMemcpy" in e.name:
            chain = []
            p = e.cpu_parent
            while p is not None:
                chain.append((p.name, (p.stack or [])[:2]))
                p = p.cpu_parent
            print("CUPY", e.name, "parents", chain[:5], "stack", (e.stack or [])[:3])
except Exception as exc:  # cupy may be missing
    print("cupy probe skipped:", exc)
