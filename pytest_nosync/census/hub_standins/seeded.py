"""Tiny random-weight models, created from a seed without touching the caller's random state."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch


def seeded_model(make: Callable[[], Any], *, seed: int = 0) -> Any:
    """`make()` under `seed`, the caller's random state left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make()


def save_seeded_model(make: Callable[[], Any], directory: Path, *, seed: int = 0) -> Any:
    """Create a model with `make()` under `seed`, save it with `save_pretrained`, return it."""
    model = seeded_model(make, seed=seed)
    model.eval()
    model.save_pretrained(str(directory))
    return model
