"""A real Modular Diffusers pipeline of the usual shape (a set-timesteps block, then a loop block whose steps call the
denoiser and the scheduler), small enough to plant a pattern in its loop: the modular census's twins."""

from __future__ import annotations

import inspect

import torch
from diffusers import ConfigMixin
from diffusers.configuration_utils import register_to_config
from diffusers.modular_pipelines import (
    LoopSequentialPipelineBlocks,
    ModularPipelineBlocks,
    PipelineState,
    SequentialPipelineBlocks,
)
from diffusers.modular_pipelines.modular_pipeline_utils import ComponentSpec, InputParam, OutputParam

from tests.twins import loop_pipeline
from tests.twins.loop_pipeline import Denoiser


class Scheduler(loop_pipeline.Scheduler, ConfigMixin):
    """The loop pipeline's scheduler with a config: a modular pipeline's components are models or configured."""

    config_name = "scheduler_config.json"

    @register_to_config
    def __init__(self) -> None:
        super().__init__()


class SetTimesteps(ModularPipelineBlocks):
    @property
    def expected_components(self) -> list[ComponentSpec]:
        return [ComponentSpec("scheduler", Scheduler, default_creation_method="from_config")]

    @property
    def inputs(self) -> list[InputParam]:
        return [InputParam("latents", required=True), InputParam("num_inference_steps", default=3)]

    @property
    def intermediate_outputs(self) -> list[OutputParam]:
        return [OutputParam("timesteps")]

    def __call__(self, components, state: PipelineState):
        block_state = self.get_block_state(state)
        components.scheduler.set_timesteps(block_state.num_inference_steps, block_state.latents.device)
        block_state.timesteps = components.scheduler.timesteps
        self.set_block_state(state, block_state)
        return components, state


class LoopDenoiser(ModularPipelineBlocks):
    @property
    def expected_components(self) -> list[ComponentSpec]:
        return [ComponentSpec("transformer", Denoiser)]

    @property
    def inputs(self) -> list[InputParam]:
        return [InputParam("latents", required=True), InputParam("read_early", default=False),
                InputParam("fail", default=False), InputParam("by_signature", default=False)]  # fmt: skip

    def __call__(self, components, block_state, i: int, t: torch.Tensor):
        if block_state.read_early:
            float(block_state.latents.sum())  # read before the denoiser
        if block_state.fail:
            raise ValueError("the modular loop fails")  # raises in the modular loop
        if block_state.by_signature:  # as QwenImage's, LTX2's, Cosmos3's blocks: only the fields its forward names
            accepted = set(inspect.signature(components.transformer.forward).parameters)
            fields = {"latents": block_state.latents, "guidance_scale": 4.0}
            block_state.noise = components.transformer(**{k: v for k, v in fields.items() if k in accepted})
        else:
            block_state.noise = components.transformer(block_state.latents)
        return components, block_state


class LoopAfterDenoiser(ModularPipelineBlocks):
    @property
    def expected_components(self) -> list[ComponentSpec]:
        return [ComponentSpec("scheduler", Scheduler, default_creation_method="from_config")]

    def __call__(self, components, block_state, i: int, t: torch.Tensor):
        block_state.latents = components.scheduler.step(block_state.noise, t, block_state.latents)
        return components, block_state


class DenoiseLoop(LoopSequentialPipelineBlocks):
    block_classes = [LoopDenoiser, LoopAfterDenoiser]
    block_names = ["denoiser", "after_denoiser"]

    @property
    def description(self) -> str:
        return "the denoising loop"

    @property
    def loop_inputs(self) -> list[InputParam]:
        return [InputParam("timesteps", required=True)]

    @property
    def intermediate_outputs(self) -> list[OutputParam]:
        return [OutputParam("latents")]

    def __call__(self, components, state: PipelineState):
        block_state = self.get_block_state(state)
        with self.progress_bar(total=len(block_state.timesteps)) as bar:
            for i, t in enumerate(block_state.timesteps):
                components, block_state = self.loop_step(components, block_state, i=i, t=t)
                bar.update()
        self.set_block_state(state, block_state)
        return components, state


class LoopBlocks(SequentialPipelineBlocks):
    block_classes = [SetTimesteps, DenoiseLoop]
    block_names = ["set_timesteps", "denoise"]

    @property
    def description(self) -> str:
        return "set the timesteps, then denoise"


class ScheduledSetTimesteps(SetTimesteps):
    """Takes a per-step scale, as Ideogram 4's blocks take their guidance schedule: its default as long as the default
    step count, another length than the call's steps refused."""

    @property
    def inputs(self) -> list[InputParam]:
        return [*super().inputs, InputParam("scale_schedule", default=(1.0, 1.0, 0.5))]

    def __call__(self, components, state: PipelineState):
        block_state = self.get_block_state(state)
        if len(block_state.scale_schedule) != block_state.num_inference_steps:
            raise ValueError("scale_schedule must have length num_inference_steps")
        return super().__call__(components, state)


class ScheduledLoopBlocks(LoopBlocks):
    block_classes = [ScheduledSetTimesteps, DenoiseLoop]


def tiny_components() -> dict[str, object]:
    """The stand-in's components: what a hub repository of this pipeline would hold."""
    torch.manual_seed(0)
    return {"transformer": Denoiser(), "scheduler": Scheduler()}


def line_of(marker: str) -> int:
    """The line of this module whose comment is `marker`."""
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()
    return next(n for n, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}"))
