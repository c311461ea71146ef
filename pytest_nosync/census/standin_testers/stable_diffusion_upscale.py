"""The Stable Diffusion x4 upscaler: its UNet takes the latents beside the low-resolution image (4 + 3 channels),
which no tester of its family builds (diffusers main tests it in no module)."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import AutoencoderKL, DDIMScheduler, DDPMScheduler, StableDiffusionUpscalePipeline, UNet2DConditionModel
from transformers import CLIPTextConfig, CLIPTextModel

from .tiny import clip_tokenizer, seeded

TEXT_WIDTH = 32


class StableDiffusionUpscaleStandIn:
    pipeline_class = StableDiffusionUpscalePipeline

    def get_dummy_components(self) -> dict[str, Any]:
        unet = seeded(
            lambda: UNet2DConditionModel(
                block_out_channels=(32, 32, 64),
                layers_per_block=2,
                sample_size=32,
                in_channels=7,
                out_channels=4,
                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
                up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
                cross_attention_dim=TEXT_WIDTH,
                attention_head_dim=8,
                use_linear_projection=True,
                only_cross_attention=(True, True, False),
                num_class_embeds=100,  # the noise level given to the low-resolution image
            )
        )
        vae = seeded(
            lambda: AutoencoderKL(
                block_out_channels=[32, 32, 64],
                in_channels=3,
                out_channels=3,
                down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D"],
                up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D"],
                latent_channels=4,
                scaling_factor=0.08333,  # the upscaler's own
            )
        )
        text_encoder = seeded(
            lambda: CLIPTextModel(
                CLIPTextConfig(
                    bos_token_id=0,
                    eos_token_id=2,
                    hidden_size=TEXT_WIDTH,
                    intermediate_size=37,
                    num_attention_heads=4,
                    num_hidden_layers=2,
                    pad_token_id=1,
                    vocab_size=1000,
                    hidden_act="gelu",
                    projection_dim=512,
                )
            )
        )
        return {
            "unet": unet,
            "low_res_scheduler": DDPMScheduler(),
            "scheduler": DDIMScheduler(prediction_type="v_prediction"),
            "vae": vae,
            "text_encoder": text_encoder,
            "tokenizer": clip_tokenizer(),
            "max_noise_level": 350,
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        generator = torch.Generator("cpu").manual_seed(seed)
        return {
            "prompt": "A painting of a squirrel eating a burger",
            "image": torch.rand((1, 3, 8, 8), generator=generator),
            "generator": generator,
            "num_inference_steps": 2,
            "guidance_scale": 6.0,
            "output_type": "np",
        }
