"""Flux Redux's prior: a SigLIP vision tower's image features, projected by a Redux image encoder into the T5 text
space a Flux transformer attends to, appended to the prompt's embeddings. Without text encoders (how its released
repository ships) the prompt's are zeros of the released T5 width (4096, which the pipeline fixes), so the Redux
encoder projects to that width; the tower is tiny. One model call a call, no denoising loop: each call is a step."""

from __future__ import annotations

from typing import Any

import numpy as np
import PIL.Image
from diffusers import FluxPriorReduxPipeline
from diffusers.pipelines.flux.modeling_flux import ReduxImageEncoder
from transformers import SiglipImageProcessor, SiglipVisionModel

from ..made_models import made
from .tiny import seeded

T5_WIDTH = 4096  # the zero prompt embeddings' width without text encoders (pipeline_flux_prior_redux.py)


class FluxPriorReduxStandIn:
    pipeline_class = FluxPriorReduxPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        tower = seeded(lambda: made(SiglipVisionModel, {}))
        return {
            "image_encoder": tower,
            "feature_extractor": made(SiglipImageProcessor, {}),
            "image_embedder": seeded(
                lambda: ReduxImageEncoder(redux_dim=tower.config.hidden_size, txt_in_features=T5_WIDTH)
            ),
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        pixels = np.random.default_rng(seed).integers(0, 256, (16, 16, 3), dtype=np.uint8)
        return {"image": PIL.Image.fromarray(pixels)}
