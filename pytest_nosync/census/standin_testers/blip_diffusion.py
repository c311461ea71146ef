"""BLIP Diffusion (deprecated): a BLIP-2 Q-Former embedding a reference image into a context CLIP text encoder's
prompt, then Stable Diffusion; its Q-Former's own tokenizer (a BERT WordPiece) built offline as the hub stand-ins
build one. Its ControlNet class (diffusers keeps it with the ControlNet pipelines) is the same with a ControlNet of the
UNet and a conditioning image."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import PIL.Image
import torch
from diffusers import BlipDiffusionControlNetPipeline, BlipDiffusionPipeline, ControlNetModel, PNDMScheduler
from diffusers.pipelines.deprecated.blip_diffusion.blip_image_processing import BlipImageProcessor
from diffusers.pipelines.deprecated.blip_diffusion.modeling_blip2 import Blip2QFormerModel
from diffusers.pipelines.deprecated.blip_diffusion.modeling_ctx_clip import ContextCLIPTextModel
from transformers import Blip2Config, Blip2QFormerConfig, Blip2VisionConfig, CLIPTextConfig

from ..hub_standins.text_repos import build_bert
from .tiny import seeded, stable_diffusion

WIDTH = 16  # the Q-Former's, the context text encoder's and the UNet's cross-attention width


def _qformer() -> Blip2QFormerModel:
    vision = Blip2VisionConfig(
        hidden_size=WIDTH, intermediate_size=WIDTH, num_hidden_layers=1, num_attention_heads=1, image_size=32,
        patch_size=16,
    )  # fmt: skip
    qformer = Blip2QFormerConfig(
        vocab_size=1000, hidden_size=WIDTH, num_hidden_layers=1, num_attention_heads=1, intermediate_size=WIDTH,
        max_position_embeddings=512, cross_attention_frequency=1, encoder_hidden_size=WIDTH,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="nosync-standin-bert-") as directory:
        build_bert(Path(directory))  # the Q-Former loads its tokenizer from the config's path as it is built
        config = Blip2Config(
            vision_config=vision.to_dict(), qformer_config=qformer.to_dict(), num_query_tokens=4, tokenizer=directory
        )
        return seeded(lambda: Blip2QFormerModel(config))


class BlipDiffusionStandIn:
    pipeline_class = BlipDiffusionPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        sd = stable_diffusion(cross_attention_dim=WIDTH)
        text = CLIPTextConfig(
            bos_token_id=0, eos_token_id=2, hidden_size=WIDTH, intermediate_size=WIDTH, num_attention_heads=1,
            num_hidden_layers=1, pad_token_id=1, vocab_size=1000,
        )  # fmt: skip
        return {
            "tokenizer": sd["tokenizer"],
            "text_encoder": seeded(lambda: ContextCLIPTextModel(text)),
            "vae": sd["vae"],
            "unet": sd["unet"],
            "scheduler": PNDMScheduler(),
            "qformer": _qformer(),
            "image_processor": BlipImageProcessor(size={"height": 32, "width": 32}),
            "ctx_begin_pos": 2,
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return {
            "prompt": ["swimming underwater"],
            "reference_image": PIL.Image.new("RGB", (32, 32), (30, 40, 50)),
            "source_subject_category": ["dog"],
            "target_subject_category": ["dog"],
            "height": 32,
            "width": 32,
            "num_inference_steps": 2,
            "guidance_scale": 6.0,
            "prompt_reps": 2,
            "generator": torch.Generator("cpu").manual_seed(seed),
            "output_type": "np",
        }


class BlipDiffusionControlNetStandIn(BlipDiffusionStandIn):
    pipeline_class = BlipDiffusionControlNetPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        components = super().get_dummy_components()
        # the conditioning embedding downsamples once, as the VAE does: the condition's features are the latents' size
        unet = components["unet"]
        controlnet = seeded(lambda: ControlNetModel.from_unet(unet, conditioning_embedding_out_channels=(16, 32)))
        return {**components, "controlnet": controlnet}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        # the class's own spelling of the argument
        condition = PIL.Image.new("RGB", (32, 32), (200, 100, 50))
        return {**super().get_dummy_inputs(device, seed), "condtioning_image": condition}
