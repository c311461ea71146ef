"""Ideogram 4: a Qwen3-VL text model's hidden states, tapped at 13 fixed layers (up to the 36th) and concatenated,
condition a transformer over packed text and image tokens; a second, unconditional transformer of the same class sees
the image tokens alone, and the two velocities are blended per step by a guidance schedule. The latents are a Flux.2
VAE's, patched 2x2 and normalized by its batch-norm statistics."""

from __future__ import annotations

from typing import Any

from diffusers import (
    AutoencoderKLFlux2,
    FlowMatchEulerDiscreteScheduler,
    Ideogram4Pipeline,
    Ideogram4Transformer2DModel,
)
from diffusers.pipelines.ideogram4.pipeline_ideogram4 import QWEN3_VL_ACTIVATION_LAYERS
from transformers import Qwen3VLConfig, Qwen3VLModel

from ..hub_standins.vision_language_repos import QWEN_VOCAB_SIZE
from .tiny import WIDTH, prompted, qwen2_tokenizer, seeded

LATENT_CHANNELS = 4  # the VAE's; the transformer takes them patched 2x2: 16


def _text_encoder() -> Qwen3VLModel:
    """Deep enough for the last tapped layer, WIDTH wide: the transformer's text features are 13 x WIDTH."""
    config = Qwen3VLConfig(
        text_config={
            "hidden_size": WIDTH, "num_hidden_layers": max(QWEN3_VL_ACTIVATION_LAYERS) + 1, "num_attention_heads": 2,
            "num_key_value_heads": 1, "intermediate_size": WIDTH, "head_dim": 8, "vocab_size": QWEN_VOCAB_SIZE,
            "max_position_embeddings": 256,
            "rope_parameters": {"rope_type": "default", "mrope_section": [2, 1, 1], "mrope_interleaved": True},
        },
        # the vision tower, never run (text-only prompts), as small as its config allows
        vision_config={
            "hidden_size": WIDTH, "depth": 1, "num_heads": 1, "intermediate_size": WIDTH, "out_hidden_size": WIDTH,
            "patch_size": 14, "deepstack_visual_indexes": [],
        },
    )  # fmt: skip
    return seeded(lambda: Qwen3VLModel(config).eval())


def _transformer(seed: int) -> Ideogram4Transformer2DModel:
    return seeded(lambda: Ideogram4Transformer2DModel(
        in_channels=LATENT_CHANNELS * 4, num_layers=1, attention_head_dim=8, num_attention_heads=2,
        intermediate_size=16, adaln_dim=16, llm_features_dim=len(QWEN3_VL_ACTIVATION_LAYERS) * WIDTH,
        rope_theta=10_000, mrope_section=(2, 1, 1),
    ), seed=seed)  # fmt: skip


class Ideogram4StandIn:
    pipeline_class = Ideogram4Pipeline

    def get_dummy_components(self) -> dict[str, Any]:
        # one level (scale 1): a 16-pixel image is 8x8 image tokens after the 2x2 patching
        vae = seeded(lambda: AutoencoderKLFlux2(
            down_block_types=("DownEncoderBlock2D",), up_block_types=("UpDecoderBlock2D",), block_out_channels=(WIDTH,),
            layers_per_block=1, latent_channels=LATENT_CHANNELS, norm_num_groups=1, sample_size=16,
            patch_size=(2, 2), use_quant_conv=False, use_post_quant_conv=False,
        ))  # fmt: skip
        return {
            "scheduler": FlowMatchEulerDiscreteScheduler(),
            "vae": vae,
            "text_encoder": _text_encoder(),
            "tokenizer": qwen2_tokenizer(),
            "transformer": _transformer(seed=0),
            "unconditional_transformer": _transformer(seed=1),  # weights of its own, as the real one has
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        # a constant scale, not the per-step schedule (its default is 48 steps long, the census sets the steps)
        return prompted(seed, guidance_scale=4.0, guidance_schedule=None, height=16, width=16, max_sequence_length=64)
