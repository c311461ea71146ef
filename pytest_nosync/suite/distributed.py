"""Context parallelism across GPUs: do the collectives add host syncs inside a step?

Run one process per GPU with torchrun; each rank builds the target's tiny pipeline, shards its attention
with diffusers' `ContextParallelConfig` (Ulysses or ring), makes a warm-up call and a guarded call, and
writes its Report as JSON. The suite's distributed test launches this and judges the reports.

    torchrun --nproc-per-node 2 -m pytest_nosync.suite.distributed --target flux --out /tmp/cp

diffusers builds the context-parallel device mesh on the accelerator, so this needs one GPU per rank.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import diffusers
import torch
import torch.distributed as dist

from ..detection.guard_options import GuardOptions
from ..findings import Report
from .guarded_call import guarded_call
from .targets.base import CallContext
from .targets.registry import TARGETS, build_pipeline

RANK_REPORT = "rank{rank}.json"


def context_parallel_unavailable() -> str | None:
    """Why context parallelism cannot be checked with the installed diffusers, or None."""
    if not hasattr(diffusers, "ContextParallelConfig"):
        return f"diffusers {diffusers.__version__} has no ContextParallelConfig"
    return None


def run_rank(target_name: str, out: Path, mode: str, degree: int, steps: int) -> Report:
    # diffusers builds its device mesh on the accelerator: context parallelism needs one GPU per rank.
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    try:
        target = TARGETS[target_name]
        dtype = torch.bfloat16
        pipe = build_pipeline(target, device, dtype)
        denoiser = getattr(pipe, target.denoiser)
        config = diffusers.ContextParallelConfig(**{f"{mode}_degree": degree})
        # Ring attention merges partial results by their log-sum-exp, which diffusers' plain native backend does
        # not return; its cuDNN SDPA backend does.
        denoiser.set_attention_backend("native" if mode == "ulysses" else "_native_cudnn")
        denoiser.enable_parallelism(config=config)

        def kwargs() -> dict[str, Any]:
            return target.call_kwargs(pipe, CallContext(device, dtype, steps))

        with torch.no_grad():
            pipe(**kwargs())  # warm-up
        options = GuardOptions(checks=("syncs",), backend="cuda", denoiser=target.denoiser)
        check = f"context_parallel:{mode}{degree}"
        report = guarded_call(pipe, kwargs, options, test_id=f"rank{rank}", check=check, target=target_name)
        report.metrics["world_size"] = world
        out.mkdir(parents=True, exist_ok=True)
        (out / RANK_REPORT.format(rank=rank)).write_text(json.dumps(report.to_dict()))
        return report
    finally:
        dist.destroy_process_group()


def read_reports(out: Path, world: int) -> list[Report]:
    return [Report.from_dict(json.loads((out / RANK_REPORT.format(rank=r)).read_text())) for r in range(world)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_nosync.suite.distributed", description=__doc__)
    parser.add_argument("--target", default="flux")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--mode", choices=("ulysses", "ring"), default="ulysses")
    parser.add_argument("--degree", type=int, default=0, help="default: the world size")
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args(argv)
    reason = context_parallel_unavailable()
    if reason:
        print(f"context parallelism not checked: {reason}", file=sys.stderr)
        return 2
    degree = args.degree or int(os.environ.get("WORLD_SIZE", "1"))
    report = run_rank(args.target, args.out, args.mode, degree, args.steps)
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
