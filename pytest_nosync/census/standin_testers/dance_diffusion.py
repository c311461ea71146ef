"""Dance Diffusion (deprecated): unconditional audio from a 1-D UNet."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import DanceDiffusionPipeline, IPNDMScheduler, UNet1DModel

from .tiny import seeded


class DanceDiffusionStandIn:
    pipeline_class = DanceDiffusionPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        # time_embedding_dim: its Fourier features fill the extra input channels
        unet = seeded(lambda: UNet1DModel(
            block_out_channels=(32, 32, 64), extra_in_channels=16, time_embedding_dim=16, sample_size=512,
            sample_rate=16_000, in_channels=2, out_channels=2, flip_sin_to_cos=True, use_timestep_embedding=False,
            time_embedding_type="fourier", mid_block_type="UNetMidBlock1D",
            down_block_types=("DownBlock1DNoSkip", "DownBlock1D", "AttnDownBlock1D"),
            up_block_types=("AttnUpBlock1D", "UpBlock1D", "UpBlock1DNoSkip"),
        ))  # fmt: skip
        return {"unet": unet, "scheduler": IPNDMScheduler()}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return {"batch_size": 1, "generator": torch.Generator("cpu").manual_seed(seed), "num_inference_steps": 4}
