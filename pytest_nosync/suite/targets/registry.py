"""The targets the suite knows, and how to build one: tiny from its builder, or from a local checkpoint."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import torch
from huggingface_hub import try_to_load_from_cache
from huggingface_hub.errors import HFValidationError

from pytest_nosync.suite.targets._common import diffusers_module
from pytest_nosync.suite.targets.base import Target
from pytest_nosync.suite.targets.flux import FLUX
from pytest_nosync.suite.targets.flux2_klein import FLUX2_KLEIN
from pytest_nosync.suite.targets.ltx2 import LTX2
from pytest_nosync.suite.targets.qwenimage import QWENIMAGE, QWENIMAGE_EDIT
from pytest_nosync.suite.targets.wan import WAN

TARGETS: dict[str, Target] = {t.name: t for t in (FLUX, FLUX2_KLEIN, WAN, LTX2, QWENIMAGE, QWENIMAGE_EDIT)}


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
