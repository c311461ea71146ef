"""unCLIP (deprecated): a prior from the text embedding to an image embedding, a decoder UNet, two super-resolution
UNets; the text-to-image class and the image-variation one (an image encoder in the prior's place) each have theirs."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import (
    PriorTransformer,
    UnCLIPImageVariationPipeline,
    UnCLIPPipeline,
    UnCLIPScheduler,
    UNet2DConditionModel,
    UNet2DModel,
)
from diffusers.pipelines.deprecated.unclip.text_proj import UnCLIPTextProjModel
from transformers import CLIPImageProcessor, CLIPTextConfig, CLIPTextModelWithProjection, CLIPVisionModelWithProjection

from .tiny import clip_tokenizer, clip_vision, seeded, text_layers

EMBEDDING = 32  # the text and image embeddings' width


def _shared() -> dict[str, Any]:
    """The text encoder, the text projection, the decoder and super-resolution UNets and their schedulers."""
    text = CLIPTextConfig(**text_layers(EMBEDDING, projection_dim=EMBEDDING))
    text_encoder = seeded(lambda: CLIPTextModelWithProjection(text))
    text_proj = seeded(
        lambda: UnCLIPTextProjModel(
            clip_embeddings_dim=EMBEDDING, time_embed_dim=EMBEDDING * 4, cross_attention_dim=EMBEDDING
        )
    )
    decoder = seeded(
        lambda: UNet2DConditionModel(
            sample_size=32,
            in_channels=3,
            out_channels=6,  # the noise and its learned variance range
            down_block_types=("ResnetDownsampleBlock2D", "SimpleCrossAttnDownBlock2D"),
            up_block_types=("SimpleCrossAttnUpBlock2D", "ResnetUpsampleBlock2D"),
            mid_block_type="UNetMidBlock2DSimpleCrossAttn",
            block_out_channels=(EMBEDDING, EMBEDDING * 2),
            layers_per_block=1,
            cross_attention_dim=EMBEDDING,
            attention_head_dim=8,
            class_embed_type="identity",
        )
    )

    def super_res() -> UNet2DModel:
        return UNet2DModel(
            sample_size=64,
            layers_per_block=1,
            down_block_types=("ResnetDownsampleBlock2D", "ResnetDownsampleBlock2D"),
            up_block_types=("ResnetUpsampleBlock2D", "ResnetUpsampleBlock2D"),
            block_out_channels=(EMBEDDING, EMBEDDING * 2),
            in_channels=6,
            out_channels=3,
        )

    return {
        "text_encoder": text_encoder,
        "tokenizer": clip_tokenizer(),
        "text_proj": text_proj,
        "decoder": decoder,
        "super_res_first": seeded(super_res),
        "super_res_last": seeded(super_res, seed=1),
        "decoder_scheduler": UnCLIPScheduler(variance_type="learned_range", prediction_type="epsilon"),
        "super_res_scheduler": UnCLIPScheduler(variance_type="fixed_small_log", prediction_type="epsilon"),
    }


def _steps(seed: int) -> dict[str, Any]:
    return {
        "generator": torch.Generator("cpu").manual_seed(seed),
        "decoder_num_inference_steps": 2,
        "super_res_num_inference_steps": 2,
        "output_type": "np",
    }


class UnCLIPStandIn:
    pipeline_class = UnCLIPPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        prior = seeded(
            lambda: PriorTransformer(
                num_attention_heads=2, attention_head_dim=12, embedding_dim=EMBEDDING, num_layers=1
            )
        )
        scheduler = UnCLIPScheduler(variance_type="fixed_small_log", prediction_type="sample", clip_sample_range=5.0)
        return {**_shared(), "prior": prior, "prior_scheduler": scheduler}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return {"prompt": "horse", "prior_num_inference_steps": 2, **_steps(seed)}


class UnCLIPImageVariationStandIn:
    pipeline_class = UnCLIPImageVariationPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        vision = clip_vision(EMBEDDING, layers=5, patch=1)
        image_encoder = seeded(lambda: CLIPVisionModelWithProjection(vision))
        processor = CLIPImageProcessor(crop_size=32, size=32)
        return {**_shared(), "image_encoder": image_encoder, "feature_extractor": processor}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        image = torch.rand((1, 3, 32, 32), generator=torch.Generator("cpu").manual_seed(seed))
        return {"image": image, **_steps(seed)}
