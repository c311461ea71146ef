"""FLUX.1-dev: a guidance-distilled MM-DiT; one transformer call per step, guidance fed as an embedding."""

from __future__ import annotations

from typing import Any

from pytest_nosync.suite.targets._common import FLUX_DIT, FLUX_VAE, call, components, flow_match, randn, seeded
from pytest_nosync.suite.targets.base import CallContext

# FLUX.1-dev pads the T5 prompt to `max_sequence_length=512`; nothing in the configs says so.
TEXT_SEQ_LEN = 512
# Latent grid of the call, before 2x2 packing: 8x8 = 64 image tokens.
LATENT_SIZE = 16


def build_components() -> dict[str, Any]:
    transformer = seeded(
        "FluxTransformer2DModel",
        **FLUX_DIT,
        joint_attention_dim=32,
        pooled_projection_dim=32,
        guidance_embeds=True,
        axes_dims_rope=(4, 6, 6),  # sums to attention_head_dim, as (16, 56, 56) does for 128
    )
    vae = seeded(
        "AutoencoderKL",
        **FLUX_VAE,
        use_quant_conv=False,
        use_post_quant_conv=False,
        scaling_factor=0.3611,
        shift_factor=0.1159,
    )
    # The FLUX.1-dev scheduler config: resolution-dependent shift.
    scheduler = flow_match(3.0, base_shift=0.5, max_shift=1.15, base_image_seq_len=256, max_image_seq_len=4096)
    return components(scheduler, vae, transformer, text_encoder_2=None, tokenizer_2=None)


def call_kwargs(pipe: Any, ctx: CallContext) -> dict[str, Any]:
    config = pipe.transformer.config
    size = LATENT_SIZE * pipe.vae_scale_factor
    return {
        # T5 hidden states and the pooled CLIP vector.
        "prompt_embeds": randn(ctx, 1, TEXT_SEQ_LEN, config.joint_attention_dim),
        "pooled_prompt_embeds": randn(ctx, 1, config.pooled_projection_dim, offset=1),
        "guidance_scale": 3.5,
        **call(ctx, size),
    }
