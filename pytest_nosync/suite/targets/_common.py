"""Small helpers the target builders share: a seeded model, the components every pipeline takes, a flow-matching
scheduler, FLUX's tiny layout, and the prompt and call kwargs every target's call is made of."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from pytest_nosync.detection.devices import generator as device_generator
from pytest_nosync.suite.targets.base import CallContext

# The FLUX families' tiny MM-DiT: one double-stream and one single-stream block, two heads of 16 over 4 latent channels
# packed (FLUX.1) or patchified (FLUX.2) 2x2.
FLUX_DIT = {
    "patch_size": 1,
    "in_channels": 16,
    "num_layers": 1,
    "num_single_layers": 1,
    "attention_head_dim": 16,
    "num_attention_heads": 2,
}
# Their tiny image VAE (AutoencoderKL, AutoencoderKLFlux2): two levels, 4 latent channels.
FLUX_VAE = {
    "in_channels": 3,
    "out_channels": 3,
    "down_block_types": ("DownEncoderBlock2D",) * 2,
    "up_block_types": ("UpDecoderBlock2D",) * 2,
    "block_out_channels": (8, 16),
    "layers_per_block": 1,
    "latent_channels": 4,
    "norm_num_groups": 4,
    "sample_size": 32,
}


def diffusers_module() -> ModuleType:
    """diffusers, imported on the first build: the registry is read where nothing is built (a checking run's option
    checks, graph helpers' parent), and diffusers takes seconds to import."""
    import diffusers  # plugin cheap: only a build pays diffusers' import (see above)

    return diffusers


def diffusers_class(name: str) -> Any:
    """The class diffusers exports as `name`, as the targets name their classes (`extra_classes`)."""
    return getattr(diffusers_module(), name)


def seeded(cls: str | Callable[..., Any], **config: Any) -> Any:
    """A model of `cls` (a class, or the name of one diffusers exports) with random weights from seed 0, as diffusers'
    own tests build each of their tiny components: the same weights whatever was built before it."""
    make = diffusers_class(cls) if isinstance(cls, str) else cls
    torch.manual_seed(0)
    return make(**config)


def components(scheduler: Any, vae: Any, transformer: Any, **more: Any) -> dict[str, Any]:
    """A pipeline's components without its text encoder and tokenizer (the call passes prompt embeddings), and
    `more` of its own."""
    return {
        "scheduler": scheduler,
        "vae": vae,
        "transformer": transformer,
        "text_encoder": None,
        "tokenizer": None,
        **more,
    }


def flow_match(shift: float, **config: Any) -> Any:
    """FlowMatchEulerDiscreteScheduler with resolution-dependent shift, as the checkpoints configure it (`config`: the
    shift's range and the rest of the checkpoint's scheduler config)."""
    scheduler = diffusers_class("FlowMatchEulerDiscreteScheduler")
    return scheduler(num_train_timesteps=1000, shift=shift, use_dynamic_shifting=True, **config)


def randn(ctx: CallContext, *shape: int, offset: int = 0) -> torch.Tensor:
    """Seeded noise standing in for text-encoder outputs, made on the CPU: the same values on every device."""
    gen = torch.Generator().manual_seed(ctx.seed + offset)
    return torch.randn(*shape, generator=gen).to(device=ctx.device, dtype=ctx.dtype)


def prompts(ctx: CallContext, seq_len: int, width: int) -> dict[str, torch.Tensor]:
    """A prompt's and the negative prompt's embeddings, both padded to `seq_len` tokens (real CFG)."""
    return {
        "prompt_embeds": randn(ctx, 1, seq_len, width),
        "negative_prompt_embeds": randn(ctx, 1, seq_len, width, offset=1),
    }


def call(ctx: CallContext, size: int, **between: Any) -> dict[str, Any]:
    """The kwargs every target's call ends with: a `size` x `size` output (and `between`: a video's frames and
    rate), the context's steps and generator, tensors out."""
    return {
        "height": size,
        "width": size,
        **between,
        "num_inference_steps": ctx.steps,
        "generator": generator(ctx),
        "output_type": "pt",
    }


def generator(ctx: CallContext) -> torch.Generator:
    """The call's generator lives on the call's device: a CPU generator would make the pipeline sample latents
    on the host and copy them over, a transfer that belongs to the harness and not to the pipeline."""
    return device_generator(ctx.device, ctx.seed)  # the emulated device has no torch.Generator of its own
