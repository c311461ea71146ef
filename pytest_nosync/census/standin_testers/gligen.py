"""GLIGEN (deprecated): Stable Diffusion grounded by boxes, its UNet's gated attention taking a phrase (and, in the
text-image class, a reference image) per box; each class has its stand-in tester."""

from __future__ import annotations

from typing import Any

import PIL.Image
import torch
from diffusers import StableDiffusionGLIGENPipeline, StableDiffusionGLIGENTextImagePipeline
from diffusers.pipelines.stable_diffusion import CLIPImageProjection
from transformers import CLIPImageProcessor, CLIPProcessor, CLIPVisionConfig, CLIPVisionModelWithProjection

from .tiny import TEXT_WIDTH, seeded, stable_diffusion


def _inputs(seed: int, **extra: Any) -> dict[str, Any]:
    return {
        "prompt": "A modern livingroom",
        "generator": torch.Generator("cpu").manual_seed(seed),
        "num_inference_steps": 2,
        "guidance_scale": 6.0,
        "gligen_phrases": ["a birthday cake"],
        "gligen_boxes": [[0.2676, 0.6088, 0.4773, 0.7183]],
        "output_type": "np",
        **extra,
    }


class GLIGENStandIn:
    pipeline_class = StableDiffusionGLIGENPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return stable_diffusion(attention_type="gated")

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return _inputs(seed)


class GLIGENTextImageStandIn:
    pipeline_class = StableDiffusionGLIGENTextImagePipeline

    def get_dummy_components(self) -> dict[str, Any]:
        components = stable_diffusion(attention_type="gated-text-image")
        image_encoder = seeded(
            lambda: CLIPVisionModelWithProjection(
                CLIPVisionConfig(
                    hidden_size=TEXT_WIDTH,
                    projection_dim=TEXT_WIDTH,
                    intermediate_size=37,
                    num_attention_heads=4,
                    num_hidden_layers=2,
                    image_size=32,
                    patch_size=4,
                )
            )
        )
        image_processor = CLIPImageProcessor(crop_size=32, size=32)
        processor = CLIPProcessor(image_processor=image_processor, tokenizer=components["tokenizer"])
        return {
            **components,
            "image_encoder": image_encoder,
            "image_project": seeded(lambda: CLIPImageProjection(hidden_size=TEXT_WIDTH)),
            "processor": processor,
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        image = PIL.Image.new("RGB", (32, 32), (128, 64, 32))
        return _inputs(seed, gligen_images=[image], height=64, width=64)
