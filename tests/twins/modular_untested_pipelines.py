"""ModularPipeline classes of tests/twins/modular_loop.py's family that no modular config names, as diffusers exports
some (Wan 2.2, Helios pyramid distilled): each names its default blocks, and the census builds it with them from the
loop config's stand-in (census.modular_untested), or counts it with its reason."""

from __future__ import annotations

import inspect

import torch
from diffusers.modular_pipelines import ModularPipeline

from pytest_nosync.census.untested import Exported
from tests.twins import modular_loop as base
from tests.twins.loop_pipeline import Denoiser, LoopPipeline


class LoopModularPipeline(ModularPipeline):
    """The loop config's own class (the one its `pipeline_class` names)."""

    default_blocks_name = "LoopBlocks"


class SyncingLoopDenoiser(base.LoopDenoiser):
    def __call__(self, components, block_state, i, t):  # type: ignore[no-untyped-def]
        float(block_state.latents.sum())  # twin: syncs per step
        return super().__call__(components, block_state, i, t)


class SyncingLoop(base.DenoiseLoop):
    block_classes = [SyncingLoopDenoiser, base.LoopAfterDenoiser]
    block_names = ["denoiser", "after_denoiser"]


class SyncingLoopBlocks(base.LoopBlocks):
    block_classes = [base.SetTimesteps, SyncingLoop]


class ScaledAfterDenoiser(base.LoopAfterDenoiser):
    def __call__(self, components, block_state, i, t):  # type: ignore[no-untyped-def]
        block_state.noise = 0.5 * block_state.noise  # on the device: no sync
        return super().__call__(components, block_state, i, t)


class ScaledLoop(base.DenoiseLoop):
    block_classes = [base.LoopDenoiser, ScaledAfterDenoiser]
    block_names = ["denoiser", "after_denoiser"]


class ScaledLoopBlocks(base.LoopBlocks):
    block_classes = [base.SetTimesteps, ScaledLoop]


class SyncingLoopModularPipeline(ModularPipeline):
    """Its default blocks read the latents on the host in every step of their loop."""

    default_blocks_name = "SyncingLoopBlocks"


class ScaledLoopModularPipeline(ModularPipeline):
    """Its default blocks scale the denoiser's output on the device: a clean loop."""

    default_blocks_name = "ScaledLoopBlocks"


class SyncingDenoiser(Denoiser):
    """A denoiser reading its input on the host: what a released repository's own model may do (RELEASED_IN)."""

    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        float(latents.sum())  # twin: syncs in its forward
        return super().forward(latents)


def released_components() -> dict[str, object]:
    """The stand-in of a repository a class no config names is released in: the loop's, its denoiser syncing."""
    torch.manual_seed(0)
    return {"transformer": SyncingDenoiser(), "scheduler": base.Scheduler()}


class LoneModularPipeline(ModularPipeline):
    """Of a family no modular config has (as Ideogram 4's)."""

    default_blocks_name = "LoopBlocks"


FAMILY = "loop"
LoopBlocks = base.LoopBlocks  # where default_blocks_name finds it: the class's module


def exported() -> list[Exported]:
    """The family as diffusers would list its modular exports (census.untested.exported_pipelines)."""
    family = (LoopModularPipeline, SyncingLoopModularPipeline, ScaledLoopModularPipeline)
    return [Exported(cls.__name__, FAMILY, cls, modular=True) for cls in family] + [
        Exported(LoneModularPipeline.__name__, "lone", LoneModularPipeline, modular=True)
    ]


def line_of(marker: str, cls: type) -> int:
    lines, start = inspect.getsourcelines(cls)
    return start + next(i for i, line in enumerate(lines) if f"# twin: {marker}" in line)


class LoneLoopPipeline(LoopPipeline):
    """The lone family's classic class, which no test module tests (as Ideogram 4's): a stand-in tester builds it."""


class LoneStandIn:
    """A stand-in tester of the lone family (census.standin_testers), its components what the modular blocks load."""

    pipeline_class = LoneLoopPipeline

    def get_dummy_components(self) -> dict[str, object]:
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "scheduler": base.Scheduler()}

    def get_dummy_inputs(self, device: object, seed: int = 0) -> dict[str, object]:
        generator = torch.Generator("cpu").manual_seed(seed)
        return {"latents": torch.randn(2, 8, generator=generator), "num_inference_steps": 2}
