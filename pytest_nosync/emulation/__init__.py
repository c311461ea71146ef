"""CPU emulation of an accelerator, so that syncs can be found on a machine without a GPU.

A pipeline moved to the stand-in device (`install()` returns it) computes on the CPU, but its tensors
say they live on the device: a value read back to Python, or a host tensor copied in, is a real event in
torch's dispatcher, seen by `syncs` exactly where the GPU would have synchronized. Which tensors are "on
the device" is therefore decided by the pipeline's own `.to(device)` calls, as on a GPU, not guessed.

Nothing here runs at import: the device exists once `install()` is called (the emulate backend does that
when a test asks for its execution device).

identity (the device's name, and telling a tensor on it), device (the PrivateUse1 backend), tensor (its tensors),
kernels (its kernels in torch's dispatcher), syncs (which operations would sync a GPU), streams (its streams and
events), cuda_map (CUDA-written code run unchanged on it).
"""

from __future__ import annotations

from .device import DEVICE_TYPE, EmulationUnavailable, generator, install, is_emulated, unavailable_reason

__all__ = ["DEVICE_TYPE", "EmulationUnavailable", "generator", "install", "is_emulated", "unavailable_reason"]
