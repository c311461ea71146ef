"""What the suite needs to know about one pipeline: how to build it small, and how to call it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the plugin imports this module in every pytest run, checking or not
    import torch


@dataclass(frozen=True)
class CallContext:
    """Where and how a target is called: the builder of the call kwargs reads only this."""

    device: torch.device
    dtype: torch.dtype
    steps: int = 2
    seed: int = 0


@dataclass(frozen=True)
class Target:
    """A pipeline the suite knows how to build and drive.

    `build_components` returns the tiny, seeded, random-weight components (fp32, on the CPU) that
    `pipeline_class(**components)` accepts. `call_kwargs(pipe, ctx)` returns the kwargs of a realistic
    call (CFG on where the real pipeline uses it); it reads sizes from `pipe`'s configs, so the same
    function drives the tiny pipeline and a real checkpoint. Neither knows anything of detection.
    """

    name: str
    pipeline_class: str
    checkpoint: str
    build_components: Callable[[], dict[str, Any]]
    call_kwargs: Callable[[Any, CallContext], dict[str, Any]]
    text_encoding: str
    denoiser: str = "transformer"
    description: str = ""
    extra_classes: tuple[str, ...] = field(default_factory=tuple)
    # No denoising loop (a latent upsampler): each call is a step, the loop its caller's (suite.checks.run_check)
    steps_are_calls: bool = False

    def kwargs_by_steps(self, pipe: Any, ctx: CallContext) -> Callable[[int], dict[str, Any]]:
        """`call_kwargs` as the checks take it: steps → fresh kwargs of a call in `ctx`'s place (a generator is
        consumed by a call, so each call needs new ones)."""
        return lambda steps: self.call_kwargs(pipe, replace(ctx, steps=steps))
