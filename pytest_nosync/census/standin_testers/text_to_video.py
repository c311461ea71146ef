"""Text-to-video with a 3-D UNet (deprecated): the text-to-video class's stand-in tester, and the video-to-video
one's (its video of frames, channels last but one, as its video processor takes a tensor)."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import AutoencoderKL, DDIMScheduler, TextToVideoSDPipeline, UNet3DConditionModel, VideoToVideoSDPipeline
from transformers import CLIPTextConfig, CLIPTextModel

from .tiny import clip_tokenizer, seeded

TEXT_WIDTH = 32


class TextToVideoSDStandIn:
    pipeline_class = TextToVideoSDPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        unet = seeded(
            lambda: UNet3DConditionModel(
                block_out_channels=(8, 8),
                layers_per_block=1,
                sample_size=32,
                in_channels=4,
                out_channels=4,
                down_block_types=("CrossAttnDownBlock3D", "DownBlock3D"),
                up_block_types=("UpBlock3D", "CrossAttnUpBlock3D"),
                cross_attention_dim=TEXT_WIDTH,
                attention_head_dim=4,
                norm_num_groups=2,
            )
        )
        vae = seeded(
            lambda: AutoencoderKL(
                block_out_channels=[8],
                in_channels=3,
                out_channels=3,
                down_block_types=["DownEncoderBlock2D"],
                up_block_types=["UpDecoderBlock2D"],
                latent_channels=4,
                sample_size=32,
                norm_num_groups=2,
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
                    projection_dim=TEXT_WIDTH,
                )
            )
        )
        scheduler = DDIMScheduler(
            beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False, set_alpha_to_one=False
        )
        return {
            "unet": unet,
            "scheduler": scheduler,
            "vae": vae,
            "text_encoder": text_encoder,
            "tokenizer": clip_tokenizer(),
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return {
            "prompt": "A painting of a squirrel eating a burger",
            "generator": torch.Generator("cpu").manual_seed(seed),
            "num_inference_steps": 2,
            "guidance_scale": 6.0,
            "num_frames": 2,
            "output_type": "pt",
        }


class VideoToVideoSDStandIn(TextToVideoSDStandIn):
    pipeline_class = VideoToVideoSDPipeline

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        inputs = super().get_dummy_inputs(device, seed)
        del inputs["num_frames"]  # the video's
        video = torch.rand((1, 2, 3, 32, 32), generator=torch.Generator("cpu").manual_seed(seed))
        return {**inputs, "video": video}
