"""The targets the suite knows (each one's record: what it is; its module builds and calls it), and how to build one:
tiny from its builder, or from a local checkpoint."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import torch
from huggingface_hub import try_to_load_from_cache
from huggingface_hub.errors import HFValidationError

from pytest_nosync.suite.targets import flux, flux2_klein, ltx2, qwenimage, wan
from pytest_nosync.suite.targets._common import diffusers_module
from pytest_nosync.suite.targets.base import Target

# What each target is, side by side; its module builds and calls it. `extra_classes`: the diffusers classes its builder
# names, checked before a build (missing_classes).
_QWENIMAGE_CLASSES = ("QwenImageTransformer2DModel", "AutoencoderKLQwenImage", "FlowMatchEulerDiscreteScheduler")
_ALL = (
    Target(
        name="flux",
        pipeline_class="FluxPipeline",
        checkpoint="black-forest-labs/FLUX.1-dev",
        build_components=flux.build_components,
        call_kwargs=flux.call_kwargs,
        text_encoding="no CLIP/T5: random T5 prompt embeddings (512 tokens) and pooled CLIP vector passed in",
        description="FLUX.1-dev text-to-image, guidance-distilled (guidance 3.5 as an embedding, no CFG batch)",
        extra_classes=("FluxTransformer2DModel", "AutoencoderKL", "FlowMatchEulerDiscreteScheduler"),
    ),
    Target(
        name="flux2_klein",
        pipeline_class="Flux2KleinPipeline",
        checkpoint="black-forest-labs/FLUX.2-klein-base-9B",
        build_components=flux2_klein.build_components,
        call_kwargs=flux2_klein.call_kwargs,
        text_encoding="no Qwen3: random stacked-layer prompt and negative embeddings (512 tokens) passed in",
        description="FLUX.2 [klein] base text-to-image, CFG 4.0: conditional and unconditional call per step",
        extra_classes=("Flux2Transformer2DModel", "AutoencoderKLFlux2", "FlowMatchEulerDiscreteScheduler"),
    ),
    Target(
        name="wan",
        pipeline_class="WanPipeline",
        checkpoint="Wan-AI/Wan2.1-T2V-14B-Diffusers",
        build_components=wan.build_components,
        call_kwargs=wan.call_kwargs,
        text_encoding="no UMT5: random prompt and negative prompt embeddings (512 tokens) passed in",
        description="Wan 2.1 text-to-video, 9 frames, UniPC flow sampling, CFG 5.0: two transformer calls a step",
        extra_classes=("WanTransformer3DModel", "AutoencoderKLWan", "UniPCMultistepScheduler"),
    ),
    Target(
        name="ltx2",
        pipeline_class="LTX2Pipeline",
        checkpoint="Lightricks/LTX-2",
        build_components=ltx2.build_components,
        call_kwargs=ltx2.call_kwargs,
        text_encoding=(
            "no Gemma 3: random stacked hidden states of all its layers (1024 left-padded tokens) with attention "
            "masks go through the real text connectors"
        ),
        description="LTX-2 text-to-audio+video with CFG 4.0, batched: one transformer call per step",
        extra_classes=(
            "LTX2VideoTransformer3DModel",
            "AutoencoderKLLTX2Video",
            "AutoencoderKLLTX2Audio",
            "FlowMatchEulerDiscreteScheduler",
        ),
    ),
    Target(
        name="qwenimage",
        pipeline_class="QwenImagePipeline",
        checkpoint="Qwen/Qwen-Image",
        build_components=qwenimage.build_components,
        call_kwargs=qwenimage.call_kwargs,
        text_encoding="no Qwen2.5-VL: random prompt (48 tokens) and negative (6 tokens) embeddings with masks",
        description="Qwen-Image text-to-image with true CFG 4.0: two transformer calls per step",
        extra_classes=_QWENIMAGE_CLASSES,
    ),
    Target(
        name="qwenimage_edit",
        pipeline_class="QwenImageEditPlusPipeline",
        checkpoint="Qwen/Qwen-Image-Edit-2511",
        build_components=qwenimage.build_edit_components,
        call_kwargs=qwenimage.edit_call_kwargs,
        text_encoding=(
            "no Qwen2.5-VL: random prompt/negative embeddings (with the condition image's 196 vision tokens) "
            "and masks; the input image still goes through the VAE"
        ),
        description=(
            "Qwen-Image-Edit-2511 (zero_cond_t) editing one input image with true CFG 4.0: two transformer "
            "calls per step over the generated and the condition image tokens"
        ),
        extra_classes=_QWENIMAGE_CLASSES,
    ),
)
TARGETS: dict[str, Target] = {t.name: t for t in _ALL}


class UnknownTarget(ValueError):
    """A target name the registry does not know; the message lists the known ones."""


def lookup(names: Iterable[str]) -> list[Target]:
    """The targets of `names`, or UnknownTarget naming the first unknown one."""
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        raise UnknownTarget(f"unknown target {unknown[0]!r}; known: {', '.join(TARGETS)}")
    return [TARGETS[n] for n in names]


class TargetUnavailable(Exception):
    """The installed diffusers lacks the target's classes (it needs a newer one): the target cannot run here."""


class CheckpointError(Exception):
    """A checkpoint the user asked for cannot be found or loaded: a failure, never a skip."""


def checkpoint_problem(checkpoint: str) -> str | None:
    """Why `checkpoint` (a local directory, or a repo id in the local Hugging Face cache) cannot be loaded, or None."""
    if os.path.isdir(checkpoint):
        if not os.path.isfile(os.path.join(checkpoint, "model_index.json")):
            return f"{checkpoint} has no model_index.json (not a saved diffusers pipeline)"
        return None
    if not _in_hf_cache(checkpoint):
        return f"{checkpoint} is neither a local directory nor a repo id in the local Hugging Face cache"
    return None


def missing_classes(target: Target) -> list[str]:
    """The diffusers classes the target needs that the installed diffusers lacks."""
    return [name for name in (target.pipeline_class, *target.extra_classes) if not hasattr(diffusers_module(), name)]


def build_pipeline(
    target: Target, device: torch.device | str, dtype: torch.dtype, checkpoint: str | None = None
) -> Any:
    """The target's pipeline on `device` in `dtype`, with the progress bar off.

    With `checkpoint=None` the tiny random-weight components; otherwise `checkpoint` (a local directory or
    a repo id already in the Hugging Face cache) is loaded without touching the network. The components the
    tiny build leaves out (text encoders, tokenizers: the call passes prompt embeddings) are left out of the
    checkpoint too, which also spares loading a multi-billion-parameter text encoder for nothing.
    """
    diffusers = diffusers_module()
    missing = missing_classes(target)
    if missing:
        raise TargetUnavailable(
            f"target {target.name!r} needs {', '.join(missing)}, which diffusers {diffusers.__version__} "
            "does not provide (a newer release may)"
        )
    cls = getattr(diffusers, target.pipeline_class)
    if checkpoint is None:
        return assemble(cls, target.build_components(), device, dtype)
    return placed(_from_checkpoint(target, cls, checkpoint, dtype), device)


def assemble(cls: Any, components: dict[str, Any], device: torch.device | str, dtype: torch.dtype) -> Any:
    """`cls(**components)` in `dtype` (as from_pretrained would load it) on `device`, progress bar off."""
    pipe = cls(**components)
    for component in pipe.components.values():
        if isinstance(component, torch.nn.Module):
            _cast_like_from_pretrained(component, dtype)
    return placed(pipe, device)


def placed(pipe: Any, device: torch.device | str) -> Any:
    pipe.to(device)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def _cast_like_from_pretrained(module: torch.nn.Module, dtype: torch.dtype) -> None:
    """Cast the weights the way `from_pretrained(torch_dtype=dtype)` loads them, so that a tiny build runs the
    same mixed-precision code as the checkpoint: `_keep_in_fp32_modules` (Wan's time embedder, norms and
    modulation tables) stay float32, which `pipe.to(dtype)` would not do."""
    keep = getattr(module, "_keep_in_fp32_modules", None) or []
    for name, tensor in module.state_dict(keep_vars=True).items():
        if tensor.is_floating_point():
            tensor.data = tensor.data.to(torch.float32 if any(k in name.split(".") for k in keep) else dtype)


def _from_checkpoint(target: Target, cls: Any, checkpoint: str, dtype: torch.dtype) -> Any:
    problem = checkpoint_problem(checkpoint)
    if problem:
        raise CheckpointError(f"checkpoint for target {target.name!r}: {problem} (nothing is downloaded)")
    left_out = dict.fromkeys(_left_out_components(target))
    try:
        return cls.from_pretrained(
            checkpoint, torch_dtype=dtype, local_files_only=True, use_safetensors=True, **left_out
        )
    except (OSError, ValueError) as err:  # a partial download, no safetensors weights, another pipeline's files
        raise CheckpointError(
            f"checkpoint {checkpoint!r} for target {target.name!r} cannot be loaded from local files: {err}"
        ) from err


def _in_hf_cache(repo_id: str) -> bool:
    try:
        return isinstance(try_to_load_from_cache(repo_id, "model_index.json"), str)
    except HFValidationError:  # not a valid repo id: a directory path that does not exist
        return False


def _left_out_components(target: Target) -> list[str]:
    """The components the tiny builder sets to None. Building them is cheap; the RNG is left as it was."""
    with torch.random.fork_rng(devices=[]):
        components = target.build_components()
    return [name for name, value in components.items() if value is None]
