"""I2VGen-XL (deprecated): image-to-video with a UNet conditioned on a CLIP image embedding and the first frame."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import AutoencoderKL, DDIMScheduler, I2VGenXLPipeline, I2VGenXLUNet
from transformers import (
    CLIPImageProcessor,
    CLIPTextConfig,
    CLIPTextModel,
    CLIPVisionConfig,
    CLIPVisionModelWithProjection,
)

from .tiny import clip_tokenizer, seeded

WIDTH = 4  # the text and image embeddings' width, the UNet's cross-attention width


class I2VGenXLStandIn:
    pipeline_class = I2VGenXLPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        unet = seeded(
            lambda: I2VGenXLUNet(
                block_out_channels=(4, 8),
                layers_per_block=1,
                sample_size=32,
                in_channels=4,
                out_channels=4,
                down_block_types=("CrossAttnDownBlock3D", "DownBlock3D"),
                up_block_types=("UpBlock3D", "CrossAttnUpBlock3D"),
                cross_attention_dim=WIDTH,
                attention_head_dim=4,
                num_attention_heads=None,
                norm_num_groups=2,
            )
        )
        vae = seeded(
            lambda: AutoencoderKL(
                block_out_channels=(8,),
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
                    hidden_size=WIDTH,
                    intermediate_size=16,
                    num_attention_heads=2,
                    num_hidden_layers=2,
                    pad_token_id=1,
                    vocab_size=1000,
                    hidden_act="gelu",
                    projection_dim=32,
                )
            )
        )
        image_encoder = seeded(
            lambda: CLIPVisionModelWithProjection(
                CLIPVisionConfig(
                    hidden_size=WIDTH,
                    projection_dim=WIDTH,
                    num_hidden_layers=2,
                    num_attention_heads=2,
                    image_size=32,
                    intermediate_size=16,
                    patch_size=1,
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
            "image_encoder": image_encoder,
            "feature_extractor": CLIPImageProcessor(crop_size=32, size=32),
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        generator = torch.Generator("cpu").manual_seed(seed)
        return {
            "image": torch.rand((1, 3, 32, 32), generator=generator),
            "prompt": "A painting of a squirrel eating a burger",
            "generator": generator,
            "num_inference_steps": 2,
            "guidance_scale": 6.0,
            "num_frames": 2,
            "height": 32,
            "width": 32,
            "output_type": "pt",
            # Its call skips one CLIP layer by default, reading `text_encoder.text_model`, which transformers 5's
            # CLIPTextModel has not (its layers are its own): diffusers' bug there, outside the loop checked here.
            "clip_skip": None,
        }
