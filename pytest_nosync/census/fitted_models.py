"""The config changes a pipeline class needs in a model its sibling gives of the right class, keyed by pipeline
class: each one what the class's own code reads (its line said), where it concatenates more channels into its
denoiser than the sibling's pipeline does, or gives it latents of more dimensions. census.generated_components
rebuilds the sibling's model from its config with the change, seeded (census.tiny_models.rebuilt)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Change = Callable[[Mapping[str, Any]], dict[str, Any]]


def _doubled_input(config: Mapping[str, Any]) -> dict[str, Any]:
    """Twice the input channels (the latents beside as many condition channels), the output's kept."""
    output = config.get("out_channels") or config["in_channels"]
    return {"in_channels": 2 * config["in_channels"], "out_channels": output}


def _masked_input(config: Mapping[str, Any]) -> dict[str, Any]:
    """The latents, a mask and the masked image's latents in (an inpainting UNet's 9 of 4), the output's kept."""
    output = config.get("out_channels") or config["in_channels"]
    return {"in_channels": 2 * config["in_channels"] + 1, "out_channels": output}


def _frames(config: Mapping[str, Any]) -> dict[str, Any]:
    """Patches and rotary axes over frames too (the height's rotary dims shared with the frames, the sum kept), the
    latents beside as many condition channels in, the latents' out (a sibling's already over frames: ValueError)."""
    height, width = config["rope_axes_dim"]
    return {
        "patch_size": (1, *config["patch_size"]),
        "rope_axes_dim": (height // 2, height - height // 2, width),
        "out_channels": config["in_channels"] // 2,
    }


FITTED: dict[str, dict[str, Change]] = {
    # pipeline_cogview4_control.py: `latent_channels = transformer.config.in_channels // 2`, the control latents
    # concatenated to the latents
    "CogView4ControlPipeline": {"transformer": _doubled_input},
    # pipeline_hunyuanimage_refiner.py: its latents are 5D, one frame (`shape = (batch_size, num_channels_latents, 1,
    # height, width)`), `torch.cat([latents, cond_latents], dim=1)` into the transformer, `num_channels_latents =
    # in_channels // 2`
    "HunyuanImageRefinerPipeline": {"transformer": _frames},
    # pipeline_lucy_edit.py: `torch.cat([latents, condition_latents], dim=1)` into the transformer
    "LucyEditPipeline": {"transformer": _doubled_input},
    # pipeline_pia.py: `torch.cat([latent_model_input, mask, masked_image], dim=1)` into the UNet its motion UNet wraps
    "PIAPipeline": {"unet": _masked_input},
    # pipeline_qwenimage_controlnet_inpaint.py: the control image's latents beside the mask, one channel packed in 2x2
    # patches, into the ControlNet's condition embedder (`extra_condition_channels`)
    "QwenImageControlNetInpaintPipeline": {"controlnet": lambda config: {"extra_condition_channels": 4}},
    # pipeline_stable_audio_3_inpaint.py: the mask beside the masked latents, added along the audio
    "StableAudio3InpaintPipeline": {"transformer": lambda config: {"local_add_cond_dim": config["io_channels"] + 1}},
}


def fitted(pipeline_class: type, given: Mapping[str, Any]) -> dict[str, tuple[dict[str, Any], str]]:
    """The sibling's models `pipeline_class` needs changed: name → (the changes to its config, how, for the row's
    note)."""
    found = {}
    for name, change in FITTED.get(pipeline_class.__name__, {}).items():
        model = given.get(name)
        config = getattr(model, "config", None)
        if config is None:
            continue
        try:
            changes = change(config)
        except (KeyError, TypeError, ValueError):
            continue  # a sibling model of another layout: taken as it is (its raise the reason)
        said = ", ".join(f"{key} {config.get(key)} → {value}" for key, value in changes.items())
        found[name] = (changes, f"the sibling's {name} with {said}")
    return found
