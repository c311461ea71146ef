"""Versatile Diffusion (deprecated): an image UNet and a flat text UNet whose attention blocks the text-to-image and
dual-guided classes swap or pair, CLIP text and image encoders with projections; one stand-in per class with a call
(the umbrella class has none: its methods are these classes' calls)."""

from __future__ import annotations

from typing import Any

import PIL.Image
from diffusers import (
    VersatileDiffusionDualGuidedPipeline,
    VersatileDiffusionImageVariationPipeline,
    VersatileDiffusionTextToImagePipeline,
)
from diffusers.pipelines.deprecated.versatile_diffusion.modeling_text_unet import UNetFlatConditionModel
from transformers import CLIPImageProcessor, CLIPTextConfig, CLIPTextModelWithProjection, CLIPVisionModelWithProjection

from .tiny import TEXT_WIDTH, clip_vision, prompted, seeded, stable_diffusion, text_layers

LEVELS = {"block_out_channels": (32, 64), "layers_per_block": 2, "sample_size": 32, "in_channels": 4, "out_channels": 4}


def _components() -> dict[str, Any]:
    """The image UNet's attention at its first level, the flat text UNet's at the same places (they are swapped)."""
    sd = stable_diffusion(
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D")
    )
    text_unet = seeded(
        lambda: UNetFlatConditionModel(
            **LEVELS,
            down_block_types=("CrossAttnDownBlockFlat", "DownBlockFlat"),
            up_block_types=("UpBlockFlat", "CrossAttnUpBlockFlat"),
            cross_attention_dim=TEXT_WIDTH,
        )
    )
    text = CLIPTextConfig(**text_layers(projection_dim=TEXT_WIDTH))
    vision = clip_vision()
    return {
        "tokenizer": sd["tokenizer"],
        "text_encoder": seeded(lambda: CLIPTextModelWithProjection(text)),
        "image_encoder": seeded(lambda: CLIPVisionModelWithProjection(vision)),
        "image_feature_extractor": CLIPImageProcessor(crop_size=32, size=32),
        "image_unet": sd["unet"],
        "text_unet": text_unet,
        "vae": sd["vae"],
        "scheduler": sd["scheduler"],
    }


def _image() -> PIL.Image.Image:
    return PIL.Image.new("RGB", (32, 32), (90, 140, 200))


class VersatileDiffusionTextToImageStandIn:
    pipeline_class = VersatileDiffusionTextToImagePipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return {k: v for k, v in _components().items() if k not in ("image_encoder", "image_feature_extractor")}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return prompted(seed)


class VersatileDiffusionImageVariationStandIn:
    pipeline_class = VersatileDiffusionImageVariationPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        keep = ("image_feature_extractor", "image_encoder", "image_unet", "vae", "scheduler")
        return {k: v for k, v in _components().items() if k in keep}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return {k: v for k, v in prompted(seed, image=_image()).items() if k != "prompt"}


class VersatileDiffusionDualGuidedStandIn:
    pipeline_class = VersatileDiffusionDualGuidedPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return _components()

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return prompted(seed, image=_image())
