"""Ernie Image: diffusers main tests its modular blocks only; the classic pipeline's stand-in tester builds it from
the components the modular repository's stand-in has (census.hub_standins.modular_builds)."""

from __future__ import annotations

from typing import Any

from diffusers import ErnieImagePipeline

from ..hub_standins.modular_builds import ernie_image
from .tiny import prompted


class ErnieImageStandIn:
    pipeline_class = ErnieImagePipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return ernie_image()

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return prompted(seed, prompt="a dog is dancing", guidance_scale=4.0, height=32, width=32, output_type="pt")
