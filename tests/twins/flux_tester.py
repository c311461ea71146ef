"""A diffusers tester class of the tiny Flux target (its components from the suite's builder, its inputs as a tester's
`get_dummy_inputs` gives them): a real CacheMixin transformer with registered blocks, for scenarios on the census."""

from __future__ import annotations

import unittest
from typing import Any

import torch
from diffusers import FluxPipeline

from pytest_nosync.suite.targets import flux


class TinyFluxPipelineFastTests(unittest.TestCase):
    pipeline_class = FluxPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return flux.build_components()

    def get_dummy_inputs(self, device: str, seed: int = 0) -> dict[str, Any]:
        gen = torch.Generator().manual_seed(seed)
        return {
            "prompt_embeds": torch.randn(1, 16, 32, generator=gen),
            "pooled_prompt_embeds": torch.randn(1, 32, generator=gen),
            "guidance_scale": 3.5,
            "height": flux.LATENT_SIZE * 2,  # the tiny VAE scales by 2
            "width": flux.LATENT_SIZE * 2,
            "num_inference_steps": 2,
            "generator": torch.Generator().manual_seed(seed),
            "output_type": "pt",
        }
