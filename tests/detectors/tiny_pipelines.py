"""Tiny random-weight Flux and Wan pipelines for the detector tests (no download, no text encoder).

Sizes follow diffusers' own `get_dummy_components()`; the text encoders are replaced by random prompt
embeddings, made on the CPU and moved to the device as a harness would.
"""

from __future__ import annotations

from typing import Any

import torch

from pytest_nosync import backends


def flux() -> Any:
    import diffusers

    torch.manual_seed(0)
    transformer = diffusers.FluxTransformer2DModel(
        patch_size=1,
        in_channels=16,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=32,
        pooled_projection_dim=32,
        guidance_embeds=True,
        axes_dims_rope=(4, 6, 6),
    )
    torch.manual_seed(0)
    vae = diffusers.AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2,
        block_out_channels=(8, 16),
        layers_per_block=1,
        latent_channels=4,
        norm_num_groups=4,
        sample_size=32,
        use_quant_conv=False,
        use_post_quant_conv=False,
        scaling_factor=0.3611,
        shift_factor=0.1159,
    )
    scheduler = diffusers.FlowMatchEulerDiscreteScheduler(
        shift=3.0, use_dynamic_shifting=True, base_shift=0.5, max_shift=1.15, base_image_seq_len=256
    )
    pipe = diffusers.FluxPipeline(
        scheduler=scheduler, vae=vae, transformer=transformer, text_encoder=None, tokenizer=None,
        text_encoder_2=None, tokenizer_2=None,
    )  # fmt: skip
    pipe.set_progress_bar_config(disable=True)
    return pipe


def flux_kwargs(device: torch.device, steps: int = 2, text_len: int = 32) -> dict[str, Any]:
    return {
        "prompt_embeds": _randn(device, 1, text_len, 32),
        "pooled_prompt_embeds": _randn(device, 1, 32, seed=1),
        "guidance_scale": 3.5,
        "height": 32,
        "width": 32,
        "num_inference_steps": steps,
        "generator": backends.generator(device, 0),
        "output_type": "pt",
    }


def wan() -> Any:
    import diffusers

    torch.manual_seed(0)
    transformer = diffusers.WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=16,
        out_channels=16,
        text_dim=32,
        freq_dim=256,
        ffn_dim=32,
        num_layers=2,
        cross_attn_norm=True,
        qk_norm="rms_norm_across_heads",
        rope_max_seq_len=32,
    )
    torch.manual_seed(0)
    vae = diffusers.AutoencoderKLWan(
        base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True]
    )
    # The Wan 2.1 scheduler: UniPC in flow mode, which keeps its sigmas on the host.
    scheduler = diffusers.UniPCMultistepScheduler(
        prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=3.0
    )
    pipe = diffusers.WanPipeline(
        transformer=transformer, vae=vae, scheduler=scheduler, text_encoder=None, tokenizer=None
    )
    pipe.set_progress_bar_config(disable=True)
    return pipe


def wan_kwargs(device: torch.device, steps: int = 2, text_len: int = 32) -> dict[str, Any]:
    return {
        "prompt_embeds": _randn(device, 1, text_len, 32),
        "negative_prompt_embeds": _randn(device, 1, text_len, 32, seed=1),
        "guidance_scale": 5.0,
        "height": 16,
        "width": 16,
        "num_frames": 9,
        "num_inference_steps": steps,
        "generator": backends.generator(device, 0),
        "output_type": "pt",
    }


def _randn(device: torch.device, *shape: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen).to(device)
