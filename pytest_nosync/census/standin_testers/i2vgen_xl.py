"""I2VGen-XL (deprecated): image-to-video with a UNet conditioned on a CLIP image embedding and the first frame."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import I2VGenXLPipeline, I2VGenXLUNet
from transformers import CLIPImageProcessor, CLIPVisionModelWithProjection

from .tiny import VIDEO_UNET, clip_text, clip_tokenizer, clip_vision, ddim, kl_vae, prompted, seeded

WIDTH = 4  # the text and image embeddings' width, the UNet's cross-attention width


class I2VGenXLStandIn:
    pipeline_class = I2VGenXLPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        config = {**VIDEO_UNET, "block_out_channels": (4, 8), "cross_attention_dim": WIDTH, "num_attention_heads": None}
        unet = seeded(lambda: I2VGenXLUNet(**config))
        vision = clip_vision(WIDTH, patch=1, heads=2, inner=16)
        return {
            "unet": unet,
            "scheduler": ddim(),
            "vae": kl_vae((8,), sample_size=32, norm_num_groups=2),
            "text_encoder": clip_text(width=WIDTH, heads=2, inner=16, hidden_act="gelu", projection_dim=32),
            "tokenizer": clip_tokenizer(),
            "image_encoder": seeded(lambda: CLIPVisionModelWithProjection(vision)),
            "feature_extractor": CLIPImageProcessor(crop_size=32, size=32),
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        image = torch.rand((1, 3, 32, 32), generator=torch.Generator("cpu").manual_seed(seed))
        return {
            **prompted(seed, image=image, num_frames=2, height=32, width=32, output_type="pt"),
            # Its call skips one CLIP layer by default, reading `text_encoder.text_model`, which transformers 5's
            # CLIPTextModel has not (its layers are its own): diffusers' bug there, outside the loop checked here.
            "clip_skip": None,
        }
