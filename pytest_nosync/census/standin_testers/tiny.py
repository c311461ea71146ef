"""What the stand-in testers share: their widths, seeded models (`seeded`), CLIP, RoBERTa, Qwen2, Gemma and GPT-2
tokenizers built offline, the tiny configs several families take (a CLIP-style text encoder's layers, a CLIP vision
tower, a KL VAE, a VQ model, Stable Diffusion's DDIM schedule) and a tiny Stable Diffusion's components (the
deprecated variants' base)."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel, VQModel
from transformers import (
    CLIPTextConfig,
    CLIPTextModel,
    CLIPTokenizer,
    CLIPVisionConfig,
    GemmaTokenizer,
    GPT2Tokenizer,
    RobertaTokenizer,
)

from ..hub_standins.diffusers_repos import sd_unet_kwargs
from ..hub_standins.seeded import seeded_model as seeded  # the stand-ins' models, seeded alike
from ..hub_standins.text_repos import (
    build_roberta_tokenizer,
    loaded_tokenizer,
    qwen2_tokenizer,
    save_clip_tokenizer,
    save_gemma_tokenizer,
    save_gpt2_tokenizer,
)

__all__ = [
    "PROMPT",
    "TEXT_WIDTH",
    "VIDEO_UNET",
    "WIDTH",
    "clip_text",
    "clip_tokenizer",
    "clip_vision",
    "ddim",
    "gemma_tokenizer",
    "gpt2_tokenizer",
    "kl_vae",
    "prompted",
    "qwen2_tokenizer",
    "roberta_tokenizer",
    "seeded",
    "stable_diffusion",
    "text_layers",
    "vq_model",
]

WIDTH = 8  # every tiny model's hidden width (and its norms' groups)
TEXT_WIDTH = 32  # a tiny CLIP text encoder's, and the cross-attention width of the UNets it conditions


def clip_tokenizer() -> CLIPTokenizer:
    """A CLIP tokenizer of under 1000 ids, built here as the hub stand-in of tiny-random-clip builds it."""
    return loaded_tokenizer(save_clip_tokenizer, CLIPTokenizer.from_pretrained)


def roberta_tokenizer() -> RobertaTokenizer:
    """RoBERTa's byte-level BPE of under 1000 ids (a CLAP text model's), 77 tokens long as CLAP's prompts."""
    return loaded_tokenizer(build_roberta_tokenizer, RobertaTokenizer.from_pretrained, model_max_length=77)


def gemma_tokenizer() -> GemmaTokenizer:
    """Gemma's SentencePiece-style BPE of under 1000 ids (`<eos>` 1) with Gemma's chat template."""
    return loaded_tokenizer(save_gemma_tokenizer, GemmaTokenizer.from_pretrained)


def gpt2_tokenizer() -> GPT2Tokenizer:
    """GPT-2's byte-level BPE of 1000 ids, `<|endoftext|>` the last (a UniDiffuser text decoder's)."""
    return loaded_tokenizer(save_gpt2_tokenizer, GPT2Tokenizer.from_pretrained)


def text_layers(width: int = TEXT_WIDTH, heads: int = 4, layers: int = 2, inner: int = 37, **extra: Any) -> dict:
    """A CLIP-style text encoder's config (CLIP's, CLAP's): `width` wide, 1000 ids, the tokenizers' special ids."""
    return {
        "bos_token_id": 0,
        "eos_token_id": 2,
        "pad_token_id": 1,
        "vocab_size": 1000,
        "hidden_size": width,
        "intermediate_size": inner,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        **extra,
    }


def clip_text(**extra: Any) -> CLIPTextModel:
    """A seeded CLIP text encoder of `text_layers(**extra)`."""
    config = CLIPTextConfig(**text_layers(**extra))
    return seeded(lambda: CLIPTextModel(config))


def clip_vision(
    width: int = TEXT_WIDTH, layers: int = 2, patch: int = 4, heads: int = 4, inner: int = 37, **extra: Any
) -> CLIPVisionConfig:
    """A CLIP vision tower's config: 32x32 images, `width` wide and projected to it."""
    return CLIPVisionConfig(
        hidden_size=width,
        projection_dim=width,
        intermediate_size=inner,
        num_attention_heads=heads,
        num_hidden_layers=layers,
        image_size=32,
        patch_size=patch,
        **extra,
    )


def kl_vae(blocks: tuple[int, ...] = (32, 64), channels: int = 3, **extra: Any) -> AutoencoderKL:
    """A seeded KL VAE of one encoder and decoder block per width in `blocks`, 4 latent channels."""
    config = {
        "block_out_channels": list(blocks),
        "in_channels": channels,
        "out_channels": channels,
        "down_block_types": ["DownEncoderBlock2D"] * len(blocks),
        "up_block_types": ["UpDecoderBlock2D"] * len(blocks),
        "latent_channels": 4,
        **extra,
    }
    return seeded(lambda: AutoencoderKL(**config))


def vq_model(**extra: Any) -> VQModel:
    """A seeded VQ model of two blocks (32, 64) and 3 latent channels."""
    config = {
        "block_out_channels": [32, 64],
        "in_channels": 3,
        "out_channels": 3,
        "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D"],
        "up_block_types": ["UpDecoderBlock2D", "UpDecoderBlock2D"],
        "latent_channels": 3,
        **extra,
    }
    return seeded(lambda: VQModel(**config))


def ddim() -> DDIMScheduler:
    """Stable Diffusion's DDIM schedule (scaled linear betas)."""
    return DDIMScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False, set_alpha_to_one=False
    )


VIDEO_UNET = {  # a 3-D UNet of two levels, cross-attention in the first: text-to-video's, I2VGen-XL's
    "layers_per_block": 1, "sample_size": 32, "in_channels": 4, "out_channels": 4, "attention_head_dim": 4,
    "norm_num_groups": 2, "down_block_types": ("CrossAttnDownBlock3D", "DownBlock3D"),
    "up_block_types": ("UpBlock3D", "CrossAttnUpBlock3D"),
}  # fmt: skip
PROMPT = "A painting of a squirrel eating a burger"


def prompted(seed: int, **extra: Any) -> dict[str, Any]:
    """A tester's usual inputs: a prompt, a CPU generator of `seed`, 2 steps, guidance 6, NumPy output; `extra` over
    them."""
    generator = torch.Generator("cpu").manual_seed(seed)
    return {
        "prompt": PROMPT,
        "generator": generator,
        "num_inference_steps": 2,
        "guidance_scale": 6.0,
        "output_type": "np",
        **extra,
    }


def stable_diffusion(vae_channels: int = 3, **unet: Any) -> dict[str, Any]:
    """A tiny Stable Diffusion's components (no safety checker): a UNet of two levels (`unet`: changes to its config),
    a VAE of `vae_channels` image channels, a CLIP text encoder and tokenizer, a DDIM scheduler."""
    config = {**sd_unet_kwargs(TEXT_WIDTH), **unet}
    return {
        "unet": seeded(lambda: UNet2DConditionModel(**config)),
        "scheduler": ddim(),
        "vae": kl_vae(channels=vae_channels),
        "text_encoder": clip_text(projection_dim=TEXT_WIDTH),
        "tokenizer": clip_tokenizer(),
        "safety_checker": None,
        "feature_extractor": None,
        "requires_safety_checker": False,
    }
