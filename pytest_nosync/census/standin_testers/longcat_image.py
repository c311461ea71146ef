"""LongCat-Image: a Qwen2.5-VL text encoder (its last hidden states, the prompt padded to 512 tokens) conditioning a
Flux-like transformer over 16-channel packed latents; the edit class reads its source image through the VL model's
vision tower as well, and always works at about 1024x1024 pixels (its own `calculate_dimensions`), so the VAE here
downsamples 64 times: 16x16 latents, 8x8 tokens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import transformers
from diffusers import (
    FlowMatchEulerDiscreteScheduler,
    LongCatImageEditPipeline,
    LongCatImagePipeline,
    LongCatImageTransformer2DModel,
)
from PIL import Image
from transformers import (
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
    Qwen2Tokenizer,
    Qwen2VLProcessor,
    Qwen2VLVideoProcessor,
)

from ..hub_standins.modular_repos import torchvision_importable
from ..hub_standins.text_repos import QWEN_CHAT_TEMPLATE
from ..hub_standins.vision_language_repos import QWEN_VL_TEXT, QWEN_VL_TOKENS
from .tiny import WIDTH, kl_vae, prompted, qwen2_tokenizer, seeded

LATENTS = 16  # the pipelines' fixed `num_channels_latents`
# The PIL backend where transformers has it: the default one needs torchvision.
_IMAGE_PROCESSOR = getattr(transformers, "Qwen2VLImageProcessorPil", transformers.Qwen2VLImageProcessor)
PATCHES = {"patch_size": 14, "merge_size": 2, "temporal_patch_size": 2}


def _text_encoder() -> Qwen2_5_VLForConditionalGeneration:
    config = Qwen2_5_VLConfig(
        text_config={**QWEN_VL_TEXT, "rope_scaling": {"rope_type": "default", "mrope_section": [1, 1, 2]}},
        vision_config={
            "depth": 2, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2, "out_hidden_size": 16,
            "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
        },
        **QWEN_VL_TOKENS,
    )  # fmt: skip
    return seeded(lambda: Qwen2_5_VLForConditionalGeneration(config).eval())


@dataclass
class VisionOnlyProcessor:
    """What the classes read of a Qwen2-VL processor where one cannot be built (no torchvision)."""

    image_processor: Any
    tokenizer: Qwen2Tokenizer


def _tokenizer_and_processor() -> tuple[Qwen2Tokenizer, Any]:
    """The Qwen2 tokenizer stand-in, and the pipelines' `text_processor`: a Qwen2-VL processor where torchvision is
    importable (transformers builds its video processor only with it), else its image processor and tokenizer alone,
    all that the classes read of it here (the edit class its `image_processor`; the prompt rewrite, off, the rest)."""
    tokenizer = qwen2_tokenizer()
    # At most 112x112 pixels: the edit class's 512-pixel source image becomes 8x8 patches, 16 tokens of the prompt.
    image_processor = _IMAGE_PROCESSOR(size={"shortest_edge": 56 * 56, "longest_edge": 112 * 112}, **PATCHES)
    if not torchvision_importable():
        return tokenizer, VisionOnlyProcessor(image_processor, tokenizer)
    video_processor = Qwen2VLVideoProcessor(**PATCHES)
    processor = Qwen2VLProcessor(image_processor, tokenizer, video_processor, chat_template=QWEN_CHAT_TEMPLATE)
    return tokenizer, processor


def longcat_components() -> dict[str, Any]:
    """Both classes' components: the transformer 2 heads of 16 (rope axes 4+4+8), its context the text width 16."""
    transformer = seeded(lambda: LongCatImageTransformer2DModel(
        patch_size=1, in_channels=LATENTS * 4, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=QWEN_VL_TEXT["hidden_size"],
        pooled_projection_dim=QWEN_VL_TEXT["hidden_size"], axes_dims_rope=[4, 4, 8],
    ))  # fmt: skip
    tokenizer, processor = _tokenizer_and_processor()
    return {
        "scheduler": FlowMatchEulerDiscreteScheduler(),
        # seven levels of WIDTH channels: 64x downsampling, for the edit class's fixed 1024 pixels; a shift factor
        # as Flux's VAE has, which the classes add to the latents unconditionally
        "vae": kl_vae((WIDTH,) * 7, latent_channels=LATENTS, norm_num_groups=WIDTH, shift_factor=0.0),
        "text_encoder": _text_encoder(),
        "tokenizer": tokenizer,
        "text_processor": processor,
        "transformer": transformer,
    }


class LongCatImageStandIn:
    pipeline_class = LongCatImagePipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return longcat_components()

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        # no prompt rewrite: it generates up to 512 tokens with the text encoder before any denoising
        return prompted(seed, guidance_scale=4.5, height=256, width=256, enable_prompt_rewrite=False)


class LongCatImageEditStandIn:
    pipeline_class = LongCatImageEditPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return longcat_components()

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return prompted(seed, image=Image.new("RGB", (32, 32)), guidance_scale=4.5)
