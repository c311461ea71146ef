"""FLUX.2 [klein] base 9B: the undistilled Klein, run with real CFG (a second transformer call per step)."""

from __future__ import annotations

from typing import Any

import torch

from pytest_nosync.suite.targets._common import generator, randn
from pytest_nosync.suite.targets.base import CallContext, Target

# The Klein pipeline pads the Qwen3 prompt to `max_sequence_length=512`, the empty negative prompt too.
TEXT_SEQ_LEN = 512
# Latent grid of the call, before 2x2 patchification: 8x8 = 64 image tokens.
LATENT_SIZE = 16


def build_components() -> dict[str, Any]:
    import diffusers

    torch.manual_seed(0)
    transformer = diffusers.Flux2Transformer2DModel(
        patch_size=1,
        in_channels=16,  # 4 latent channels, patchified 2x2
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        # Klein stacks three Qwen3 hidden layers: 3 x 16 here, 3 x 4096 for the 9B.
        joint_attention_dim=48,
        timestep_guidance_channels=32,
        axes_dims_rope=(4, 4, 4, 4),
        guidance_embeds=False,  # the base model is not guidance-distilled
    )
    torch.manual_seed(0)
    vae = diffusers.AutoencoderKLFlux2(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2,
        block_out_channels=(8, 16),
        layers_per_block=1,
        latent_channels=4,
        norm_num_groups=4,
        sample_size=32,
    )
    scheduler = diffusers.FlowMatchEulerDiscreteScheduler(
        num_train_timesteps=1000, shift=3.0, use_dynamic_shifting=True
    )
    return {
        "scheduler": scheduler,
        "vae": vae,
        "transformer": transformer,
        "text_encoder": None,
        "tokenizer": None,
        "is_distilled": False,
    }


def call_kwargs(pipe: Any, ctx: CallContext) -> dict[str, Any]:
    width = pipe.transformer.config.joint_attention_dim
    size = LATENT_SIZE * pipe.vae_scale_factor
    return {
        "prompt_embeds": randn(ctx, 1, TEXT_SEQ_LEN, width),
        "negative_prompt_embeds": randn(ctx, 1, TEXT_SEQ_LEN, width, offset=1),
        "guidance_scale": 4.0,
        "height": size,
        "width": size,
        "num_inference_steps": ctx.steps,
        "generator": generator(ctx),
        "output_type": "pt",
    }


FLUX2_KLEIN = Target(
    name="flux2_klein",
    pipeline_class="Flux2KleinPipeline",
    checkpoint="black-forest-labs/FLUX.2-klein-base-9B",
    build_components=build_components,
    call_kwargs=call_kwargs,
    text_encoding="no Qwen3: random stacked-layer prompt and negative embeddings (512 tokens) passed in",
    description="FLUX.2 [klein] base text-to-image, CFG 4.0: conditional and unconditional call per step",
    extra_classes=("Flux2Transformer2DModel", "AutoencoderKLFlux2", "FlowMatchEulerDiscreteScheduler"),
)
