"""What the stand-in testers share: their width, seeded models (`seeded`), a CLIP tokenizer built offline."""

from __future__ import annotations

import tempfile
from pathlib import Path

from transformers import CLIPTokenizer

from ..hub_standins.seeded import seeded_model as seeded  # the stand-ins' models, seeded alike
from ..hub_standins.text_repos import save_clip_tokenizer

__all__ = ["WIDTH", "clip_tokenizer", "seeded"]

WIDTH = 8  # every tiny model's hidden width (and its norms' groups)


def clip_tokenizer() -> CLIPTokenizer:
    """A CLIP tokenizer of under 1000 ids, built here as the hub stand-in of tiny-random-clip builds it."""
    with tempfile.TemporaryDirectory(prefix="nosync-standin-tokenizer-") as directory:
        save_clip_tokenizer(Path(directory))
        return CLIPTokenizer.from_pretrained(directory)
