"""What the stand-in testers share: their width, seeded models (`seeded`), CLIP and RoBERTa tokenizers built offline,
a tiny Stable Diffusion's components (the deprecated variants' base)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer, RobertaTokenizer

from ..hub_standins.seeded import seeded_model as seeded  # the stand-ins' models, seeded alike
from ..hub_standins.text_repos import build_roberta_tokenizer, save_clip_tokenizer

__all__ = ["TEXT_WIDTH", "WIDTH", "clip_tokenizer", "roberta_tokenizer", "seeded", "stable_diffusion"]

WIDTH = 8  # every tiny model's hidden width (and its norms' groups)
TEXT_WIDTH = 32  # a tiny CLIP text encoder's, and the cross-attention width of the UNets it conditions


def clip_tokenizer() -> CLIPTokenizer:
    """A CLIP tokenizer of under 1000 ids, built here as the hub stand-in of tiny-random-clip builds it."""
    with tempfile.TemporaryDirectory(prefix="nosync-standin-tokenizer-") as directory:
        save_clip_tokenizer(Path(directory))
        return CLIPTokenizer.from_pretrained(directory)


def roberta_tokenizer() -> RobertaTokenizer:
    """RoBERTa's byte-level BPE of under 1000 ids (a CLAP text model's), 77 tokens long as CLAP's prompts."""
    with tempfile.TemporaryDirectory(prefix="nosync-standin-tokenizer-") as directory:
        build_roberta_tokenizer(Path(directory))
        return RobertaTokenizer.from_pretrained(directory, model_max_length=77)


def stable_diffusion(vae_channels: int = 3, **unet: Any) -> dict[str, Any]:
    """A tiny Stable Diffusion's components (no safety checker): a UNet of two levels (`unet`: changes to its config),
    a VAE of `vae_channels` image channels, a CLIP text encoder and tokenizer, a DDIM scheduler."""
    config = {
        "block_out_channels": (32, 64),
        "layers_per_block": 2,
        "sample_size": 32,
        "in_channels": 4,
        "out_channels": 4,
        "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D"),
        "up_block_types": ("CrossAttnUpBlock2D", "UpBlock2D"),
        "cross_attention_dim": TEXT_WIDTH,
        **unet,
    }
    vae = {
        "block_out_channels": [32, 64],
        "in_channels": vae_channels,
        "out_channels": vae_channels,
        "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D"],
        "up_block_types": ["UpDecoderBlock2D", "UpDecoderBlock2D"],
        "latent_channels": 4,
    }
    text = CLIPTextConfig(
        bos_token_id=0,
        eos_token_id=2,
        hidden_size=TEXT_WIDTH,
        intermediate_size=37,
        num_attention_heads=4,
        num_hidden_layers=2,
        pad_token_id=1,
        vocab_size=1000,
        projection_dim=TEXT_WIDTH,
    )
    scheduler = DDIMScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False, set_alpha_to_one=False
    )
    return {
        "unet": seeded(lambda: UNet2DConditionModel(**config)),
        "scheduler": scheduler,
        "vae": seeded(lambda: AutoencoderKL(**vae)),
        "text_encoder": seeded(lambda: CLIPTextModel(text)),
        "tokenizer": clip_tokenizer(),
        "safety_checker": None,
        "feature_extractor": None,
        "requires_safety_checker": False,
    }
