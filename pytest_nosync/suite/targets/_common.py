"""Small helpers the target builders share."""

from __future__ import annotations

import torch

from pytest_nosync.suite.targets.base import CallContext


def randn(ctx: CallContext, *shape: int, offset: int = 0) -> torch.Tensor:
    """Seeded noise standing in for text-encoder outputs, made on the CPU: the same values on every device."""
    gen = torch.Generator().manual_seed(ctx.seed + offset)
    return torch.randn(*shape, generator=gen).to(device=ctx.device, dtype=ctx.dtype)


def generator(ctx: CallContext) -> torch.Generator:
    """The call's generator lives on the call's device: a CPU generator would make the pipeline sample latents
    on the host and copy them over, a transfer that belongs to the harness and not to the pipeline."""
    from pytest_nosync.devices import generator as device_generator

    return device_generator(ctx.device, ctx.seed)  # the emulated device has no torch.Generator of its own
