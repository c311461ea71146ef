"""Named regions on a pipeline, without editing its source; all removed again on detach.

transformer_forward (forward hooks on the denoiser; its first call in a step opens the step),
scheduler_step, vae_decode, vae_encode and encode_prompt (method wrappers on the classes, so a scheduler
that the pipeline deep-copies, like LTX2's audio scheduler, stays correct).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from .findings import DENOISER_REGION
from .patching import Patches

if TYPE_CHECKING:
    from .guard import Guard

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
        self._patches = Patches()

    def attach(self) -> None:
        denoiser = getattr(self.pipeline, self.denoiser, None)
        if denoiser is not None and hasattr(denoiser, "register_forward_pre_hook"):
            guard = self.guard

            def pre_hook(module: Any, args: Any) -> None:
                guard.begin_step()
                guard.enter_region(DENOISER_REGION)

            def post_hook(module: Any, args: Any, output: Any) -> None:
                guard.exit_region(DENOISER_REGION)

            pre = denoiser.register_forward_pre_hook(pre_hook)
            post = denoiser.register_forward_hook(post_hook, always_call=True)
            self._patches.push(pre.remove)
            self._patches.push(post.remove)
        for attr, method, region in METHOD_REGIONS:
            owner = self.pipeline if attr is None else getattr(self.pipeline, attr, None)
            if owner is None or not callable(getattr(owner, method, None)):
                continue
            cls = type(owner)
            self._patches.setattr(cls, method, _in_region(getattr(cls, method), self.guard, region))

    def detach(self) -> None:
        self._patches.undo()


def _in_region(method: Any, guard: Guard, region: str) -> Any:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        guard.enter_region(region)
        try:
            return method(*args, **kwargs)
        finally:
            guard.exit_region(region)

    return wrapper
