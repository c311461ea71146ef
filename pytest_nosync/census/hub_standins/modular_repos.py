"""Stand-ins for the hub repositories diffusers' Modular Diffusers testers load (`pretrained_model_name_or_path`).

A modular tester builds its pipeline with `blocks.init_pipeline(repo)` and `load_components()`: the repository's
`modular_model_index.json` names each component's own repository and subfolder. The stand-in skips that file: it is
the components themselves, a function returning them by name, which the census gives the pipeline the blocks made
(`update_components`). A family's tiny modular repository holds the same tiny models as its classic tester's dummy
components, so a stand-in is that tester's `get_dummy_components()` (MODULAR_STANDINS: repository id -> (its test
module, its tester class)). A repository with no stand-in is not checked, with that reason, never passed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

Components = Callable[[], dict[str, Any]]

# repository id -> (the classic tester's module, its class), importable in a diffusers checkout's test run
FROM_CLASSIC_TESTERS = {
    "hf-internal-testing/tiny-flux-modular": ("tests.pipelines.flux.test_pipeline_flux", "FluxPipelineTesterConfig"),
}

MODULAR_STANDINS: dict[str, Components] = {}  # repository id -> its components, for repositories built otherwise


class NoStandIn(Exception):
    """The repository has no stand-in here; the message says which and why, one sentence."""


def components_for(repo: str) -> Components:
    """The function building the components of `repo`'s stand-in; NoStandIn where it has none."""
    if repo in MODULAR_STANDINS:
        return MODULAR_STANDINS[repo]
    if repo in FROM_CLASSIC_TESTERS:
        module, name = FROM_CLASSIC_TESTERS[repo]
        return lambda: _classic_components(module, name)
    raise NoStandIn(f"the hub repository {repo} has no stand-in (census.hub_standins.modular_repos)")


def _classic_components(module: str, name: str) -> dict[str, Any]:
    try:
        tester = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise NoStandIn(f"its stand-in's classic tester {module}.{name} cannot be imported: {exc}") from exc
    return tester().get_dummy_components()
