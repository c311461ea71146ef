"""LLaDA2: a masked-diffusion language model refining blocks of tokens; any causal language model is its `model`
(a tiny Llama here), the prompt given as token ids (no tokenizer), the mask and end ids named."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import BlockRefinementScheduler, LLaDA2Pipeline
from transformers import LlamaConfig, LlamaForCausalLM

from .tiny import seeded

VOCABULARY = 64
MASK, END = VOCABULARY - 1, VOCABULARY - 2


class LLaDA2StandIn:
    pipeline_class = LLaDA2Pipeline

    def get_dummy_components(self) -> dict[str, Any]:
        config = LlamaConfig(
            vocab_size=VOCABULARY, hidden_size=16, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=2, max_position_embeddings=128,
        )  # fmt: skip
        return {"model": seeded(lambda: LlamaForCausalLM(config)), "scheduler": BlockRefinementScheduler()}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return {
            "input_ids": torch.tensor([[1, 2, 3, 4]]),
            "gen_length": 8,
            "block_length": 4,
            "num_inference_steps": 2,
            "mask_token_id": MASK,
            "eos_token_id": END,
            "eos_early_stop": False,
            "generator": torch.Generator("cpu").manual_seed(seed),
            "output_type": "seq",
        }
