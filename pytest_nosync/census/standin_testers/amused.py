"""aMUSEd (deprecated): a masked-token transformer over a VQ model's codebook; AmusedPipeline's stand-in tester, which
its image-to-image and inpainting classes are checked through."""

from __future__ import annotations

from typing import Any

from diffusers import AmusedPipeline, AmusedScheduler, UVit2DModel, VQModel
from transformers import CLIPTextConfig, CLIPTextModelWithProjection

from .tiny import WIDTH, clip_tokenizer, prompted, seeded, text_layers

CODEBOOK = 8  # the VQ model's codebook: the transformer predicts one of these per token, the last id is the mask


class AmusedStandIn:
    pipeline_class = AmusedPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        text = CLIPTextConfig(**text_layers(WIDTH, heads=1, layers=1, inner=WIDTH, projection_dim=WIDTH))
        # micro_cond_embed_dim: the pooled width and the five micro-conditions' encodings of 2
        transformer = seeded(lambda: UVit2DModel(
            hidden_size=WIDTH, use_bias=False, hidden_dropout=0.0, attention_dropout=0.0, layer_norm_eps=1e-6,
            cond_embed_dim=WIDTH, micro_cond_encode_dim=2, micro_cond_embed_dim=10, encoder_hidden_size=WIDTH,
            vocab_size=CODEBOOK + 1, codebook_size=CODEBOOK, in_channels=WIDTH, block_out_channels=WIDTH,
            num_res_blocks=1, downsample=True, upsample=True, block_num_heads=1, num_hidden_layers=1,
            num_attention_heads=1, intermediate_size=WIDTH, ln_elementwise_affine=True,
        ))  # fmt: skip
        vqvae = seeded(lambda: VQModel(
            act_fn="silu", block_out_channels=[WIDTH], down_block_types=["DownEncoderBlock2D"],
            up_block_types=["UpDecoderBlock2D"], in_channels=3, out_channels=3, latent_channels=WIDTH,
            layers_per_block=1, norm_num_groups=WIDTH, num_vq_embeddings=CODEBOOK, sample_size=8,
            mid_block_add_attention=False, lookup_from_codebook=True,
        ))  # fmt: skip
        return {
            "transformer": transformer,
            "scheduler": AmusedScheduler(mask_token_id=CODEBOOK),
            "vqvae": vqvae,
            "text_encoder": seeded(lambda: CLIPTextModelWithProjection(text)),
            "tokenizer": clip_tokenizer(),
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        inputs = prompted(seed, prompt="a photo of a cat", height=4, width=4)
        del inputs["guidance_scale"]  # its own default
        return inputs
