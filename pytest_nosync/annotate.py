"""Named regions and step boundaries on a pipeline, without editing its source; all removed again on detach.

Regions: transformer_forward (forward hooks on the denoiser), scheduler_step, vae_decode, vae_encode and
encode_prompt (method wrappers on the classes, so a scheduler that the pipeline deep-copies, like LTX2's audio
scheduler, stays correct).

Steps, without per-pipeline code (diffusers pipelines share the shape of their denoising loop):
  - the loop begins where the pipeline enters its progress bar (`with self.progress_bar(total=...)`, or iterates
    `self.progress_bar(timesteps)`), right before the first iteration; a step opens at the denoiser's first call in
    it, and what the iteration did before that call is the step's, as in every later iteration: a loop whose
    iterations never call the denoiser (Stable unCLIP's prior loop before its UNet's) has no steps, and what it did
    is before the steps. Without a denoiser to hook (a guard told another name), step 0 opens where the loop begins
    and each iteration of an iterated bar is a step;
  - a step closes when the pipeline's own scheduler returns from `step()` (the latents are updated), or at the
    pipeline's `callback_on_step_end` when the caller passes the guard's; iterating the progress bar closes each
    iteration's step at the next one; in a loop whose own scheduler never steps, updating the bar closes it (the
    calibration counts such a loop's steps by its bar too);
  - the loop ends when the progress bar does: what follows (decoding) is after the steps.
A Modular Diffusers pipeline has no loop of its own: each of its loop blocks (`loop_blocks`) is one, its progress bar
the loop's, its components' denoiser and scheduler the pipeline's.
`LoopWatch` finds the pipeline itself: the first pipeline whose loop begins inside the guard (a marked test body
that builds or moves its pipeline before calling it).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from typing import Any, Protocol

from .findings import DENOISER_REGION
from .patching import Patches, WrappedBar

# diffusers' names of a pipeline's denoisers, commonest first
DENOISER_NAMES = (
    "transformer",
    "unet",
    "prior",
    "decoder",
    "transformer_2",
    "prior_prior",
    "decoder_unet",
    "super_res_first",  # unCLIP's super-resolution stage: the first UNet in every step but the last
    "super_res_last",
)


class Guard(Protocol):
    """What the annotations call on the guard that owns them (guard.Guard): its steps, regions and denoising loops.
    A protocol, so that this module needs nothing of detection/guard.py, which imports it."""

    pipeline: Any

    def adopt(self, pipeline: Any) -> bool: ...
    def begin_step(self) -> None: ...
    def close_step(self) -> None: ...
    def scheduler_stepped(self) -> None: ...
    def progress_updated(self) -> None: ...
    def enter_region(self, name: str) -> None: ...
    def exit_region(self, name: str) -> None: ...
    def loop_begins(self) -> None: ...
    def iteration_begins(self) -> None: ...
    def loop_ends(self) -> None: ...


# (attribute of the pipeline, method name, region name)
METHOD_REGIONS = (
    ("scheduler", "step", "scheduler_step"),
    ("vae", "decode", "vae_decode"),
    ("vae", "encode", "vae_encode"),
    (None, "encode_prompt", "encode_prompt"),
)


class PipelineAnnotations:
    def __init__(self, pipeline: Any, guard: Guard, denoiser: str = "transformer") -> None:
        self.pipeline = pipeline
        self.guard = guard
        self.denoiser = denoiser
        self.hooked = False  # whether a denoiser was found to hook: its calls open the steps
        self._patches = Patches()

    def attach(self) -> None:
        guard = self.guard

        def pre_hook(module: Any, args: Any) -> None:
            guard.begin_step()
            guard.enter_region(DENOISER_REGION)

        def post_hook(module: Any, args: Any, output: Any) -> None:
            guard.exit_region(DENOISER_REGION)

        for name in self.denoiser.split(","):  # several: steps that run one or the other (Wan 2.2's two experts)
            denoiser = getattr(self.pipeline, name.strip(), None)
            if denoiser is not None and hasattr(denoiser, "register_forward_pre_hook"):
                pre = denoiser.register_forward_pre_hook(pre_hook)
                post = denoiser.register_forward_hook(post_hook, always_call=True)
                self._patches.push(pre.remove)
                self._patches.push(post.remove)
                self.hooked = True
        for attr, method, region in METHOD_REGIONS:
            owner = self.pipeline if attr is None else getattr(self.pipeline, attr, None)
            if owner is None or not callable(getattr(owner, method, None)):
                continue
            cls = type(owner)
            ends_step = (attr, method) == ("scheduler", "step")
            wrapped = _in_region(getattr(cls, method), self.guard, region, self.pipeline if ends_step else None)
            self._patches.setattr(cls, method, wrapped)
        if callable(getattr(type(self.pipeline), "progress_bar", None)):
            cls = type(self.pipeline)
            self._patches.setattr(cls, "progress_bar", _loop_anchored(cls.progress_bar, self.guard, self.pipeline))
        loops: dict[type, list[Any]] = {}  # a modular pipeline's loop blocks: each one's progress bar is its loop
        for block in loop_blocks(self.pipeline):
            loops.setdefault(type(block), []).append(block)
        for cls, blocks in loops.items():
            if callable(getattr(cls, "progress_bar", None)):
                self._patches.setattr(cls, "progress_bar", _loop_anchored(cls.progress_bar, self.guard, *blocks))

    def detach(self) -> None:
        self._patches.undo()


class LoopWatch:
    """Until a pipeline is attached, the first diffusers pipeline whose loop begins inside the guard is attached to
    it (diffusers' pipeline base class is patched only if diffusers is already imported: a guard imports nothing)."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self._patches = Patches()

    def attach(self) -> None:
        utils = sys.modules.get("diffusers.pipelines.pipeline_utils")
        base = getattr(utils, "DiffusionPipeline", None)
        if base is None or not callable(getattr(base, "progress_bar", None)):
            return
        original = base.progress_bar
        guard = self.guard

        @functools.wraps(original)
        def progress_bar(pipeline: Any, *args: Any, **kwargs: Any) -> Any:
            bar = original(pipeline, *args, **kwargs)
            if guard.pipeline is None and guard.adopt(pipeline):
                return _LoopBar(bar, guard)  # its own progress bar anchors later loops (PipelineAnnotations)
            return bar

        self._patches.setattr(base, "progress_bar", progress_bar)

    def detach(self) -> None:
        self._patches.undo()


def _in_region(method: Any, guard: Guard, region: str, ends_step_of: Any = None) -> Any:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        guard.enter_region(region)
        try:
            result = method(*args, **kwargs)
        finally:
            guard.exit_region(region)
        owner = getattr(ends_step_of, "scheduler", None)
        if owner is not None and args and args[0] is owner:  # the pipeline's own scheduler, not a copy of it
            guard.scheduler_stepped()
        return result

    return wrapper


def _loop_anchored(method: Any, guard: Guard, *owners: Any) -> Any:
    @functools.wraps(method)
    def progress_bar(self: Any, *args: Any, **kwargs: Any) -> Any:
        bar = method(self, *args, **kwargs)
        return _LoopBar(bar, guard) if any(self is owner for owner in owners) else bar

    return progress_bar


def loop_blocks(pipeline: Any) -> list[Any]:
    """The loop blocks of a Modular Diffusers pipeline (its LoopSequentialPipelineBlocks, nested ones included: each
    has a `loop_step`); none for any other pipeline."""
    found, todo = [], [getattr(pipeline, "_blocks", None)]  # `blocks` would be a copy
    while todo:
        block = todo.pop()
        if block is None:
            continue
        if callable(getattr(block, "loop_step", None)):
            found.append(block)
        todo.extend((getattr(block, "sub_blocks", None) or {}).values())
    return found


class _LoopBar(WrappedBar):
    """The pipeline's progress bar, telling the guard where its denoising loop begins and ends."""

    def __init__(self, bar: Any, guard: Guard) -> None:
        super().__init__(bar)
        self._guard = guard

    def __enter__(self) -> _LoopBar:
        super().__enter__()
        self._guard.loop_begins()
        return self

    def __exit__(self, *exc: Any) -> Any:
        try:
            return super().__exit__(*exc)
        finally:
            if exc[0] is None:  # a raise leaves its step open: the guard records it there (Guard.absorb)
                self._guard.loop_ends()

    def update(self, n: int = 1) -> Any:
        try:
            return self._bar.update(n)
        finally:
            self._guard.progress_updated()

    def __iter__(self) -> Iterator[Any]:
        self._guard.loop_begins()
        try:
            for item in self._bar:
                self._guard.iteration_begins()
                yield item
                self._guard.close_step()
        finally:
            self._guard.loop_ends()
