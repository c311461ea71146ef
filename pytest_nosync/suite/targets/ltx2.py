"""LTX-2: a joint audio-video DiT; CFG runs as one transformer call over a doubled batch.

The pipeline runs without its Gemma 3 text encoder, but keeps the text connectors: `prompt_embeds` are the
encoder's hidden states of every layer, stacked ([batch, seq, hidden x (layers + 1)]), and the connectors
turn them into the video and audio prompt streams.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from pytest_nosync.suite.targets._common import call, components, flow_match, randn, seeded
from pytest_nosync.suite.targets.base import CallContext

# Gemma prompts are left-padded to `max_sequence_length=1024` (a multiple of the connectors' registers).
TEXT_SEQ_LEN = 1024
PROMPT_TOKENS = 128
NEGATIVE_TOKENS = 16
# Latent video grid: 3 latent frames of 8x8 (5 frames at 64x64 here, 17 frames at 256x256 on LTX-2).
LATENT_FRAMES = 3
LATENT_SIZE = 8
FRAME_RATE = 24.0

# Newer pipelines default to LTX-2.3 sampling (STG, modality guidance, guidance rescale, cross timestep);
# these values keep the LTX-2.0 behaviour, plain CFG, and are passed only where the pipeline knows them.
LTX2_0_SAMPLING = {
    "audio_guidance_scale": 4.0,  # LTX-2.0 guides audio like video
    "stg_scale": 0.0,
    "audio_stg_scale": 0.0,
    "modality_scale": 1.0,
    "audio_modality_scale": 1.0,
    "guidance_rescale": 0.0,
    "audio_guidance_rescale": 0.0,
    "spatio_temporal_guidance_blocks": None,
    "use_cross_timestep": False,
}

# Gemma 3 stand-in: hidden width and number of layers (LTX-2: 3840 and 48).
TEXT_HIDDEN = 32
TEXT_LAYERS = 2
# The video and the audio prompt streams' connectors, alike: heads x head_dim must equal TEXT_HIDDEN.
CONNECTOR = {"num_attention_heads": 4, "attention_head_dim": 8, "num_layers": 1, "num_learnable_registers": 128}


def build_components() -> dict[str, Any]:
    # Not exported at the top level: they ship in the LTX2Pipeline's own package, so that class implies them. Imported
    # here, plugin cheap as in _common.diffusers_module: the registry is read where nothing is built.
    from diffusers.pipelines.ltx2 import LTX2TextConnectors, LTX2Vocoder

    connectors = seeded(
        LTX2TextConnectors,
        caption_channels=TEXT_HIDDEN,
        text_proj_in_factor=TEXT_LAYERS + 1,  # every layer plus the embeddings
        **{f"{stream}_connector_{name}": value for stream in ("video", "audio") for name, value in CONNECTOR.items()},
        connector_rope_base_seq_len=4096,
        rope_theta=10000.0,
        rope_double_precision=True,
        causal_temporal_positioning=False,
        rope_type="split",
    )
    # 4x4 patchification and one spatio-temporal downsampling: 8x in space, 2x in time (LTX-2: 32x, 8x).
    vae = seeded(
        "AutoencoderKLLTX2Video",
        in_channels=3,
        out_channels=3,
        latent_channels=8,
        block_out_channels=(8,),
        decoder_block_out_channels=(8,),
        layers_per_block=(1,),
        decoder_layers_per_block=(1, 1),
        spatio_temporal_scaling=(True,),
        decoder_spatio_temporal_scaling=(True,),
        decoder_inject_noise=(False, False),
        downsample_type=("spatiotemporal",),
        upsample_residual=(False,),
        upsample_factor=(1,),
        timestep_conditioning=False,
        patch_size=4,
        patch_size_t=1,
        encoder_causal=True,
        decoder_causal=False,
    )
    # Packed audio latents are latent_channels x mel_bins / 4 = 8 wide; the VAE's latent statistics are
    # `base_channels` long and must match that width.
    audio_vae = seeded(
        "AutoencoderKLLTX2Audio",
        base_channels=8,
        output_channels=2,
        ch_mult=(1, 1, 1),
        num_res_blocks=1,
        attn_resolutions=None,
        in_channels=2,
        resolution=32,
        latent_channels=2,
        norm_type="pixel",
        causality_axis="height",
        dropout=0.0,
        mid_block_add_attention=False,
        sample_rate=16000,
        mel_hop_length=160,
        is_causal=True,
        mel_bins=16,
    )
    vocoder = seeded(
        LTX2Vocoder,
        in_channels=audio_vae.config.output_channels * audio_vae.config.mel_bins,
        hidden_channels=16,
        out_channels=2,
        upsample_kernel_sizes=[4, 4],
        upsample_factors=[2, 2],
        resnet_kernel_sizes=[3],
        resnet_dilations=[[1, 3, 5]],
        leaky_relu_negative_slope=0.1,
        output_sampling_rate=16000,
    )
    transformer = seeded(
        "LTX2VideoTransformer3DModel",
        in_channels=8,
        out_channels=8,
        patch_size=1,
        patch_size_t=1,
        num_attention_heads=2,
        attention_head_dim=8,
        cross_attention_dim=16,  # = video heads x head_dim
        vae_scale_factors=(2, 8, 8),  # RoPE works in pixel coordinates: the tiny VAE's strides
        audio_in_channels=8,  # packed audio latent width
        audio_out_channels=8,
        audio_num_attention_heads=2,
        audio_attention_head_dim=4,
        audio_cross_attention_dim=8,  # = audio heads x head_dim
        num_layers=2,
        qk_norm="rms_norm_across_heads",
        caption_channels=TEXT_HIDDEN,
        rope_double_precision=True,
        rope_type="split",
    )
    # The LTX-2 scheduler config. With `shift_terminal`, diffusers divides by zero for a one-step schedule
    # (the sigma is NaN): call with two steps or more.
    scheduler = flow_match(
        1.0, base_shift=0.95, max_shift=2.05, base_image_seq_len=1024, max_image_seq_len=4096, shift_terminal=0.1
    )
    return components(scheduler, vae, transformer, audio_vae=audio_vae, connectors=connectors, vocoder=vocoder)


def _left_padded_mask(ctx: CallContext, valid: int) -> torch.Tensor:
    mask = torch.zeros(1, TEXT_SEQ_LEN, dtype=torch.long)
    mask[:, TEXT_SEQ_LEN - valid :] = 1
    return mask.to(ctx.device)


def call_kwargs(pipe: Any, ctx: CallContext) -> dict[str, Any]:
    config = pipe.connectors.config
    width = config.caption_channels * config.text_proj_in_factor
    size = LATENT_SIZE * pipe.vae_spatial_compression_ratio
    num_frames = (LATENT_FRAMES - 1) * pipe.vae_temporal_compression_ratio + 1
    accepted = inspect.signature(pipe.__call__).parameters
    return {
        "prompt_embeds": randn(ctx, 1, TEXT_SEQ_LEN, width),
        "prompt_attention_mask": _left_padded_mask(ctx, PROMPT_TOKENS),
        "negative_prompt_embeds": randn(ctx, 1, TEXT_SEQ_LEN, width, offset=1),
        "negative_prompt_attention_mask": _left_padded_mask(ctx, NEGATIVE_TOKENS),
        "guidance_scale": 4.0,
        **{k: v for k, v in LTX2_0_SAMPLING.items() if k in accepted},
        **call(ctx, size, num_frames=num_frames, frame_rate=FRAME_RATE),
    }
