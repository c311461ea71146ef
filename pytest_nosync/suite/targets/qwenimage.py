"""Qwen-Image and Qwen-Image-Edit-2511: an MM-DiT with "true CFG", two transformer calls per step.

Both share the transformer layout; the edit model's transformer has `zero_cond_t=True` (the input image's
tokens are modulated with timestep 0) and is driven with an input image, so each sample carries two
`img_shapes`: the image being generated and the condition image. Its tiny VAE is shallower at full resolution,
where the edit pipeline encodes its input image.
"""

from __future__ import annotations

from typing import Any

import torch
from PIL import Image

from pytest_nosync.suite.targets._common import call, components, flow_match, randn, seeded
from pytest_nosync.suite.targets.base import CallContext

# Qwen2.5-VL prompt embeddings keep only the prompt's own tokens (the template's system part is dropped), so
# they are short and the negative prompt (" ") is shorter than the prompt.
PROMPT_SEQ_LEN = 48
NEGATIVE_SEQ_LEN = 6
# The edit template also carries the condition image, resized to 384x384 for the vision tower: 196 tokens
# after the 2x2 merge, in the negative prompt as well.
EDIT_IMAGE_TOKENS = 196
# Latent grid of the generated image before 2x2 packing: 8x8 = 64 image tokens.
LATENT_SIZE = 16

# Three spatial downsamplings like the real VAE (8x), two channels wide.
_VAE = {"dim_mult": [1, 1, 1, 1], "num_res_blocks": 1, "temperal_downsample": [False, True, True]}
# The edit pipeline resizes its input image to about 1024x1024 whatever its size (VAE_IMAGE_SIZE) and VAE-encodes
# it in every call. With the layout above that encode was ~80% of the call on a CPU (RMS norms and convolutions of
# the residual blocks at full resolution) and gave 4096 condition tokens. Here the encoder has no residual block
# (the decoder keeps one per level) and a fourth downsampling (16x): 1024 condition tokens, and the same code runs.
_EDIT_VAE = {"dim_mult": [1, 1, 1, 1, 1], "num_res_blocks": 0, "temperal_downsample": [False, True, True, False]}


def _components(zero_cond_t: bool) -> dict[str, Any]:
    transformer = seeded(
        "QwenImageTransformer2DModel",
        patch_size=2,
        in_channels=16,  # 4 latent channels, packed 2x2
        out_channels=4,
        num_layers=2,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=32,
        axes_dims_rope=(4, 6, 6),  # sums to attention_head_dim, as (16, 56, 56) does for 128
        # Only set when needed: diffusers releases before the 2511 support do not know the argument.
        **({"zero_cond_t": True} if zero_cond_t else {}),
    )
    vae = seeded(
        "AutoencoderKLQwenImage",
        base_dim=2,
        z_dim=4,
        latents_mean=[0.0] * 4,
        latents_std=[1.0] * 4,
        **(_EDIT_VAE if zero_cond_t else _VAE),
    )
    # The Qwen-Image scheduler config. With `shift_terminal`, diffusers divides by zero for a one-step
    # schedule (the sigma is NaN): call with two steps or more.
    scheduler = flow_match(
        1.0, base_shift=0.5, max_shift=0.9, base_image_seq_len=256, max_image_seq_len=8192, shift_terminal=0.02
    )
    return components(scheduler, vae, transformer)


def build_components() -> dict[str, Any]:
    return _components(zero_cond_t=False)


def build_edit_components() -> dict[str, Any]:
    return {**_components(zero_cond_t=True), "processor": None}


def _prompt_kwargs(pipe: Any, ctx: CallContext, extra_tokens: int = 0) -> dict[str, torch.Tensor]:
    width = pipe.transformer.config.joint_attention_dim
    pos, neg = PROMPT_SEQ_LEN + extra_tokens, NEGATIVE_SEQ_LEN + extra_tokens
    # A batch of one prompt is never padded, so the masks are all ones (as the text encoder returns them).
    return {
        "prompt_embeds": randn(ctx, 1, pos, width),
        "prompt_embeds_mask": torch.ones(1, pos, dtype=torch.long, device=ctx.device),
        "negative_prompt_embeds": randn(ctx, 1, neg, width, offset=1),
        "negative_prompt_embeds_mask": torch.ones(1, neg, dtype=torch.long, device=ctx.device),
    }


def call_kwargs(pipe: Any, ctx: CallContext) -> dict[str, Any]:
    size = LATENT_SIZE * pipe.vae_scale_factor
    return {**_prompt_kwargs(pipe, ctx), "true_cfg_scale": 4.0, **call(ctx, size)}


def edit_call_kwargs(pipe: Any, ctx: CallContext) -> dict[str, Any]:
    size = LATENT_SIZE * pipe.vae_scale_factor
    # The pipeline resizes any input image to about 1024x1024 before VAE-encoding it, whatever its size.
    image = Image.new("RGB", (size, size), (128, 96, 64))
    return {
        **_prompt_kwargs(pipe, ctx, extra_tokens=EDIT_IMAGE_TOKENS),
        "image": image,
        "true_cfg_scale": 4.0,
        **call(ctx, size),
    }
