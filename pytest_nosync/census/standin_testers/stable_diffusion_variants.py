"""Deprecated Stable Diffusion variants whose siblings' components or inputs do not fit: LDM3D (an RGB-and-depth
VAE), Paradigms (a parallel DDPM scheduler), Paint by Example (an image encoder in the text encoder's place, the
inpainting UNet), Pix2Pix-Zero (an inverse scheduler; the edit's source and target embeddings given, so its caption
generator, used only to invert a real image, is none), DiffEdit (an inverse scheduler; its call's mask and inverted
latents made by its own `generate_mask` and `invert`, the census's prelude, from the inputs given here)."""

from __future__ import annotations

from typing import Any

import PIL.Image
import torch
from diffusers import (
    DDIMInverseScheduler,
    DDPMParallelScheduler,
    PaintByExamplePipeline,
    StableDiffusionDiffEditPipeline,
    StableDiffusionLDM3DPipeline,
    StableDiffusionParadigmsPipeline,
    StableDiffusionPix2PixZeroPipeline,
)
from diffusers.pipelines.deprecated.paint_by_example import PaintByExampleImageEncoder
from transformers import CLIPImageProcessor

from .tiny import TEXT_WIDTH, clip_vision, prompted, seeded, stable_diffusion


class LDM3DStandIn:
    pipeline_class = StableDiffusionLDM3DPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return {**stable_diffusion(vae_channels=6), "image_encoder": None}  # RGB and depth, three channels each

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return prompted(seed)


class ParadigmsStandIn:
    pipeline_class = StableDiffusionParadigmsPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return {**stable_diffusion(), "scheduler": DDPMParallelScheduler()}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        # A window of one step: each loop iteration then runs the UNet once and advances one timestep, whatever the
        # tolerance finds (a wider window converged in one iteration, one step for the census to see).
        return prompted(seed, num_inference_steps=4, parallel=1)


class PaintByExampleStandIn:
    pipeline_class = PaintByExamplePipeline

    def get_dummy_components(self) -> dict[str, Any]:
        components = stable_diffusion(in_channels=9)  # the latents, the mask, the masked image's latents
        vision = clip_vision(layers=5, layer_norm_eps=1e-05)
        for name in ("text_encoder", "tokenizer"):
            del components[name]
        return {
            **components,
            "image_encoder": seeded(lambda: PaintByExampleImageEncoder(vision, proj_size=TEXT_WIDTH)),
            "feature_extractor": CLIPImageProcessor(crop_size=32, size=32),
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        image = PIL.Image.new("RGB", (64, 64), (120, 80, 40))
        mask = PIL.Image.new("L", (64, 64), 0)
        mask.paste(255, (32, 0, 64, 64))
        example = PIL.Image.new("RGB", (32, 32), (20, 160, 90))
        inputs = prompted(seed, image=image, mask_image=mask, example_image=example)
        del inputs["prompt"]
        return inputs


class Pix2PixZeroStandIn:
    pipeline_class = StableDiffusionPix2PixZeroPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        none = dict.fromkeys(("caption_generator", "caption_processor"))
        return {**stable_diffusion(), "inverse_scheduler": DDIMInverseScheduler(), **none}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        embeddings = torch.randn((2, 77, TEXT_WIDTH), generator=torch.Generator("cpu").manual_seed(seed))
        return prompted(seed, source_embeds=embeddings[:1], target_embeds=embeddings[1:])


class DiffEditStandIn:
    pipeline_class = StableDiffusionDiffEditPipeline
    steps = 4  # the inverted latents hold one per step: every call runs as many as `invert` did (DiffEdit's own
    # check), enough for each check's warm-up and judged steps

    def get_dummy_components(self) -> dict[str, Any]:
        return {**stable_diffusion(), "inverse_scheduler": DDIMInverseScheduler()}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return prompted(seed, num_inference_steps=self.steps, inpaint_strength=1.0)

    def get_dummy_mask_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        inputs = prompted(seed, image=_photo(), source_prompt="a cat and a frog", target_prompt="a dog and a newt",
                          num_maps_per_mask=2, mask_encode_strength=1.0)  # fmt: skip
        del inputs["prompt"]
        return inputs

    def get_dummy_inversion_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return prompted(seed, image=_photo(), prompt="a cat and a frog", num_inference_steps=self.steps,
                        inpaint_strength=1.0)  # fmt: skip


def _photo() -> PIL.Image.Image:
    """The image DiffEdit edits: 32 pixels square, the tiny UNet's sample size in pixels."""
    image = PIL.Image.new("RGB", (32, 32), (120, 80, 40))
    image.paste((20, 160, 90), (16, 0, 32, 32))  # two halves: a mask has something to tell apart
    return image
