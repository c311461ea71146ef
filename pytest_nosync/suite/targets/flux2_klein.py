"""FLUX.2 [klein] base 9B: the undistilled Klein, run with real CFG (a second transformer call per step)."""

from __future__ import annotations

from typing import Any

from pytest_nosync.suite.targets._common import FLUX_DIT, FLUX_VAE, call, components, flow_match, prompts, seeded
from pytest_nosync.suite.targets.base import CallContext

# The Klein pipeline pads the Qwen3 prompt to `max_sequence_length=512`, the empty negative prompt too.
TEXT_SEQ_LEN = 512
# Latent grid of the call, before 2x2 patchification: 8x8 = 64 image tokens.
LATENT_SIZE = 16


def build_components() -> dict[str, Any]:
    transformer = seeded(
        "Flux2Transformer2DModel",
        **FLUX_DIT,
        # Klein stacks three Qwen3 hidden layers: 3 x 16 here, 3 x 4096 for the 9B.
        joint_attention_dim=48,
        timestep_guidance_channels=32,
        axes_dims_rope=(4, 4, 4, 4),
        guidance_embeds=False,  # the base model is not guidance-distilled
    )
    vae = seeded("AutoencoderKLFlux2", **FLUX_VAE)
    scheduler = flow_match(3.0)
    return components(scheduler, vae, transformer, is_distilled=False)


def call_kwargs(pipe: Any, ctx: CallContext) -> dict[str, Any]:
    width = pipe.transformer.config.joint_attention_dim
    size = LATENT_SIZE * pipe.vae_scale_factor
    return {**prompts(ctx, TEXT_SEQ_LEN, width), "guidance_scale": 4.0, **call(ctx, size)}
