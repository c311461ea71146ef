"""A real diffusers pipeline of the usual shape (progress bar around the loop, denoiser, scheduler step), small enough
to plant a pattern anywhere in its loop: the step-boundary tests read where each finding lands."""

from __future__ import annotations

import copy
import inspect
from typing import Any

import torch
from diffusers import ConfigMixin, DiffusionPipeline, ModelMixin
from diffusers.configuration_utils import register_to_config


class Denoiser(ModelMixin, ConfigMixin):
    @register_to_config
    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(width, width)

    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        return self.linear(latents)


class Scheduler:
    """Steps the latents on the device with a table kept on the device: no sync of its own."""

    def __init__(self) -> None:
        self.timesteps = torch.arange(0)

    def set_timesteps(self, steps: int, device: torch.device) -> None:
        self.timesteps = torch.linspace(1.0, 0.0, steps + 1, device=device)[:-1]

    def step(self, noise: torch.Tensor, t: torch.Tensor, latents: torch.Tensor) -> torch.Tensor:
        return latents - 0.1 * noise * t


class LoopPipeline(DiffusionPipeline):
    def __init__(self, transformer: Denoiser, scheduler: Scheduler) -> None:
        super().__init__()
        self.register_modules(transformer=transformer, scheduler=scheduler)

    denoiser = "transformer"  # the attribute its loop calls

    def __call__(
        self,
        latents: torch.Tensor,
        num_inference_steps: int | None = 3,
        timesteps: list[float] | None = None,
        strength: float = 1.0,
        read_early: bool = False,
        iterate: bool = False,
        fail: bool = False,
        only_steps: int | None = None,
        plms: bool = False,
        prior_steps: int = 0,
        read_in_prior: bool = False,
        x0_step: bool = False,
        only_once: bool = False,
        callback_on_step_end: Any = None,
    ) -> torch.Tensor:
        """`strength` < 1 runs that share of the steps, as an img2img pipeline does; `fail` raises in the loop. The
        steps come from `num_inference_steps` or from a list of `timesteps`, never both (ConsistencyModelPipeline's)."""
        if (num_inference_steps is None) == (timesteps is None):
            raise ValueError("Exactly one of `num_inference_steps` or `timesteps` must be supplied.")
        num_inference_steps = num_inference_steps or len(timesteps or ())
        if only_steps is not None and num_inference_steps != only_steps:  # SanaSprint's SCM takes 2 steps, no other
            raise ValueError(f"only {only_steps} steps are supported")
        if only_once and getattr(self, "_called", False):  # a first call leaves state every later call trips on
            raise RuntimeError("Expected all tensors to be on the same device")
        self._called = True
        self._x0_step = x0_step
        if prior_steps:  # Stable unCLIP's prior: a loop of its own, behind a progress bar, before the denoiser's
            latents = self._prior(latents, prior_steps, read_in_prior, iterate)
        self.scheduler.set_timesteps(num_inference_steps, latents.device)
        timesteps = self.scheduler.timesteps[num_inference_steps - int(num_inference_steps * strength) :]
        if plms and len(timesteps) >= 2:  # PNDM's PLMS repeats its second-to-last timestep: n + 1 steps, 1 for n = 1
            timesteps = torch.cat([timesteps[:-1], timesteps[-2:]])
        if iterate:
            for t in self.progress_bar(timesteps):
                latents = self._iteration(latents, t, read_early, fail)
        else:
            with self.progress_bar(total=len(timesteps)) as bar:
                for i, t in enumerate(timesteps):
                    latents = self._iteration(latents, t, read_early, fail)
                    if callback_on_step_end is not None:  # as diffusers' pipelines call it, after the update
                        latents = callback_on_step_end(self, i, t, {"latents": latents}).get("latents", latents)
                    bar.update()
        return latents * 2

    def _prior(self, latents: torch.Tensor, steps: int, read: bool, iterate: bool) -> torch.Tensor:
        embedding = torch.zeros_like(latents)
        for t in self.progress_bar(torch.linspace(1.0, 0.0, steps, device=latents.device)):
            embedding = embedding + 0.1 * t
            if read:
                embedding = embedding * float(embedding.sum() > 0)  # twin: reads in the prior's loop
        return latents + embedding

    def _iteration(self, latents: torch.Tensor, t: torch.Tensor, read_early: bool, fail: bool) -> torch.Tensor:
        if read_early:
            latents = latents * float(t)  # twin: read before the denoiser
        if fail:
            raise ValueError("the loop fails")  # twin: raises in the loop
        noise = getattr(self, self.denoiser)(latents)
        if self._x0_step:  # Cosmos steps its scheduler twice an iteration: for the x0 prediction, then the sample
            noise = self.scheduler.step(noise, t, latents)
        return self.scheduler.step(noise, t, latents)


class NetPipeline(LoopPipeline):
    """The same loop with its denoiser under a name no pipeline uses: found by its calls, not its name."""

    denoiser = "net"

    def __init__(self, net: Denoiser, scheduler: Scheduler) -> None:
        DiffusionPipeline.__init__(self)
        self.register_modules(net=net, scheduler=scheduler)


class CopiedSchedulersPipeline(LoopPipeline):
    """SkyReels V2's diffusion forcing: each latent row gets its own deep copy of the scheduler, stepped where the row's
    mask says so; the pipeline's own scheduler never steps. Its steps are counted by its progress bar and closed at
    `callback_on_step_end`."""

    def __call__(  # type: ignore[override]
        self,
        latents: torch.Tensor,
        num_inference_steps: int = 3,
        read_mask: bool = False,
        iterate: bool = False,
        callback_on_step_end: Any = None,
    ) -> torch.Tensor:
        self.scheduler.set_timesteps(num_inference_steps, latents.device)
        timesteps = self.scheduler.timesteps
        self._schedulers = [copy.deepcopy(self.scheduler) for _ in range(latents.shape[0])]
        self._update = torch.ones(latents.shape[0], dtype=torch.bool, device=latents.device)
        if iterate:
            for i, t in enumerate(self.progress_bar(timesteps)):
                latents = self._forcing_step(latents, i, t, read_mask, callback_on_step_end)
        else:
            with self.progress_bar(total=len(timesteps)) as bar:
                for i, t in enumerate(timesteps):
                    latents = self._forcing_step(latents, i, t, read_mask, callback_on_step_end)
                    bar.update()
        return latents * 2

    def _forcing_step(self, latents: torch.Tensor, i: int, t: torch.Tensor, read_mask: bool, callback: Any) -> Any:
        noise = self.transformer(latents)
        stepped = latents.clone()
        for row, scheduler in enumerate(self._schedulers):
            if not read_mask or self._update[row].item():  # twin: reads the row's mask
                stepped[row] = scheduler.step(noise[row], t, latents[row])
        if callback is not None:
            callback(self, i, t, {})
        return stepped


class ScmPipeline(LoopPipeline):
    """SanaSprint's SCM: `intermediate_timesteps` holds the steps at 2, raising at any other count; None frees them."""

    def __call__(  # type: ignore[override]
        self, latents: torch.Tensor, num_inference_steps: int = 2, intermediate_timesteps: float | None = 1.3,
        strength: float = 1.0,
    ) -> torch.Tensor:  # fmt: skip
        if intermediate_timesteps is not None and num_inference_steps != 2:
            raise ValueError("Intermediate timesteps for SCM is not supported when num_inference_steps != 2.")
        return super().__call__(latents, num_inference_steps, strength=strength)


class TwoExpertsPipeline(LoopPipeline):
    """Wan 2.2's two experts: `transformer` denoises the steps above the boundary, `transformer_2` the others, each
    called twice a step (guidance). Deciding on the device timestep reads it in every step; on the host list, never."""

    def __init__(self, transformer: Denoiser, transformer_2: Denoiser, scheduler: Scheduler) -> None:
        DiffusionPipeline.__init__(self)
        self.register_modules(transformer=transformer, transformer_2=transformer_2, scheduler=scheduler)

    def __call__(  # type: ignore[override]
        self, latents: torch.Tensor, num_inference_steps: int = 2, boundary: float = 0.75, on_host: bool = False
    ) -> torch.Tensor:
        self.scheduler.set_timesteps(num_inference_steps, latents.device)
        timesteps = self.scheduler.timesteps
        high_noise = [1.0 - i / num_inference_steps >= boundary for i in range(num_inference_steps)]
        with self.progress_bar(total=num_inference_steps) as bar:
            for i, t in enumerate(timesteps):
                if on_host:
                    expert = self.transformer if high_noise[i] else self.transformer_2
                else:
                    expert = self.transformer if t >= boundary else self.transformer_2  # twin: reads the timestep
                noise = expert(latents) + 0.5 * expert(latents)
                latents = self.scheduler.step(noise, t, latents)
                bar.update()
        return latents * 2


def build(device: torch.device, pipeline: type = LoopPipeline) -> LoopPipeline:
    torch.manual_seed(0)
    pipe = pipeline(Denoiser(), Scheduler())
    pipe.transformer.to(device)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def line_of(marker: str, pipeline: type = LoopPipeline) -> int:
    lines, start = inspect.getsourcelines(pipeline)
    return start + next(i for i, line in enumerate(lines) if f"# twin: {marker}" in line)


def latents(device: torch.device) -> Any:
    return torch.randn(2, 8).to(device)


class UpsamplePipeline(DiffusionPipeline):
    """No denoising loop: one call of each of its models (the upsampler the larger) a pipeline call, as diffusers'
    latent upsamplers are; latents of 64 features. `leak` keeps each call's output (a growth), `peek` reads a device
    value on the host (a sync)."""

    def __init__(self, upsampler: Denoiser, projector: Denoiser) -> None:
        super().__init__()
        self.register_modules(upsampler=upsampler, projector=projector)
        self.kept: list[torch.Tensor] = []
        self.leak = self.peek = False

    @torch.no_grad()
    def __call__(self, latents: torch.Tensor) -> torch.Tensor:
        out = self.upsampler(self.projector(latents.reshape(-1, 8)).reshape(latents.shape))  # twin: models
        if self.peek and out.abs().max().item() > 1e9:  # twin: peek
            out = out / 2
        if self.leak:
            self.kept.append(out.clone())  # twin: leak
        return out


def build_upsampler(device: torch.device) -> UpsamplePipeline:
    torch.manual_seed(0)
    return UpsamplePipeline(Denoiser(64), Denoiser(8)).to(device)
