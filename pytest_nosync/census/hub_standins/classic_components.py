"""A family's classic tester's dummy components, which a modular repository's stand-in is made of (modular_repos, and
modular_builds where the blocks need them changed), imported from a diffusers checkout's tests by name."""

from __future__ import annotations

import importlib
from typing import Any


class NoStandIn(Exception):
    """The repository has no stand-in here; the message says which and why, one sentence."""


def classic_components(module: str, name: str) -> dict[str, Any]:
    """`name` of the test module `module`'s `get_dummy_components()`; NoStandIn where it cannot be imported."""
    try:
        tester = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise NoStandIn(f"its stand-in's classic tester {module}.{name} cannot be imported: {exc}") from exc
    return tester().get_dummy_components()
