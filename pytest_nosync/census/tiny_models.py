"""What a model class diffusers derives from a small sibling model must change in its derived config to run at that
size, keyed by MODEL class name, never by pipeline (census.generated_components applies it after the class's own
`from_unet`/`from_transformer`): a derived config keeps the defaults sized for the released checkpoint where the
constructor copies nothing from the model it derives from. And the config of a model class whose `from_transformer`
takes a model of its own beside the sibling's (BESIDE: Z-Image's ControlNet, given the transformer's embedders): the
sibling's sizes its `__init__` shares, and what it adds."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

SIZED: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    # from_unet leaves the control-type transformer and its projection at SDXL's 320 channels, the first block's
    "ControlNetUnionModel": lambda config: {
        "num_trans_channel": config["block_out_channels"][0],
        "num_proj_channel": config["block_out_channels"][0],
        "num_trans_head": 2,
    },
}


def rebuilt(model: Any, changes: Mapping[str, Any]) -> Any:
    """A model of `model`'s class (seeded by the caller) of its config with `changes`."""
    # its own keys only: `_use_default_values` would make from_config drop the changed ones as defaults
    config = {key: value for key, value in model.config.items() if not key.startswith("_")}
    return type(model).from_config({**config, **changes})


def resized(model: Any) -> Any:
    """`model` rebuilt (seeded by the caller) from its config with its class's changes, or `model` where it has none."""
    change = SIZED.get(type(model).__name__)
    return model if change is None else rebuilt(model, change(model.config))


BESIDE: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    # one control block at the first layer, one refiner block, and the Union 2.0 layout the inpainting class requires
    # (the control latents, the mask, the masked image's latents), which the other class pads its control latents to
    "ZImageControlNetModel": lambda config: {
        "control_layers_places": [0],
        "control_refiner_layers_places": [0],
        "control_in_dim": 2 * config["in_channels"] + 1,
    },
}


def beside(cls: type, config: Mapping[str, Any]) -> Any:
    """A model of `cls` (BESIDE) of the sibling model's `config` (the keys its `__init__` takes) and its additions."""
    taken = set(inspect.signature(cls.__init__).parameters) - {"self"}
    shared = {key: value for key, value in config.items() if key in taken}
    return cls.from_config({**shared, **BESIDE[cls.__name__](config)})
