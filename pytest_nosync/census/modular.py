"""Modular Diffusers tester configs as census targets: the same checks and scenarios as the classic tester classes.

A modular tester config (`tests/modular_pipelines/**/test_modular_pipeline_*.py`, a `BaseModularPipelineTesterConfig`)
names `pipeline_blocks_class`, the hub repository its tests load (`pretrained_model_name_or_path`) and
`get_dummy_inputs()`. What is checked is the config: the class defining `pipeline_blocks_class`, once, whichever test
classes mix it in. Its pipeline is the blocks' (`init_pipeline()`) with the components of the repository's stand-in
(census.hub_standins.modular_repos): the hub is never reached. The rest is a classic tester's (census.testers): the
calibrating calls, the denoiser, the steps; the loop block's steps are the guard's (annotate: its progress bar is the
loop, its denoiser's call and its scheduler's step open and close each step).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import torch

from ..annotate import loop_blocks
from ..patching import Patches
from ..suite.targets.registry import _cast_like_from_pretrained, placed
from .hub_standins.modular_repos import NoStandIn, components_for
from .testers import NotDrivable, Tester, _input_binder, _reason, tester_name

REPO = "pretrained_model_name_or_path"


def provider(cls: type) -> type | None:
    """The class in `cls`'s bases that defines `pipeline_blocks_class` (None: not a modular tester)."""
    return next((k for k in cls.__mro__ if "pipeline_blocks_class" in vars(k)), None)


def is_modular_tester(cls: Any) -> bool:
    """A class with a `pipeline_blocks_class` (a class), a repository id and `get_dummy_inputs`."""
    if not inspect.isclass(cls) or provider(cls) is None or not callable(getattr(cls, "get_dummy_inputs", None)):
        return False
    blocks = inspect.getattr_static(cls, "pipeline_blocks_class", None)
    return inspect.isclass(blocks) and isinstance(inspect.getattr_static(cls, REPO, None), str)


class ModularTester(Tester):
    """One modular tester config, made ready to drive: its pipeline built from its blocks and its repository's
    stand-in, its inputs for a call of N steps."""

    def __init__(self, cls: type) -> None:
        if not is_modular_tester(cls):
            raise NotDrivable(f"{cls.__qualname__} has no pipeline_blocks_class with a repository and get_dummy_inputs")
        self.cls = cls
        self.name = tester_name(provider(cls) or cls)
        self.blocks_class = inspect.getattr_static(cls, "pipeline_blocks_class")
        pipeline = inspect.getattr_static(cls, "pipeline_class", None)
        self.pipeline_class = pipeline if inspect.isclass(pipeline) else self.blocks_class
        self.repo: str = inspect.getattr_static(cls, REPO)
        self.calibration = None
        self._instance = None
        self._inputs = _input_binder(cls.get_dummy_inputs)

    def components(self) -> dict[str, Any]:
        """The stand-in's components, by name (NotDrivable: no stand-in, or its build raised)."""
        try:
            build = components_for(self.repo)
            return build()
        except NoStandIn as exc:
            raise NotDrivable(str(exc)) from exc
        except (ImportError, OSError, ValueError, TypeError, AttributeError, RuntimeError) as exc:
            raise NotDrivable(_reason(f"the stand-in of {self.repo}", exc)) from exc

    def build(self, device: torch.device, dtype: torch.dtype) -> Any:
        """The pipeline built the way its tests build it (the tester's `get_pipeline`, which some override to adjust
        the pipeline, else `init_pipeline(repo)` then `load_components`), the repository standing in: `init_pipeline`
        takes no repository and `load_components` gives the stand-in's components. In `dtype` on `device`, progress
        bars off."""
        # diffusers is imported once a census item runs, never to collect one (as census.testers does)
        from diffusers.modular_pipelines import ModularPipeline

        patches = Patches()
        init = self.blocks_class.init_pipeline
        components = self.components

        def init_pipeline(blocks: Any, pretrained_model_name_or_path: Any = None, *args: Any, **kwargs: Any) -> Any:
            try:
                return init(blocks, None, *args, **kwargs)
            except Exception as exc:
                raise NotDrivable(_reason(f"{type(blocks).__name__}().init_pipeline()", exc)) from exc

        def load_components(pipe: Any, names: Any = None, **kwargs: Any) -> None:
            given = components()
            try:  # components the blocks refuse are the stand-in's misfit, not the pipeline's raise
                pipe.update_components(**given)
            except Exception as exc:
                raise NotDrivable(_reason(f"the stand-in of {self.repo} in {type(pipe).__name__}", exc)) from exc

        try:  # blocks that cannot be built are the tester's, not the pipeline's call, which is what is checked
            self.blocks_class()
        except Exception as exc:
            raise NotDrivable(_reason(f"{self.blocks_class.__name__}()", exc)) from exc
        own = getattr(self.instance, "get_pipeline", None)
        try:
            patches.setattr(self.blocks_class, "init_pipeline", init_pipeline)
            patches.setattr(ModularPipeline, "load_components", load_components)
            if callable(own):  # dtype by position: a tester may name it torch_dtype (Cosmos3 distilled's)
                pipe = own(None, dtype)
            else:
                pipe = self.blocks_class().init_pipeline(self.repo)
                pipe.load_components(dtype=dtype)
        finally:
            patches.undo()
        return ready(pipe, device, dtype)

    def call_parameters(self, pipe: Any) -> frozenset[str]:
        """The inputs its blocks take (a modular pipeline's call takes them as keywords)."""
        return frozenset(param.name for param in pipe._blocks.inputs if param.name)

    def with_steps(self, pipe: Any, inputs: dict[str, Any], steps: int) -> dict[str, Any]:
        """`inputs` for a call of `steps` num_inference_steps, each per-step input its blocks take (per_step_inputs:
        Ideogram 4's guidance schedule, which they refuse at another length) resampled to `steps` entries: the one
        given, else the blocks' default, which is as long as their default step count."""
        inputs = super().with_steps(pipe, inputs, steps)
        for name, default in per_step_inputs(pipe._blocks.inputs).items():
            given = inputs.get(name)
            schedule = default if given is None else given
            if len(schedule) != steps:
                inputs[name] = resampled(schedule, steps)
        return inputs


def per_step_inputs(params: Sequence[Any]) -> dict[str, Sequence[Any]]:
    """The blocks' inputs (InputParam) with one entry a step, by name, and their defaults: those whose default is a
    list or tuple as long as the default of their `num_inference_steps`."""
    steps = next((param.default for param in params if param.name == "num_inference_steps"), None)
    if not isinstance(steps, int):
        return {}
    return {
        param.name: param.default
        for param in params
        if param.name and isinstance(param.default, (list, tuple)) and len(param.default) == steps
    }


def resampled(schedule: Sequence[Any], steps: int) -> list[Any]:
    """`schedule` at `steps` evenly spaced places from its first entry to its last: its shape at another length."""
    last = len(schedule) - 1
    return [schedule[round(i * last / max(steps - 1, 1))] for i in range(steps)]


def ready(pipe: Any, device: torch.device, dtype: torch.dtype) -> Any:
    """A modular pipeline with its components in `dtype` (as a load in it casts them) on `device`, its loop blocks'
    progress bars off."""
    for component in pipe.components.values():
        if isinstance(component, torch.nn.Module):
            _cast_like_from_pretrained(component, dtype)
    placed(pipe, device)
    for block in loop_blocks(pipe):  # nested in the blocks, where the pipeline's own setting does not reach
        block.set_progress_bar_config(disable=True)
    return pipe
