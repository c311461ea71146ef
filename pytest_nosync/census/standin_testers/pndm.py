"""PNDM (deprecated): an unconditional UNet stepped by PNDM's pseudo linear multi-step method."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import PNDMPipeline, PNDMScheduler

from ..hub_standins.diffusers_repos import tiny_unet2d
from .tiny import seeded


class PNDMStandIn:
    pipeline_class = PNDMPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        unet = seeded(tiny_unet2d)
        return {"unet": unet, "scheduler": PNDMScheduler()}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return {"generator": torch.Generator("cpu").manual_seed(seed), "num_inference_steps": 4, "output_type": "np"}
