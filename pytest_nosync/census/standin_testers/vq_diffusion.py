"""VQ Diffusion (deprecated): a discrete transformer denoising a VQ model's codebook indices."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import Transformer2DModel, VQDiffusionPipeline, VQDiffusionScheduler, VQModel
from diffusers.pipelines.deprecated.vq_diffusion.pipeline_vq_diffusion import (
    LearnedClassifierFreeSamplingEmbeddings,
)
from transformers import CLIPTextConfig, CLIPTextModel

from .tiny import clip_tokenizer, seeded

CODEBOOK = 12
LATENT_SIZE = 4  # the VQ model's latents are LATENT_SIZE × LATENT_SIZE tokens
TEXT_WIDTH = 32


class VQDiffusionStandIn:
    pipeline_class = VQDiffusionPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        vqvae = seeded(
            lambda: VQModel(
                block_out_channels=[32, 64],
                in_channels=3,
                out_channels=3,
                down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
                up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"],
                latent_channels=3,
                num_vq_embeddings=CODEBOOK,
                vq_embed_dim=3,  # the pipeline reads it from the config to decode the codebook entries
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
                )
            )
        )
        transformer = seeded(
            lambda: Transformer2DModel(
                attention_bias=True,
                cross_attention_dim=TEXT_WIDTH,
                attention_head_dim=4,
                num_attention_heads=2,
                num_vector_embeds=CODEBOOK + 1,  # and the mask token
                num_embeds_ada_norm=100,
                sample_size=LATENT_SIZE,
                norm_num_groups=32,
                activation_fn="geglu-approximate",
            )
        )
        embeddings = LearnedClassifierFreeSamplingEmbeddings(learnable=False)
        return {
            "vqvae": vqvae,
            "text_encoder": text_encoder,
            "tokenizer": clip_tokenizer(),
            "transformer": transformer,
            "scheduler": VQDiffusionScheduler(CODEBOOK + 1),
            "learned_classifier_free_sampling_embeddings": embeddings,
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return {
            "prompt": "teddy bear playing in the pool",
            "generator": torch.Generator("cpu").manual_seed(seed),
            "num_inference_steps": 2,
            "guidance_scale": 6.0,
            "output_type": "np",
        }
