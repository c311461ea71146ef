"""Ernie Image: diffusers main tests its modular blocks only; the classic pipeline's stand-in tester builds it from
the components the modular repository's stand-in has (census.hub_standins.modular_builds)."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import ErnieImagePipeline

from ..hub_standins.modular_builds import ernie_image


class ErnieImageStandIn:
    pipeline_class = ErnieImagePipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return ernie_image()

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return {
            "prompt": "a dog is dancing",
            "generator": torch.Generator("cpu").manual_seed(seed),
            "num_inference_steps": 2,
            "guidance_scale": 4.0,
            "height": 32,
            "width": 32,
            "output_type": "pt",
        }
