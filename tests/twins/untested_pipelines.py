"""Pipeline classes of tests/twins/loop_pipeline.py's family that no tester names, as diffusers exports some: the
census checks them through the loop's tester (census.untested), or counts them with their reason."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import PIL.Image
import torch
from diffusers import DDPMScheduler, OnnxRuntimeModel, PNDMScheduler
from diffusers.utils import deprecate

from pytest_nosync.census.untested import Exported, deprecated_reason
from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class SyncingLoopPipeline(LoopPipeline):
    """The loop's components and call, reading the timestep on the host in every step."""

    def _iteration(self, latents: torch.Tensor, t: torch.Tensor, read_early: bool, fail: bool) -> torch.Tensor:
        latents = latents * float(t)  # twin: syncs per step
        return self.scheduler.step(self.transformer(latents), t, latents)


class CleanLoopPipeline(LoopPipeline):
    """A call of its own that takes fewer inputs than the loop's tester gives (they are left out), and an optional
    component that tester does not build."""

    def __init__(self, transformer: Denoiser, scheduler: Scheduler, refiner: Denoiser | None = None) -> None:
        super().__init__(transformer, scheduler)

    def __call__(self, latents: torch.Tensor, num_inference_steps: int = 3) -> torch.Tensor:  # type: ignore[override]
        return super().__call__(latents, num_inference_steps=num_inference_steps)


class NeedsInputPipeline(LoopPipeline):
    """Its call requires a mask, which the loop's tester does not give."""

    def __call__(self, latents: torch.Tensor, mask: torch.Tensor, num_inference_steps: int = 3) -> torch.Tensor:  # type: ignore[override]
        return super().__call__(latents * mask, num_inference_steps=num_inference_steps)


class DeprecatedLoopPipeline(LoopPipeline):
    """Deprecated as diffusers deprecates a pipeline: its `__init__` always warns."""

    def __init__(self, transformer: Denoiser, scheduler: Scheduler) -> None:
        deprecate("DeprecatedLoopPipeline", "1.0.0", "use LoopPipeline")
        super().__init__(transformer, scheduler)


FAMILY = "loop"
UNTESTED = (SyncingLoopPipeline, CleanLoopPipeline, NeedsInputPipeline, DeprecatedLoopPipeline)


def exported() -> list[Exported]:
    """The family as diffusers would list its exports (census.untested.exported_pipelines)."""
    return [Exported(cls.__name__, FAMILY, cls, deprecated=deprecated_reason(cls, FAMILY))
            for cls in (LoopPipeline, *UNTESTED)]  # fmt: skip


def line_of(marker: str, pipeline: type) -> int:
    lines, start = inspect.getsourcelines(pipeline)
    return start + next(i for i, line in enumerate(lines) if f"# twin: {marker}" in line)


class PickyLoopPipeline(LoopPipeline):
    """Raises with a share of the steps (an img2img tester's inputs): built through a sibling whose inputs it takes."""

    def __call__(self, latents: torch.Tensor, num_inference_steps: int = 3, strength: float = 1.0) -> torch.Tensor:  # type: ignore[override]
        if strength < 1.0:
            raise ValueError("this pipeline runs every step")
        return super().__call__(latents, num_inference_steps=num_inference_steps)


class MaskedLoopPipeline(LoopPipeline):
    """Needs an input its `__call__` marks optional and no sibling gives, as an inpainting class needs its mask."""

    def __call__(
        self, latents: torch.Tensor, num_inference_steps: int = 3, mask: torch.Tensor | None = None
    ) -> torch.Tensor:  # type: ignore[override]
        if mask is None:
            raise ValueError("a mask is required")  # twin: raises without a mask
        return super().__call__(latents * mask, num_inference_steps=num_inference_steps)


class ShrinkingLoopPipeline(LoopPipeline):
    """Raises inside torch, as Helios' pyramid does with a sibling's frames too small for its stages."""

    def __call__(self, latents: torch.Tensor, num_inference_steps: int = 3) -> torch.Tensor:  # type: ignore[override]
        torch.nn.functional.interpolate(latents[None], size=(0,))  # twin: raises inside torch
        return super().__call__(latents, num_inference_steps=num_inference_steps)


class OtherDenoiser(Denoiser):
    """A model class of its own, which the loop's tester does not build."""


class OtherModelPipeline(LoopPipeline):
    """Names a model class the sibling's transformer is not."""

    def __init__(self, transformer: OtherDenoiser, scheduler: Scheduler) -> None:
        super().__init__(transformer, scheduler)


class InpaintLoopPipeline(LoopPipeline):
    """Marks `mask_image` optional but raises without it, as an inpainting class does (no sibling gives a mask: the
    census generates one), and reads the timestep on the host in every step."""

    def __call__(  # type: ignore[override]
        self, latents: torch.Tensor, num_inference_steps: int = 3, mask_image: PIL.Image.Image | None = None
    ) -> torch.Tensor:
        if mask_image is None:
            raise ValueError("Input is in incorrect format")  # twin: raises without its mask
        return super().__call__(latents, num_inference_steps=num_inference_steps)

    def _iteration(self, latents: torch.Tensor, t: torch.Tensor, read_early: bool, fail: bool) -> torch.Tensor:
        latents = latents * float(t)  # twin: syncs per step, given a generated mask
        return self.scheduler.step(self.transformer(latents), t, latents)


class CleanInpaintLoopPipeline(LoopPipeline):
    """The same need for a mask, with a loop that stays on the device."""

    def __call__(  # type: ignore[override]
        self, latents: torch.Tensor, num_inference_steps: int = 3, mask_image: PIL.Image.Image | None = None
    ) -> torch.Tensor:
        if mask_image is None:
            raise ValueError("Input is in incorrect format")
        return super().__call__(latents, num_inference_steps=num_inference_steps)


class StartingLoopPipeline(LoopPipeline):
    """Needs a mask it marks optional, and may start from an optional image (its other path: image to image, as
    Helios's pyramid takes a video). Its own path, from noise, stays on the device; the other reads the image's mean
    on the host in every step. The census generates the mask and checks the call's own path."""

    def __call__(  # type: ignore[override]
        self,
        latents: torch.Tensor,
        num_inference_steps: int = 3,
        mask_image: PIL.Image.Image | None = None,
        image: PIL.Image.Image | torch.Tensor | None = None,
    ) -> torch.Tensor:
        if mask_image is None:
            raise ValueError("Input is in incorrect format")
        self.starting = image is not None
        return super().__call__(latents, num_inference_steps=num_inference_steps)

    def _iteration(self, latents: torch.Tensor, t: torch.Tensor, read_early: bool, fail: bool) -> torch.Tensor:
        if self.starting:
            latents = latents * float(latents.mean())  # twin: syncs per step, started from an image
        return self.scheduler.step(self.transformer(latents), t, latents)


class DerivedDenoiser(Denoiser):
    """A model diffusers would derive from the pipeline's denoiser, as a ControlNet from its UNet (`from_unet`)."""

    @classmethod
    def from_transformer(cls, transformer: Denoiser) -> DerivedDenoiser:
        return cls(width=transformer.config.width)


class MadeComponentsLoopPipeline(LoopPipeline):
    """Requires three components the loop's tester does not build: a second scheduler of a class it names, a model
    derived from its denoiser and a second expert of the denoiser's class (the census makes them), and reads the
    timestep on the host in every step."""

    def __init__(
        self,
        transformer: Denoiser,
        scheduler: Scheduler,
        low_res_scheduler: DDPMScheduler,
        controlnet: DerivedDenoiser,
        transformer_2: Denoiser,
    ) -> None:
        super().__init__(transformer, scheduler)
        self.register_modules(low_res_scheduler=low_res_scheduler, controlnet=controlnet, transformer_2=transformer_2)

    def _iteration(self, latents: torch.Tensor, t: torch.Tensor, read_early: bool, fail: bool) -> torch.Tensor:
        latents = self.controlnet(self.transformer_2(latents)) * float(t)  # twin: syncs per step, with made components
        return self.scheduler.step(self.transformer(latents), t, latents)


class CleanMadeComponentsLoopPipeline(MadeComponentsLoopPipeline):
    """The same components, a loop that stays on the device."""

    def _iteration(self, latents: torch.Tensor, t: torch.Tensor, read_early: bool, fail: bool) -> torch.Tensor:
        latents = self.controlnet(self.transformer_2(latents)) * t
        return self.scheduler.step(self.transformer(latents), t, latents)


class ExampleLoopPipeline(LoopPipeline):
    """Its call requires an example image, which the loop's tester does not give (the census generates one), and
    reads the timestep on the host in every step."""

    def __call__(  # type: ignore[override]
        self, latents: torch.Tensor, example_image: PIL.Image.Image, num_inference_steps: int = 3
    ) -> torch.Tensor:
        return super().__call__(latents, num_inference_steps=num_inference_steps, read_early=True)  # twin: example


class TwoSchedulersPipeline(LoopPipeline):
    """Names its scheduler's class (PNDM) and a second scheduler's (DDPM), as diffusers' SD upscaler does."""

    def __init__(self, transformer: Denoiser, scheduler: PNDMScheduler, low_res_scheduler: DDPMScheduler) -> None:
        super().__init__(transformer, scheduler)  # type: ignore[arg-type]
        self.register_modules(low_res_scheduler=low_res_scheduler)


class OnnxLoopPipeline(LoopPipeline):
    """Requires an ONNX Runtime model (as diffusers' ONNX Stable Diffusion classes): not built, counted with why."""

    def __init__(self, transformer: OnnxRuntimeModel, scheduler: Scheduler) -> None:
        super().__init__(transformer, scheduler)  # type: ignore[arg-type]


class OrphanSyncingPipeline(SyncingLoopPipeline):
    """A family no tester of the run tests, of a model class no run tester builds: a stand-in tester builds it, and
    its loop reads the timestep on the host (SyncingLoopPipeline's line)."""

    def __init__(self, transformer: OtherDenoiser, scheduler: Scheduler) -> None:
        super().__init__(transformer, scheduler)


class OrphanCleanPipeline(LoopPipeline):
    """The clean twin of that family: checked through the other's stand-in tester (its family's), no sync."""

    def __init__(self, transformer: OtherDenoiser, scheduler: Scheduler) -> None:
        super().__init__(transformer, scheduler)


class OrphanStandIn:
    """A stand-in tester of the orphan family, as census.standin_testers writes one."""

    pipeline_class = OrphanSyncingPipeline

    def get_dummy_components(self) -> dict[str, object]:
        torch.manual_seed(0)
        return {"transformer": OtherDenoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device: object, seed: int = 0) -> dict[str, object]:
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2}


class EditLoopPipeline(OrphanCleanPipeline):
    """DiffEdit's shape: its call takes the mask its `generate_mask` made and the latents its `invert` made, one per
    step, and raises without them, or with another count of steps than they were inverted over."""

    def generate_mask(self, image: torch.Tensor) -> torch.Tensor:
        return (image > 0).float()

    def invert(self, image: torch.Tensor, num_inference_steps: int = 2) -> SimpleNamespace:
        return SimpleNamespace(latents=image.expand(num_inference_steps, *image.shape).clone())  # as its output's

    def __call__(  # type: ignore[override]
        self, mask_image: torch.Tensor | None = None, image_latents: torch.Tensor | None = None, num_inference_steps=2
    ) -> torch.Tensor:
        if image_latents is None or mask_image is None:
            raise ValueError("`image_latents` input cannot be undefined. Use `invert()` to compute it.")
        if len(image_latents) != num_inference_steps:
            raise ValueError(f"`image_latents` must have latent images from {num_inference_steps} timesteps")
        return super().__call__(image_latents[0] * mask_image, num_inference_steps=num_inference_steps)


class EditStandIn:
    """A stand-in tester of the edit class, as census.standin_testers writes DiffEdit's: the inputs of the mask and
    the inversion its call takes, made by the pipeline's own methods before it."""

    pipeline_class = EditLoopPipeline
    steps = 4  # each check's warm-up and judged steps: the inverted latents fix them

    def get_dummy_components(self) -> dict[str, object]:
        torch.manual_seed(0)
        return {"transformer": OtherDenoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device: object, seed: int = 0) -> dict[str, object]:
        return {"num_inference_steps": self.steps}

    def get_dummy_mask_inputs(self, device: object, seed: int = 0) -> dict[str, object]:
        return {"image": torch.randn(2, 8)}

    def get_dummy_inversion_inputs(self, device: object, seed: int = 0) -> dict[str, object]:
        return {"image": torch.randn(2, 8), "num_inference_steps": self.steps}
