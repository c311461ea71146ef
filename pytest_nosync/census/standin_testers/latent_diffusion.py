"""Latent diffusion in a VQ model's space, without a prompt: the unconditional LDMPipeline (deprecated) and the
super-resolution one (its family's tester builds the text-to-image class only)."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import DDIMScheduler, LDMPipeline, LDMSuperResolutionPipeline, UNet2DModel, VQModel

from ..hub_standins.diffusers_repos import tiny_unet2d
from .tiny import seeded, vq_model

LATENT = 3  # the VQ model's latent channels


def _vqvae() -> VQModel:
    return vq_model(latent_channels=LATENT)


def _unet(in_channels: int) -> UNet2DModel:
    return seeded(lambda: tiny_unet2d(sample_size=8, in_channels=in_channels, out_channels=LATENT))


class LDMStandIn:
    pipeline_class = LDMPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return {"unet": _unet(LATENT), "vqvae": _vqvae(), "scheduler": DDIMScheduler()}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return {"generator": torch.Generator("cpu").manual_seed(seed), "num_inference_steps": 2, "output_type": "np"}


class LDMSuperResolutionStandIn:
    pipeline_class = LDMSuperResolutionPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        # the UNet sees the latents beside the low-resolution image: 3 + 3 channels
        return {"unet": _unet(LATENT + 3), "vqvae": _vqvae(), "scheduler": DDIMScheduler()}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        generator = torch.Generator("cpu").manual_seed(seed)
        image = torch.rand((1, 3, 32, 32), generator=generator)
        return {"image": image, "generator": generator, "num_inference_steps": 2, "output_type": "np"}
