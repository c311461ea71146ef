"""The targets build tiny, run a full call on the CPU, and load back from a saved checkpoint."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import diffusers
import pytest
import torch

from pytest_nosync.suite.targets.base import CallContext, Target
from pytest_nosync.suite.targets.registry import (
    TARGETS,
    CheckpointError,
    TargetUnavailable,
    build_pipeline,
    missing_classes,
)

CTX = CallContext(device=torch.device("cpu"), dtype=torch.float32, steps=2)

# Denoiser calls per step of each realistic call: FLUX.1-dev is guidance-distilled (no CFG batch), LTX-2
# batches CFG into one call, the others run the unconditional branch as a second call.
CALLS_PER_STEP = {"flux": 1, "flux2_klein": 2, "wan": 2, "ltx2": 1, "qwenimage": 2, "qwenimage_edit": 2}
VIDEO = {"wan", "ltx2"}


@pytest.fixture(scope="module")
def pipeline() -> Callable[[str], Any]:
    """Each tiny pipeline, built once for the module."""
    built: dict[str, Any] = {}

    def get(name: str) -> Any:
        if name not in built:
            built[name] = build_pipeline(TARGETS[name], CTX.device, CTX.dtype)
        return built[name]

    return get


def run(pipe: Any, target: Target, ctx: CallContext = CTX) -> tuple[Any, list[int], list[int]]:
    """Call the pipeline; return its output, the step indices the callback saw, and the denoiser calls
    made before each callback."""
    calls = 0
    steps: list[int] = []
    calls_at_step: list[int] = []

    def count(*_: Any) -> None:
        nonlocal calls
        calls += 1

    def on_step_end(_pipe: Any, step: int, _t: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        steps.append(step)
        calls_at_step.append(calls)
        return kwargs

    handle = getattr(pipe, target.denoiser).register_forward_pre_hook(count)
    try:
        out = pipe(**target.call_kwargs(pipe, ctx), callback_on_step_end=on_step_end)
    finally:
        handle.remove()
    return out, steps, calls_at_step


def first_output(out: Any) -> torch.Tensor:
    return out.frames if hasattr(out, "frames") else out.images


def test_registry_lists_the_six_targets_in_order() -> None:
    assert list(TARGETS) == ["flux", "flux2_klein", "wan", "ltx2", "qwenimage", "qwenimage_edit"]
    assert all(name == target.name for name, target in TARGETS.items())
    assert all(target.text_encoding and target.checkpoint for target in TARGETS.values())


@pytest.mark.parametrize("name", list(TARGETS))
def test_installed_diffusers_has_every_class(name: str) -> None:
    assert missing_classes(TARGETS[name]) == []


@pytest.mark.parametrize("name", list(TARGETS))
def test_full_call_on_cpu(name: str, pipeline: Callable[[str], Any]) -> None:
    target = TARGETS[name]
    pipe = pipeline(name)
    out, steps, calls_at_step = run(pipe, target)

    # One callback per step (the plugin's step boundaries), each after the same number of denoiser calls.
    assert steps == list(range(CTX.steps))
    per_step = CALLS_PER_STEP[name]
    assert calls_at_step == [per_step * (i + 1) for i in range(CTX.steps)]

    # The real decode path ran: pixels (a video for the video models), not latents.
    result = first_output(out)
    assert isinstance(result, torch.Tensor)
    assert torch.isfinite(result).all()
    if name in VIDEO:
        # [batch, frames, rgb, height, width]
        assert result.ndim == 5 and result.shape[0] == 1 and result.shape[2] == 3
        assert result.shape[1] == target.call_kwargs(pipe, CTX)["num_frames"]
    else:
        assert result.ndim == 4 and result.shape[:2] == (1, 3)
    if name == "ltx2":
        assert isinstance(out.audio, torch.Tensor) and out.audio.shape[:2] == (1, 2)  # stereo waveform


def test_edit_call_gives_the_transformer_two_image_shapes(pipeline: Callable[[str], Any]) -> None:
    target = TARGETS["qwenimage_edit"]
    pipe = pipeline("qwenimage_edit")
    assert pipe.transformer.config.zero_cond_t
    seen: list[Any] = []
    handle = pipe.transformer.register_forward_pre_hook(
        lambda _m, _a, kwargs: seen.append(kwargs["img_shapes"]), with_kwargs=True
    )
    try:
        pipe(**target.call_kwargs(pipe, CTX))
    finally:
        handle.remove()
    # The generated image and the input image, for the one sample of the batch.
    assert all(len(shapes) == 1 and len(shapes[0]) == 2 for shapes in seen)


@pytest.mark.parametrize("name", list(TARGETS))
def test_checkpoint_round_trip(name: str, pipeline: Callable[[str], Any], tmp_path: Path) -> None:
    """A saved tiny pipeline loads through the checkpoint path, text encoders left out, and runs the same."""
    target = TARGETS[name]
    tiny = pipeline(name)
    tiny.save_pretrained(tmp_path, safe_serialization=True)

    loaded = build_pipeline(target, CTX.device, CTX.dtype, checkpoint=str(tmp_path))

    assert loaded.text_encoder is None and loaded.tokenizer is None
    expected = first_output(run(tiny, target)[0])
    assert torch.allclose(first_output(run(loaded, target)[0]), expected, atol=1e-5)


def test_tiny_build_casts_like_from_pretrained(tmp_path: Path) -> None:
    """In bfloat16 a tiny build keeps the same modules in float32 as a checkpoint loaded in bfloat16."""
    target = TARGETS["wan"]
    tiny = build_pipeline(target, CTX.device, torch.bfloat16)
    tiny.save_pretrained(tmp_path, safe_serialization=True)
    loaded = build_pipeline(target, CTX.device, torch.bfloat16, checkpoint=str(tmp_path))

    def dtypes(pipe: Any) -> dict[str, torch.dtype]:
        return {
            f"{component}.{name}": tensor.dtype
            for component, module in pipe.components.items()
            if isinstance(module, torch.nn.Module)
            for name, tensor in [*module.named_parameters(), *module.named_buffers()]
        }

    assert dtypes(tiny) == dtypes(loaded)
    assert tiny.transformer.condition_embedder.time_embedder.linear_1.weight.dtype == torch.float32
    assert tiny.transformer.blocks[0].attn1.to_q.weight.dtype == torch.bfloat16


def test_missing_class_is_unavailable_not_an_import_error() -> None:
    target = Target(
        name="future",
        pipeline_class="NoSuchPipelineYet",
        checkpoint="nobody/nothing",
        build_components=lambda: pytest.fail("must not build"),
        call_kwargs=lambda pipe, ctx: {},
        text_encoding="none",
        extra_classes=("AutoencoderKL", "NoSuchTransformer"),
    )
    assert missing_classes(target) == ["NoSuchPipelineYet", "NoSuchTransformer"]
    with pytest.raises(TargetUnavailable, match=re.escape(diffusers.__version__)) as err:
        build_pipeline(target, CTX.device, CTX.dtype)
    assert "NoSuchPipelineYet" in str(err.value) and "NoSuchTransformer" in str(err.value)


@pytest.mark.parametrize("checkpoint", ["nosync-tests/not-in-the-cache", "/nonexistent/nosync/checkpoint"])
def test_checkpoint_not_on_disk_is_unavailable(checkpoint: str) -> None:
    with pytest.raises(CheckpointError, match="local"):
        build_pipeline(TARGETS["flux"], CTX.device, CTX.dtype, checkpoint=checkpoint)
