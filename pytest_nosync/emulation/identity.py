"""What the stand-in device is called, and how to tell a tensor on it: the one thing every emulation module needs,
kept apart from the installer (device.py), which needs them all."""

from __future__ import annotations

from typing import Any

import torch

DEVICE_TYPE = "emu"  # a name no library mistakes for real hardware (see device.py)


def is_emulated(value: Any) -> bool:
    """True for a tensor (or device) on the stand-in device."""
    device = value if isinstance(value, torch.device) else getattr(value, "device", None)
    return isinstance(device, torch.device) and device.type == DEVICE_TYPE
