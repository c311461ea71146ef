"""DiffusionGemma: block-diffusion text generation; a causal encoder fills a KV cache with the prompt, a bidirectional
decoder denoises a canvas of tokens against it. The model a tiny DiffusionGemmaForBlockDiffusion; its processor is the
Gemma tokenizer stand-in (the pipeline takes a tokenizer's chat template for text prompts, and its eos id)."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import BlockRefinementScheduler, DiffusionGemmaPipeline
from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion

from .tiny import PROMPT, TEXT_WIDTH, gemma_tokenizer, seeded

CANVAS = 8  # tokens a block denoises


def _model() -> DiffusionGemmaForBlockDiffusion:
    head = 16
    config = DiffusionGemmaConfig(
        # the tokenizer's 850 ids fit; a sliding layer then the (required last) full one, both of 16-wide heads (the
        # full layers' global_head_dim would be 512); its layers are mixtures of experts always: two, one routed to
        text_config={
            "vocab_size": 1000, "hidden_size": TEXT_WIDTH, "intermediate_size": TEXT_WIDTH, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": head, "global_head_dim": head,
            "max_position_embeddings": 256, "sliding_window": 16, "num_experts": 2, "top_k_experts": 1,
            "moe_intermediate_size": head,
        },
        # the vision tower, never run (text prompts)
        vision_config={
            "model_type": "gemma4_vision", "hidden_size": head, "intermediate_size": head, "num_hidden_layers": 1,
            "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": head, "position_embedding_size": 64,
        },
        canvas_length=CANVAS,
    )  # fmt: skip
    return seeded(lambda: DiffusionGemmaForBlockDiffusion(config).eval())


class DiffusionGemmaStandIn:
    pipeline_class = DiffusionGemmaPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        return {"model": _model(), "scheduler": BlockRefinementScheduler(), "processor": gemma_tokenizer()}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        # one canvas, every step of it: no stop at an end token the random model may sample
        return {
            "prompt": PROMPT,
            "gen_length": CANVAS,
            "num_inference_steps": 2,
            "eos_early_stop": False,
            "generator": torch.Generator("cpu").manual_seed(seed),
            "output_type": "seq",
        }
