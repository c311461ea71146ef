"""Models and processors of a class a pipeline's `__init__` names that no sibling tester gives in any form, built tiny
in code, keyed by the component's CLASS name, never by pipeline (census.generated_components builds them seeded, its
last maker): a vision tower and its image processor (Z-Image Omni's SigLIP 2, HunyuanVideo 1.5's SigLIP), a VAE of
another class than the sibling's (HunyuanImage's refiner VAE), LTX-2's latent upsampler and diffusion decoder.

Each builder is given the annotated class itself (a processor's name differs with what transformers has installed:
`SiglipImageProcessor`, its PIL fallback, its `Fast` alias) and the components the class is built with, the
sibling's and those made before: a size the pipeline reads from another component (the width its transformer embeds
image features of, the channels its transformer denoises) is taken from that component, so that the two fit."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import transformers
from transformers.utils.import_utils import DummyObject

Builder = Callable[[type, Mapping[str, Any]], Any]

WIDTH = 32  # a vision tower's width where no component says which
HEADS = 2
SIGLIP_IMAGE, SIGLIP_PATCH = 16, 4  # SigLIP's fixed square input, in 4x4 patches
SIGLIP2_PATCH, SIGLIP2_PATCHES = 4, 16  # SigLIP 2 resizes to at most 16 patches of 4x4, keeping the aspect


def _config(components: Mapping[str, Any], name: str, key: str) -> Any:
    """`components[name].config[key]`, or None where there is no such component or key."""
    config = getattr(components.get(name), "config", None)
    return config.get(key) if config is not None else None


def _tower(width: int) -> dict[str, Any]:
    """A vision transformer's sizes: one layer of `width`, two heads."""
    return {"hidden_size": width, "intermediate_size": 2 * width, "num_hidden_layers": 1, "num_attention_heads": HEADS}


def _siglip_vision(cls: type, components: Mapping[str, Any]) -> Any:
    # HunyuanVideo 1.5 embeds the image features at its transformer's `image_embed_dim`
    width = _config(components, "transformer", "image_embed_dim") or WIDTH
    config = cls.config_class(**_tower(width), image_size=SIGLIP_IMAGE, patch_size=SIGLIP_PATCH)
    return cls(config).eval()


def _siglip_processor(cls: type, components: Mapping[str, Any]) -> Any:
    return cls(size={"height": SIGLIP_IMAGE, "width": SIGLIP_IMAGE})


def _siglip2_vision(cls: type, components: Mapping[str, Any]) -> Any:
    # Z-Image Omni embeds them at its transformer's `siglip_feat_dim`
    width = _config(components, "transformer", "siglip_feat_dim") or WIDTH
    config = cls.config_class(**_tower(width), patch_size=SIGLIP2_PATCH, num_patches=SIGLIP2_PATCHES)
    return cls(config).eval()


def _siglip2_processor(cls: type, components: Mapping[str, Any]) -> Any:
    return cls(patch_size=SIGLIP2_PATCH, max_num_patches=SIGLIP2_PATCHES)


def _hunyuan_image_refiner_vae(cls: type, components: Mapping[str, Any]) -> Any:
    # The refiner folds each image's latents into twice the channels (a leading frame repeated, two frames stacked)
    # and its transformer takes those beside the noise: a quarter of the transformer's input channels
    channels = _config(components, "transformer", "in_channels")
    latent = max(channels // 4, 1) if isinstance(channels, int) else 1
    return cls(
        latent_channels=latent,
        block_out_channels=(8, 8, 8, 8),  # three downsamples: 8x, as the sibling's VAE
        layers_per_block=1,
        spatial_compression_ratio=8,
        temporal_compression_ratio=4,
    )


def _ltx2_latent_upsampler(cls: type, components: Mapping[str, Any]) -> Any:
    # upsamples the VAE's latents: their channels; 2x in space, as the released spatial upsampler; 32 channels in the
    # middle, its group norms' 32 groups
    channels = _config(components, "vae", "latent_channels") or 4
    return cls(in_channels=channels, mid_channels=32, num_blocks_per_stage=1, dims=3).eval()


def ltx2_diffusion_decoder(cls: type, components: Mapping[str, Any]) -> Any:
    """A diffusion decoder of the VAE's latent space at its compression (a tiny one's 2 in space and time: one
    upsampling stage of stride 2, patch size 1): the released 32x spatial, 8x temporal decoder's neighborhood
    attention over every decoded frame and pixel would not fit memory at that output; one block a stage, 3x3x3
    kernels (each stage's grid at least the kernel, as its attention requires)."""
    vae = components["vae"]
    return cls(
        latent_channels=vae.config.latent_channels,
        patch_size=1,
        decoder_head_dim=16,
        decoder_stage_channels=(32, 16, 16, 16, 16),
        decoder_stage_depths=(1, 1, 1, 1, 1),
        decoder_stage_kernels=((3, 3, 3),) * 4,
        decoder_upsample_strides=((1, 1, 1), (1, 1, 1), (1, 1, 1), (2, 2, 2)),
        decoder_upsample_channel_reductions=(2, 1, 1, 1),
        decoder_stage5_kernel=(3, 3, 3),
        decoder_t_emb_dim=32,
        spatial_compression_ratio=vae.spatial_compression_ratio,
        temporal_compression_ratio=vae.temporal_compression_ratio,
    ).eval()


MADE: dict[str, Builder] = {
    "SiglipVisionModel": _siglip_vision,
    **dict.fromkeys(("SiglipImageProcessor", "SiglipImageProcessorPil", "SiglipImageProcessorFast"), _siglip_processor),
    "Siglip2VisionModel": _siglip2_vision,
    **dict.fromkeys(
        ("Siglip2ImageProcessor", "Siglip2ImageProcessorPil", "Siglip2ImageProcessorFast"), _siglip2_processor
    ),
    "AutoencoderKLHunyuanImageRefiner": _hunyuan_image_refiner_vae,
    "LTX2LatentUpsamplerModel": _ltx2_latent_upsampler,
    "LTX2VideoDiffusionDecoderModel": ltx2_diffusion_decoder,
}


def buildable(classes: tuple[type, ...]) -> type | None:
    """The first of `classes` MADE builds, or None."""
    return next((cls for cls in classes if cls.__name__ in MADE), None)


def made(cls: type, components: Mapping[str, Any]) -> Any:
    """A tiny `cls` (one MADE builds; seeded by the caller) fitting `components`."""
    return MADE[cls.__name__](_backed(cls), components)


def _backed(cls: type) -> type:
    """`cls`, or where it is transformers' placeholder for a backend not installed (an image processor without
    torchvision), the processor of the same name on the backend installed, as transformers itself falls back to
    (`SiglipImageProcessorPil`; before those names, the class without `Fast`)."""
    if not isinstance(cls, DummyObject):
        return cls
    for name in (f"{cls.__name__.removesuffix('Fast')}Pil", cls.__name__.removesuffix("Fast")):
        twin = getattr(transformers, name, None)
        if isinstance(twin, type) and not isinstance(twin, DummyObject):
            return twin
    return cls  # its build raises why
