"""VQ Diffusion (deprecated): a discrete transformer denoising a VQ model's codebook indices."""

from __future__ import annotations

from typing import Any

from diffusers import Transformer2DModel, VQDiffusionPipeline, VQDiffusionScheduler
from diffusers.pipelines.deprecated.vq_diffusion.pipeline_vq_diffusion import (
    LearnedClassifierFreeSamplingEmbeddings,
)

from .tiny import TEXT_WIDTH, clip_text, clip_tokenizer, prompted, seeded, vq_model

CODEBOOK = 12
LATENT_SIZE = 4  # the VQ model's latents are LATENT_SIZE × LATENT_SIZE tokens


class VQDiffusionStandIn:
    pipeline_class = VQDiffusionPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        # the pipeline reads the codebook entries' width from the config to decode them
        vqvae = vq_model(num_vq_embeddings=CODEBOOK, vq_embed_dim=3)
        text_encoder = clip_text()
        # its vector embeddings: the codebook and the mask token
        transformer = seeded(lambda: Transformer2DModel(
            attention_bias=True, cross_attention_dim=TEXT_WIDTH, attention_head_dim=4, num_attention_heads=2,
            num_vector_embeds=CODEBOOK + 1, num_embeds_ada_norm=100, sample_size=LATENT_SIZE, norm_num_groups=32,
            activation_fn="geglu-approximate",
        ))  # fmt: skip
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
        return prompted(seed, prompt="teddy bear playing in the pool")
