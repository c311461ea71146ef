"""GLIGEN (deprecated): Stable Diffusion grounded by boxes, its UNet's gated attention taking a phrase (and, in the
text-image class, a reference image) per box; each class has its stand-in tester."""

from __future__ import annotations

from typing import Any

import PIL.Image
from diffusers import StableDiffusionGLIGENPipeline, StableDiffusionGLIGENTextImagePipeline
from diffusers.pipelines.stable_diffusion import CLIPImageProjection
from transformers import CLIPImageProcessor, CLIPProcessor, CLIPVisionModelWithProjection

from .tiny import TEXT_WIDTH, clip_vision, prompted, seeded, stable_diffusion


def _inputs(seed: int, **extra: Any) -> dict[str, Any]:
    boxes = {"gligen_phrases": ["a birthday cake"], "gligen_boxes": [[0.2676, 0.6088, 0.4773, 0.7183]]}
    return prompted(seed, prompt="A modern livingroom", **boxes, **extra)


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
        image_encoder = seeded(lambda: CLIPVisionModelWithProjection(clip_vision()))
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
