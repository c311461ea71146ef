"""Garbage only Python's cyclic collector frees, as a previous test's pipeline can be: the memory detectors must not
read its collection in the middle of a step as memory the step freed."""

from __future__ import annotations

import weakref

import torch


def garbage_from_earlier_work(device: torch.device) -> weakref.ref:
    """256 KiB on `device` held only by a reference cycle; the weakref says when the collector freed it."""
    cycle: list = [torch.ones(64 * 1024, device=device)]
    cycle.append(cycle)
    return weakref.ref(cycle[0])
