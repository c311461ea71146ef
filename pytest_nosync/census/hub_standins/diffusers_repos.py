"""Stand-ins for diffusers model repositories, saved per subfolder as diffusers saves them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from diffusers import (
    AutoencoderKL,
    ControlNetModel,
    EulerDiscreteScheduler,
    PNDMScheduler,
    StableDiffusionPipeline,
    StableDiffusionXLPipeline,
    UNet2DConditionModel,
    UNet2DModel,
)
from diffusers.pipelines.stable_diffusion.safety_checker import StableDiffusionSafetyChecker
from transformers import (
    CLIPConfig,
    CLIPImageProcessor,
    CLIPTextConfig,
    CLIPTextModel,
    CLIPTextModelWithProjection,
    CLIPTokenizer,
)

from .seeded import save_seeded_model, seeded_model
from .text_repos import CLIP_TEXT, CLIP_VISION, save_clip_tokenizer


def tiny_unet2d(**extra: Any) -> UNet2DModel:
    """A 32x32 RGB UNet2DModel of two levels (32, 64), attention in the second; `extra` over that config."""
    config = {
        "sample_size": 32,
        "in_channels": 3,
        "out_channels": 3,
        "layers_per_block": 1,
        "block_out_channels": (32, 64),
        "norm_num_groups": 8,
        "down_block_types": ("DownBlock2D", "AttnDownBlock2D"),
        "up_block_types": ("AttnUpBlock2D", "UpBlock2D"),
    }
    return UNet2DModel(**{**config, **extra})


def build_consistency_models_test(directory: Path) -> None:
    """Two 32x32 RGB UNet2DModels, `test_unet` and the class-conditional `test_unet_class_cond` (10 classes)."""
    save_seeded_model(tiny_unet2d, directory / "test_unet")
    save_seeded_model(lambda: tiny_unet2d(num_class_embeds=10), directory / "test_unet_class_cond")


def _clip_text_config(**extra):
    return CLIPTextConfig(**CLIP_TEXT, **extra)


def _tiny_vae():
    return AutoencoderKL(
        block_out_channels=(32, 64),
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        latent_channels=4,
        sample_size=32,
    )


def sd_unet_kwargs(cross_attention_dim: int) -> dict:
    """A tiny Stable Diffusion UNet's config: two levels (32, 64), cross-attention in the second."""
    return {
        "block_out_channels": (32, 64),
        "layers_per_block": 2,
        "sample_size": 32,
        "in_channels": 4,
        "out_channels": 4,
        "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D"),
        "up_block_types": ("CrossAttnUpBlock2D", "UpBlock2D"),
        "cross_attention_dim": cross_attention_dim,
    }


def build_tiny_stable_diffusion(directory: Path) -> None:
    """A StableDiffusionPipeline of tiny parts: UNet (32/64 channels, cross-attention 32), VAE, CLIP text encoder
    (width 32, 1000 ids), the CLIP stand-in's tokenizer, PNDM, a tiny safety checker and its image processor."""
    save_clip_tokenizer(directory / "tokenizer")
    safety_config = CLIPConfig(
        text_config=_clip_text_config().to_dict(),
        vision_config=dict(CLIP_VISION),
        projection_dim=32,
    )
    pipe = StableDiffusionPipeline(
        unet=seeded_model(lambda: UNet2DConditionModel(**sd_unet_kwargs(32))),
        vae=seeded_model(_tiny_vae),
        text_encoder=seeded_model(lambda: CLIPTextModel(_clip_text_config())),
        tokenizer=CLIPTokenizer.from_pretrained(str(directory / "tokenizer")),
        scheduler=PNDMScheduler(
            beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", skip_prk_steps=True, steps_offset=1
        ),
        safety_checker=seeded_model(lambda: StableDiffusionSafetyChecker(safety_config)),
        feature_extractor=CLIPImageProcessor(crop_size={"height": 30, "width": 30}, size={"shortest_edge": 30}),
        requires_safety_checker=True,
    )
    pipe.save_pretrained(str(directory))


def build_tiny_stable_diffusion_xl(directory: Path) -> None:
    """A StableDiffusionXLPipeline of tiny parts: a text-time UNet (cross-attention 64 = two CLIP text widths of 32),
    VAE, CLIPTextModel and CLIPTextModelWithProjection, the CLIP stand-in's tokenizer twice, Euler."""
    save_clip_tokenizer(directory / "tokenizer")
    save_clip_tokenizer(directory / "tokenizer_2")
    unet_kwargs = {
        **sd_unet_kwargs(64),
        "attention_head_dim": (2, 4),
        "use_linear_projection": True,
        "addition_embed_type": "text_time",
        "addition_time_embed_dim": 8,
        "transformer_layers_per_block": (1, 2),
        "projection_class_embeddings_input_dim": 6 * 8 + 32,  # six time ids of 8 + the pooled text width
    }
    pipe = StableDiffusionXLPipeline(
        unet=seeded_model(lambda: UNet2DConditionModel(**unet_kwargs)),
        vae=seeded_model(_tiny_vae),
        text_encoder=seeded_model(lambda: CLIPTextModel(_clip_text_config())),
        text_encoder_2=seeded_model(lambda: CLIPTextModelWithProjection(_clip_text_config(projection_dim=32))),
        tokenizer=CLIPTokenizer.from_pretrained(str(directory / "tokenizer")),
        tokenizer_2=CLIPTokenizer.from_pretrained(str(directory / "tokenizer_2")),
        scheduler=EulerDiscreteScheduler(
            beta_start=0.00085,
            beta_end=0.012,
            beta_schedule="scaled_linear",
            timestep_spacing="leading",
            steps_offset=1,
        ),
    )
    pipe.save_pretrained(str(directory))


def build_tiny_controlnet(directory: Path) -> None:
    """A ControlNetModel matching the tiny Stable Diffusion UNet (32/64 channels, cross-attention 32)."""
    kwargs = {k: v for k, v in sd_unet_kwargs(32).items() if k not in ("out_channels", "up_block_types", "sample_size")}
    save_seeded_model(lambda: ControlNetModel(**kwargs, conditioning_embedding_out_channels=(16, 32)), directory)
