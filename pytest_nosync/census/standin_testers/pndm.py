"""PNDM (deprecated): an unconditional UNet stepped by PNDM's pseudo linear multi-step method."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import PNDMPipeline, PNDMScheduler, UNet2DModel

from .tiny import seeded


class PNDMStandIn:
    pipeline_class = PNDMPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        unet = seeded(
            lambda: UNet2DModel(
                block_out_channels=(32, 64),
                layers_per_block=2,
                sample_size=32,
                in_channels=3,
                out_channels=3,
                down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                up_block_types=("AttnUpBlock2D", "UpBlock2D"),
            )
        )
        return {"unet": unet, "scheduler": PNDMScheduler()}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return {"generator": torch.Generator("cpu").manual_seed(seed), "num_inference_steps": 4, "output_type": "np"}
