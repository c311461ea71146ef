"""Inputs an untested class's `__call__` takes and its sibling tester does not give, made from what the sibling
gives, by the parameter's name and annotation, never per pipeline class (census.untested tries them only where the
sibling's inputs alone make the plain call raise: a variant that treats an optional input as required, or one
requiring an input the sibling does not give).

`generated(pipeline_class, given, pipe)` makes, for each such parameter (optional or required) it knows by name
whose annotation allows what it would give: an image (`image`, `control_image`, `conditioning_image`: the sibling's
image, else a seeded one of its height and width), a mask of that image's kind (`mask_image`, `control_mask`: of the
sibling's height and width, else its image's size; its right half masked), a video and its mask (`video`,
`control_video`, `mask_video`: a tensor of its frames, at least one chunk's where the call encodes its video by
chunks, height and width, or its frames as PIL images where the annotation takes a list of them; a class taking an
image or a video to start from gets one of them), a reference waveform (`audio`: a tensor of its duration at the
VAE's sampling rate and channels) and a span of it to inpaint (`mask_start_seconds`, `mask_end_seconds`: its middle
half), and the kind of control a union ControlNet applies to its control image (`control_mode`: the first, 0); an
edit's `source_prompt` (the sibling's prompt), the `token_indices` to attend to (the prompt's first token) and an
`example_image` (as an image), two step indices counted back from the sibling's `num_inference_steps` (`t0`, `t1`:
its last two, where their defaults assume 50 steps), and a pyramid's steps by stage
(`pyramid_num_inference_steps_list`: STAGE_STEPS for each stage of its scheduler). Required inputs too, where a
maker knows them (a `__call__` requiring a mask), and `latents` only where required (a decoding pipeline's: of the
sibling's frames and size in the pipeline's latent space). All seeded: the same inputs every call and run.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import PIL.Image
import torch

SEED = 0
DEFAULT_SIZE = 32  # pixels, where the sibling gives no image, height or width
IMAGES = ("image", "control_image", "conditioning_image", "example_image")
MASKS = ("mask_image", "control_mask")
VIDEOS = ("video", "control_video")
VIDEO_MASKS = ("mask_video",)
AUDIO = ("audio",)
SPANS = {"mask_start_seconds": 0.25, "mask_end_seconds": 0.75}  # a share of the sibling's duration
STEP_INDICES = {"t0": 2, "t1": 1}  # counted back from the sibling's num_inference_steps
# Each stage's steps in a pyramid's step list (a call taking it takes no num_inference_steps: its steps stay as
# made): the most a check needs, a growth check's warm-up over a scheduler's longest history (4, suite.checks'
# HISTORY_STEPS) and 2 judged, in every stage, as each stage restarts its scheduler
STAGE_STEPS = 6
COMPRESSION = ("spatial_compression_ratio", "temporal_compression_ratio")  # a video latent space's, as VAEs name them
# What a call may start from: optional, it turns the call's own path (text to video) into another (video to video)
STARTS = ("image", "video")


def generated(pipeline_class: type, given: Mapping[str, Any], pipe: Any) -> dict[str, Any]:
    """The inputs of `pipeline_class.__call__` that `given` (the sibling's inputs it takes) lacks and that can be
    made from them (see the module doc), by name; `pipe` (the class built) gives an audio VAE's rate and channels."""
    try:
        parameters = inspect.signature(pipeline_class.__call__).parameters
    except (TypeError, ValueError):
        return {}
    made: dict[str, Any] = {}
    for name, parameter in parameters.items():
        if name in given or name in _alternatives(given, parameters):
            continue
        annotation = str(parameter.annotation)
        required = parameter.default is inspect.Parameter.empty
        maker = _MAKERS.get(name) or (_REQUIRED_MAKERS.get(name) if required else None) or _nothing
        value = maker(annotation, given, pipe)
        if value is not None:
            made[name] = value
    return made


def fewest_first(pipeline_class: type, made: Sequence[str]) -> list[tuple[str, ...]]:
    """The sets of generated inputs to try, in turn: without an image or a video to start from that `__call__` marks
    optional (the call's own path: Helios's pyramid generates text to video; given a video, video to video), then
    all of them (an image-to-image class that needs its optional image); none where nothing was generated."""
    if not made:
        return []
    try:
        parameters = inspect.signature(pipeline_class.__call__).parameters
    except (TypeError, ValueError):
        return [tuple(made)]
    optional = {n for n in STARTS if n in parameters and parameters[n].default is not inspect.Parameter.empty}
    fewer = tuple(n for n in made if n not in optional)
    return [fewer, tuple(made)] if fewer and len(fewer) < len(made) else [tuple(made)]


def _alternatives(given: Mapping[str, Any], parameters: Mapping[str, inspect.Parameter]) -> set[str]:
    """The names left out as the alternative of another (a class taking an image or a video to start from gets
    one): the image where the sibling gives a frame count or a video, the video where it does not."""
    if not set(STARTS) <= set(parameters):
        return set()
    return {"image"} if "num_frames" in given or "video" in given else {"video"}


def _nothing(annotation: str, given: Mapping[str, Any], pipe: Any) -> None:
    return None


def _reference(given: Mapping[str, Any]) -> Any:
    """The sibling's image (the first of a list), or None."""
    image = given.get("image")
    return image[0] if isinstance(image, list) and image else image


def _size(given: Mapping[str, Any]) -> tuple[int, int]:
    """(height, width): the sibling's height and width (the size the pipeline resizes its images to, and a tensor
    mask is taken as it is), else its image's."""
    if given.get("height") and given.get("width"):
        return int(given["height"]), int(given["width"])
    image = _reference(given)
    if isinstance(image, PIL.Image.Image):
        return image.height, image.width
    if isinstance(image, torch.Tensor) and image.ndim >= 2:
        return int(image.shape[-2]), int(image.shape[-1])
    return DEFAULT_SIZE, DEFAULT_SIZE


def _takes(annotation: str, *kinds: str) -> bool:
    """Whether an annotation names one of these kinds (an unannotated parameter takes any)."""
    return annotation == str(inspect.Parameter.empty) or any(kind in annotation for kind in kinds)


def _image(annotation: str, given: Mapping[str, Any], pipe: Any) -> Any:
    """The sibling's image where it gives one, else a seeded PIL image of its size."""
    if not _takes(annotation, "Image", "Tensor"):
        return None
    image = _reference(given)
    if image is not None:
        return image
    height, width = _size(given)
    pixels = torch.randint(0, 256, (height, width, 3), generator=torch.Generator().manual_seed(SEED))
    return PIL.Image.fromarray(pixels.to(torch.uint8).numpy())


def _mask(annotation: str, given: Mapping[str, Any], pipe: Any) -> Any:
    """A mask of the sibling image's size, its right half masked: a tensor (batch, 1, H, W) in [0, 1] where that
    image is a tensor, else a PIL image."""
    height, width = _size(given)
    image = _reference(given)
    if isinstance(image, torch.Tensor) and _takes(annotation, "Tensor"):
        mask = torch.zeros(image.shape[0] if image.ndim == 4 else 1, 1, height, width)
        mask[..., width // 2 :] = 1.0
        return mask
    if not _takes(annotation, "Image"):
        return None
    pixels = np.zeros((height, width), dtype=np.uint8)
    pixels[:, width // 2 :] = 255
    return PIL.Image.fromarray(pixels, mode="L")


def _video_shape(given: Mapping[str, Any], pipe: Any, channels: int) -> tuple[int, ...]:
    """(1, channels, frames, H, W): the sibling's frames, at least a chunk's (_chunk_frames), and size."""
    height, width = _size(given)
    return (1, channels, max(int(given.get("num_frames") or 1), _chunk_frames(given, pipe)), height, width)


def _chunk_frames(given: Mapping[str, Any], pipe: Any) -> int:
    """The frames of one chunk where the call encodes its video chunk by chunk: `num_latent_frames_per_chunk` (the
    sibling's, else its default) latent frames in the pipeline's `vae_scale_factor_temporal` (Helios's pyramid
    refuses a video shorter than one chunk); else 1."""
    try:
        parameters = inspect.signature(type(pipe).__call__).parameters
    except (AttributeError, TypeError, ValueError):  # no pipeline, or not a callable one
        return 1
    parameter = parameters.get("num_latent_frames_per_chunk")
    chunk = given.get("num_latent_frames_per_chunk", getattr(parameter, "default", None))
    factor = getattr(pipe, "vae_scale_factor_temporal", None)
    if not isinstance(chunk, int) or not isinstance(factor, int):
        return 1
    return (chunk - 1) * factor + 1


def _video(annotation: str, given: Mapping[str, Any], pipe: Any) -> Any:
    """A seeded video tensor (1, 3, frames, H, W) in [0, 1] (_video_shape); its frames as PIL images where the
    annotation takes a list of images (of any kind: LTX-2's latent upsampler takes its frames), or a list of PIL
    images among other kinds: frames are read alike by every pipeline, a 5-D tensor not (diffusers' VideoProcessor
    reads it as (batch, frames, channels, H, W), EasyAnimate, annotated a tensor only, as this one)."""
    frames = torch.rand(_video_shape(given, pipe, 3), generator=torch.Generator().manual_seed(SEED))
    as_frames = annotation.startswith("list[") or "list[PIL.Image" in annotation  # a list's tensor: one frame
    if _takes(annotation, "Tensor") and not as_frames:
        return frames
    if not _takes(annotation, "Image"):
        return None
    pixels = (frames[0].permute(1, 2, 3, 0) * 255).to(torch.uint8).numpy()  # (frames, H, W, 3)
    return [PIL.Image.fromarray(frame) for frame in pixels]


def _video_mask(annotation: str, given: Mapping[str, Any], pipe: Any) -> torch.Tensor | None:
    """A video mask (1, 1, frames, H, W), its right half masked."""
    if not _takes(annotation, "Tensor"):
        return None
    mask = torch.zeros(_video_shape(given, pipe, 1))
    mask[..., mask.shape[-1] // 2 :] = 1.0
    return mask


def _audio(annotation: str, given: Mapping[str, Any], pipe: Any) -> torch.Tensor | None:
    """A seeded waveform (1, channels, samples) of the sibling's duration at the pipeline VAE's sampling rate, where
    the annotation takes a tensor and that VAE names its rate and channels."""
    config = getattr(getattr(pipe, "vae", None), "config", None)
    rate, channels = getattr(config, "sampling_rate", None), getattr(config, "audio_channels", None)
    if not _takes(annotation, "Tensor") or not rate or not channels:
        return None
    samples = max(1, int(float(given.get("duration") or 1.0) * rate))
    return 0.1 * torch.randn(1, channels, samples, generator=torch.Generator().manual_seed(SEED))


def _latents(annotation: str, given: Mapping[str, Any], pipe: Any) -> torch.Tensor | None:
    """Seeded video latents (1, channels, frames, H, W) of the sibling's frames and size compressed as the pipeline's
    latent space is (channels and compression read from its VAE, else the first component naming them): what a
    decoding pipeline requires."""
    components = getattr(pipe, "components", None) or {}
    owners = [components.get("vae"), *components.values()]
    space = next((c for c in owners if _config_of(c, "latent_channels")), None)
    if space is None or not _takes(annotation, "Tensor"):
        return None
    channels = _config_of(space, "latent_channels")
    spatial, temporal = (getattr(space, key, None) or _config_of(space, key) or 1 for key in COMPRESSION)
    # a call that takes no frame count (a decoder of latents): three latent frames, what a 3x3x3 kernel needs
    frames, (height, width) = int(given.get("num_frames") or 2 * temporal + 1), _size(given)
    shape = (1, channels, (frames - 1) // temporal + 1, height // spatial, width // spatial)
    return torch.randn(shape, generator=torch.Generator().manual_seed(SEED))


def _config_of(component: Any, key: str) -> Any:
    config = getattr(component, "config", None)
    return config.get(key) if isinstance(config, Mapping) else None


def _control_mode(annotation: str, given: Mapping[str, Any], pipe: Any) -> list[int] | None:
    """The first control type, one per control image (a union ControlNet's `control_mode`)."""
    return [0] if _takes(annotation, "int") else None


def _source_prompt(annotation: str, given: Mapping[str, Any], pipe: Any) -> Any:
    """The prompt an edit starts from (`source_prompt`): the sibling's own prompt."""
    prompt = given.get("prompt")
    return prompt if prompt is not None and _takes(annotation, "str") else None


def _token_indices(annotation: str, given: Mapping[str, Any], pipe: Any) -> list[int] | None:
    """The prompt tokens to attend to (`token_indices`): the first after the start token."""
    return [1] if given.get("prompt") is not None and _takes(annotation, "int") else None


def _pyramid_steps(annotation: str, given: Mapping[str, Any], pipe: Any) -> list[int] | None:
    """Each stage's steps (`pyramid_num_inference_steps_list`): STAGE_STEPS for each stage of the pipeline's
    scheduler (its `stages`); the default list names the released scheduler's three, which a sibling's scheduler of
    fewer stages cannot take."""
    stages = _config_of(getattr(pipe, "scheduler", None), "stages")
    if not isinstance(stages, int) or stages < 1 or not _takes(annotation, "list"):
        return None
    return [STAGE_STEPS] * stages


def knows(name: str) -> bool:
    """Whether `generated` has a maker for an input of this name (a required input it makes is no lack)."""
    return name in _MAKERS or name in _REQUIRED_MAKERS


def _span(share: float) -> Callable[[str, Mapping[str, Any], Any], float | None]:
    def make(annotation: str, given: Mapping[str, Any], pipe: Any) -> float | None:
        duration = given.get("duration")
        return round(share * float(duration), 3) if duration and _takes(annotation, "float") else None

    return make


def _step_index(back: int) -> Callable[[str, Mapping[str, Any], Any], int | None]:
    def make(annotation: str, given: Mapping[str, Any], pipe: Any) -> int | None:
        steps = given.get("num_inference_steps")
        return steps - back if isinstance(steps, int) and steps >= 2 and _takes(annotation, "int") else None

    return make


_MAKERS: dict[str, Callable[[str, Mapping[str, Any], Any], Any]] = {
    **dict.fromkeys(IMAGES, _image),
    **dict.fromkeys(MASKS, _mask),
    **dict.fromkeys(VIDEOS, _video),
    **dict.fromkeys(VIDEO_MASKS, _video_mask),
    **dict.fromkeys(AUDIO, _audio),
    **{name: _span(share) for name, share in SPANS.items()},
    "control_mode": _control_mode,
    "source_prompt": _source_prompt,
    "token_indices": _token_indices,
    **{name: _step_index(back) for name, back in STEP_INDICES.items()},
    "pyramid_num_inference_steps_list": _pyramid_steps,
}
# Made only where `__call__` requires them: most pipelines take latents to start from, optionally.
_REQUIRED_MAKERS: dict[str, Callable[[str, Mapping[str, Any], Any], Any]] = {"latents": _latents}
