"""Wan 2.1 T2V 14B: a video DiT with UniPC (flow) sampling and CFG as two transformer calls per step."""

from __future__ import annotations

from typing import Any

from pytest_nosync.suite.targets._common import call, components, diffusers_class, prompts, seeded
from pytest_nosync.suite.targets.base import CallContext

# UMT5 prompts are padded to `max_sequence_length=512`, the negative prompt too.
TEXT_SEQ_LEN = 512
# 81 frames are 21 latent frames; 9 frames (3 latent frames) keep the same (n - 1) % 4 == 0 layout.
NUM_FRAMES = 9
# Latent grid of one frame before the 2x2 patch embedding: 4x4 tokens per latent frame.
LATENT_SIZE = 8


def build_components() -> dict[str, Any]:
    transformer = seeded(
        "WanTransformer3DModel",
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=16,  # RoPE splits it 8/4/4 over frames, rows and columns
        in_channels=4,
        out_channels=4,
        text_dim=32,
        freq_dim=32,
        ffn_dim=32,
        num_layers=2,
        cross_attn_norm=True,
        qk_norm="rms_norm_across_heads",
        rope_max_seq_len=32,
    )
    # Three spatial and two temporal downsamplings, as in the real Wan VAE (8x spatial, 4x temporal).
    vae = seeded(
        "AutoencoderKLWan",
        base_dim=4,
        z_dim=4,
        dim_mult=[1, 1, 1, 1],
        num_res_blocks=1,
        temperal_downsample=[False, True, True],
        latents_mean=[0.0] * 4,
        latents_std=[1.0] * 4,
    )
    # The Wan2.1 scheduler config: UniPC in flow mode, shift 3.0 (the 480p value).
    scheduler = diffusers_class("UniPCMultistepScheduler")(
        num_train_timesteps=1000,
        prediction_type="flow_prediction",
        use_flow_sigmas=True,
        flow_shift=3.0,
        solver_order=2,
        solver_type="bh2",
        predict_x0=True,
        lower_order_final=True,
        final_sigmas_type="zero",
        timestep_spacing="linspace",
        beta_schedule="linear",
        beta_start=0.0001,
        beta_end=0.02,
    )
    return components(scheduler, vae, transformer)


def call_kwargs(pipe: Any, ctx: CallContext) -> dict[str, Any]:
    text_dim = pipe.transformer.config.text_dim
    size = LATENT_SIZE * pipe.vae_scale_factor_spatial
    return {**prompts(ctx, TEXT_SEQ_LEN, text_dim), "guidance_scale": 5.0, **call(ctx, size, num_frames=NUM_FRAMES)}
