"""Würstchen (deprecated): a prior making image embeddings from text, a decoder turning them into a Paella VQ
model's latents, and their combined pipeline; each class has its stand-in tester."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import (
    DDPMWuerstchenScheduler,
    WuerstchenCombinedPipeline,
    WuerstchenDecoderPipeline,
    WuerstchenPriorPipeline,
)
from diffusers.pipelines.deprecated.wuerstchen import PaellaVQModel, WuerstchenDiffNeXt, WuerstchenPrior
from transformers import CLIPTextModel

from .tiny import TEXT_WIDTH, clip_text, clip_tokenizer, seeded

EMBEDDING = 2  # the prior's image embedding channels, which the decoder reads as its EfficientNet features


def _text_encoder() -> CLIPTextModel:
    return clip_text(projection_dim=TEXT_WIDTH).eval()


def _prior_components() -> dict[str, Any]:
    prior = seeded(lambda: WuerstchenPrior(c_in=EMBEDDING, c=8, c_cond=TEXT_WIDTH, c_r=8, depth=1, nhead=2))
    return {
        "prior": prior,
        "text_encoder": _text_encoder(),
        "tokenizer": clip_tokenizer(),
        "scheduler": DDPMWuerstchenScheduler(),
    }


def _decoder_components() -> dict[str, Any]:
    decoder = seeded(
        lambda: WuerstchenDiffNeXt(
            c_in=4,
            c_out=4,
            c_r=8,
            c_cond=TEXT_WIDTH,
            c_hidden=[8, 8],
            nhead=[-1, 2],
            blocks=[1, 1],
            level_config=["CT", "CTA"],
            inject_effnet=[False, True],
            effnet_embd=EMBEDDING,
            clip_embd=TEXT_WIDTH,
            dropout=0.0,
        )
    )
    vqgan = seeded(
        lambda: PaellaVQModel(
            levels=2, bottleneck_blocks=1, embed_dim=8, latent_channels=4, num_vq_embeddings=8, scale_factor=1.0
        )
    )
    return {
        "decoder": decoder,
        "vqgan": vqgan,
        "text_encoder": _text_encoder(),
        "tokenizer": clip_tokenizer(),
        "scheduler": DDPMWuerstchenScheduler(),
        "latent_dim_scale": 4.0,
    }


def _inputs(seed: int, **extra: Any) -> dict[str, Any]:
    return {
        "prompt": "horse",
        "generator": torch.Generator("cpu").manual_seed(seed),
        "output_type": "pt",
        **extra,
    }


class WuerstchenPriorStandIn:
    pipeline_class = WuerstchenPriorPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return _prior_components()

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return _inputs(seed, guidance_scale=4.0, num_inference_steps=2, height=128, width=128)


class WuerstchenDecoderStandIn:
    pipeline_class = WuerstchenDecoderPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return _decoder_components()

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        embeddings = torch.ones((1, EMBEDDING, 4, 4))
        return _inputs(seed, image_embeddings=embeddings, guidance_scale=4.0, num_inference_steps=2)


class WuerstchenCombinedStandIn:
    pipeline_class = WuerstchenCombinedPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        prior = {f"prior_{name}": value for name, value in _prior_components().items()}
        decoder = _decoder_components()
        decoder.pop("latent_dim_scale")  # the combined pipeline's decoder keeps its default
        return {**prior, **decoder}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return _inputs(
            seed,
            prior_guidance_scale=4.0,
            decoder_guidance_scale=4.0,
            prior_num_inference_steps=2,
            num_inference_steps=2,
            height=128,
            width=128,
        )
