"""A stand-in for a diffusers pipeline: the same shape of call (encode, denoising loop with a transformer and a
scheduler step, callback_on_step_end, VAE decode), tiny and on the CPU."""

from __future__ import annotations

import time
from typing import Any

import torch


class TinyTransformer(torch.nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(dim, dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.out(torch.nn.functional.gelu(self.proj(x) + t))


def slow_host_work(seconds: float) -> None:
    time.sleep(seconds)


def read_back(x: torch.Tensor) -> float:
    return x.sum().item()  # a device-to-host sync on CUDA


def shuffle_layout(x: torch.Tensor) -> torch.Tensor:
    # a layout copy (permute + contiguous: a direct_copy kernel) and a same-layout copy (clone: a DtoD memcpy)
    return x.t().contiguous().t().clone()


class TinyScheduler:
    def __init__(self) -> None:
        self.stall: dict[int, float] = {}  # step index → seconds of host work planted in that step
        self.fail_at: int | None = None
        self.item_at: int | None = None  # the step with a planted .item()
        self.copy_at: set[int] = set()  # the steps with planted copies
        self.calls = 0

    def step(self, noise: torch.Tensor, t: torch.Tensor, latents: torch.Tensor) -> torch.Tensor:
        index = self.calls
        self.calls += 1
        if index in self.stall:
            slow_host_work(self.stall[index])
        if self.fail_at == index:
            raise ValueError("scheduler failed")
        if self.item_at == index:
            read_back(noise)
        if index in self.copy_at:
            noise = shuffle_layout(noise)
        return latents - 0.1 * noise


class TinyVae:
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        return latents * 2


class TinyPipeline:
    def __init__(self, device: str = "cpu", dtype: torch.dtype = torch.float32) -> None:
        self.transformer = TinyTransformer().to(device, dtype)
        self.scheduler = TinyScheduler()
        self.vae = TinyVae()
        self.device, self.dtype = device, dtype

    def encode_prompt(self, prompt: str) -> torch.Tensor:
        return torch.zeros(1, 16, device=self.device, dtype=self.dtype)

    def __call__(
        self, prompt: str = "a cat", num_inference_steps: int = 2, callback_on_step_end: Any = None
    ) -> torch.Tensor:
        self.scheduler.calls = 0
        embeds = self.encode_prompt(prompt)
        latents = torch.randn(4, 16, generator=torch.Generator().manual_seed(0)).to(self.device, self.dtype)
        for i in range(num_inference_steps):
            t = torch.full((1,), 1.0 - i / num_inference_steps, device=self.device, dtype=self.dtype)
            noise = self.transformer(latents + embeds, t)
            latents = self.scheduler.step(noise, t, latents)
            if callback_on_step_end is not None:
                callback_on_step_end(self, i, t, {})
        return self.vae.decode(latents)
