"""What a model class diffusers derives from a small sibling model must change in its derived config to run at that
size, keyed by MODEL class name, never by pipeline (census.generated_components applies it after the class's own
`from_unet`/`from_transformer`): a derived config keeps the defaults sized for the released checkpoint where the
constructor copies nothing from the model it derives from."""

from __future__ import annotations

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


def resized(model: Any) -> Any:
    """`model` rebuilt (seeded by the caller) from its config with its class's changes, or `model` where it has none."""
    change = SIZED.get(type(model).__name__)
    if change is None:
        return model
    # its own keys only: `_use_default_values` would make from_config drop the changed ones as defaults
    config = {key: value for key, value in model.config.items() if not key.startswith("_")}
    return type(model).from_config({**config, **change(model.config)})
