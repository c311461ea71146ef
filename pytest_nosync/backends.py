"""Which machinery sees syncs here: CUDA's sync debug mode, or CPU emulation where there is no GPU."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .detectors.base import Detector

BACKENDS = ("auto", "cuda", "emulate")
# Checks that arm detectors around a block. graph_breaks is an analysis of a model, not a guard.
GUARD_CHECKS = frozenset({"syncs", "alloc_growth", "host_overhead", "recompiles"})


class BackendUnavailable(RuntimeError):
    """The chosen backend cannot run here; the message says what to do instead."""


def cuda_available() -> bool:
    return torch.cuda.is_available()


def resolve(name: str, syncs: bool = True) -> str:
    """'auto' → 'cuda' when a CUDA device is visible, else 'emulate'. With syncs=False the sync machinery
    need not exist (allocation and host checks run anywhere)."""
    if name not in BACKENDS:
        raise BackendUnavailable(f"unknown backend {name!r}: choose one of {', '.join(BACKENDS)}")
    if name == "auto":
        name = "cuda" if cuda_available() else "emulate"
    if name == "cuda" and not cuda_available():
        raise BackendUnavailable(
            "no CUDA device is visible: run on a GPU runner (`pytest -m gpu --nosync`), "
            "or choose CPU emulation with `--nosync-backend emulate`"
        )
    if syncs and name == "emulate" and "emulate" not in _SYNC_DETECTORS:
        raise BackendUnavailable("CPU emulation is not available in this version of pytest-nosync")
    return name


def _cuda_sync_detectors(mode: str, profile: bool) -> list[Detector]:
    from .detectors.cuda_sync import CudaSyncDetector
    from .detectors.explicit_sync import ExplicitSyncDetector

    detectors: list[Detector] = [CudaSyncDetector(mode), ExplicitSyncDetector(mode)]
    if profile:
        from .detectors.profiler_sync import ProfilerSyncDetector

        detectors.append(ProfilerSyncDetector())
    return detectors


# backend → factory of the detectors that see syncs on it, and the device pipelines run on under it
_SYNC_DETECTORS: dict[str, Callable[[str, bool], list[Detector]]] = {"cuda": _cuda_sync_detectors}
_DEVICES: dict[str, Callable[[], torch.device]] = {"cuda": lambda: torch.device("cuda")}


def register_sync_backend(
    name: str, factory: Callable[[str, bool], list[Detector]], device: Callable[[], torch.device]
) -> None:
    _SYNC_DETECTORS[name] = factory
    _DEVICES[name] = device


def execution_device(backend: str) -> torch.device:
    """The device a pipeline runs on under `backend` ('auto' resolved first)."""
    return _DEVICES[resolve(backend)]()


def detectors_for(
    checks: tuple[str, ...],
    backend: str,
    mode: str,
    profile: bool,
    warmup_steps: int = 1,
    limits: dict | None = None,
) -> list[Detector]:
    """The detectors for `checks`. warmup_steps: steps before steady state (e.g. a scheduler's order);
    limits: max_walk_fraction, max_host_ms, tolerance_bytes."""
    limits = limits or {}
    detectors: list[Detector] = []
    if "syncs" in checks:
        detectors.extend(_SYNC_DETECTORS[backend](mode, profile))
    if "alloc_growth" in checks:
        from .detectors.memory import MemoryDetector

        detectors.append(MemoryDetector(backend, warmup_steps, limits.get("tolerance_bytes", 0)))
    if "host_overhead" in checks:
        from .detectors.host_overhead import HostOverheadDetector

        detectors.append(
            HostOverheadDetector(warmup_steps, limits.get("max_walk_fraction", 0.25), limits.get("max_host_ms"))
        )
    if "recompiles" in checks:
        from .detectors.recompiles import RecompileDetector

        detectors.append(RecompileDetector())
    return detectors
