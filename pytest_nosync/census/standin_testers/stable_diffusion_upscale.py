"""The Stable Diffusion x4 upscaler: its UNet takes the latents beside the low-resolution image (4 + 3 channels),
which no tester of its family builds (diffusers main tests it in no module)."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import DDIMScheduler, DDPMScheduler, StableDiffusionUpscalePipeline, UNet2DConditionModel

from .tiny import TEXT_WIDTH, clip_text, clip_tokenizer, kl_vae, prompted, seeded


class StableDiffusionUpscaleStandIn:
    pipeline_class = StableDiffusionUpscalePipeline

    def get_dummy_components(self) -> dict[str, Any]:
        # 7 input channels: the latents beside the low-resolution image; a class embedding for its noise level
        unet = seeded(lambda: UNet2DConditionModel(
            block_out_channels=(32, 32, 64), layers_per_block=2, sample_size=32, in_channels=7, out_channels=4,
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=TEXT_WIDTH,
            attention_head_dim=8, use_linear_projection=True, only_cross_attention=(True, True, False),
            num_class_embeds=100,
        ))  # fmt: skip
        return {
            "unet": unet,
            "low_res_scheduler": DDPMScheduler(),
            "scheduler": DDIMScheduler(prediction_type="v_prediction"),
            "vae": kl_vae((32, 32, 64), scaling_factor=0.08333),  # the upscaler's own scaling
            "text_encoder": clip_text(hidden_act="gelu", projection_dim=512),
            "tokenizer": clip_tokenizer(),
            "max_noise_level": 350,
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return prompted(seed, image=torch.rand((1, 3, 8, 8), generator=torch.Generator("cpu").manual_seed(seed)))
