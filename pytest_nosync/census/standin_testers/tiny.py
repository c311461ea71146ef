"""What the stand-in testers share: their width, seeded models (`seeded`), CLIP and RoBERTa tokenizers built offline."""

from __future__ import annotations

import tempfile
from pathlib import Path

from transformers import CLIPTokenizer, RobertaTokenizer

from ..hub_standins.seeded import seeded_model as seeded  # the stand-ins' models, seeded alike
from ..hub_standins.text_repos import build_roberta_tokenizer, save_clip_tokenizer

__all__ = ["WIDTH", "clip_tokenizer", "roberta_tokenizer", "seeded"]

WIDTH = 8  # every tiny model's hidden width (and its norms' groups)


def clip_tokenizer() -> CLIPTokenizer:
    """A CLIP tokenizer of under 1000 ids, built here as the hub stand-in of tiny-random-clip builds it."""
    with tempfile.TemporaryDirectory(prefix="nosync-standin-tokenizer-") as directory:
        save_clip_tokenizer(Path(directory))
        return CLIPTokenizer.from_pretrained(directory)


def roberta_tokenizer() -> RobertaTokenizer:
    """RoBERTa's byte-level BPE of under 1000 ids (a CLAP text model's), 77 tokens long as CLAP's prompts."""
    with tempfile.TemporaryDirectory(prefix="nosync-standin-tokenizer-") as directory:
        build_roberta_tokenizer(Path(directory))
        return RobertaTokenizer.from_pretrained(directory, model_max_length=77)
