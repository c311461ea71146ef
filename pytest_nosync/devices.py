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
    reason = _UNAVAILABLE[name]() if name in _UNAVAILABLE else None
    if reason is not None:
        raise BackendUnavailable(reason)
    return name


def _cuda_sync_detectors(mode: str, profile: bool) -> list[Detector]:
    from .detectors.cuda_sync import CudaSyncDetector
    from .detectors.explicit_sync import ExplicitSyncDetector

    detectors: list[Detector] = [CudaSyncDetector(mode), ExplicitSyncDetector(mode)]
    if profile:
        from .detectors.profiler_sync import ProfilerSyncDetector

        detectors.append(ProfilerSyncDetector())
    return detectors


def _emulated_sync_detectors(mode: str, profile: bool) -> list[Detector]:
    # No profiler confirmation here: the emulated device has no CUDA syncs for a profiler to see.
    from .detectors.emulated import EmulatedSyncDetector
    from .detectors.explicit_sync import ExplicitSyncDetector

    return [EmulatedSyncDetector(mode), ExplicitSyncDetector(mode)]


def _emulated_device() -> torch.device:
    from .emulation import install

    return install()  # creates the stand-in device on first use (see pytest_nosync.emulation.device)


def _emulation_unavailable() -> str | None:
    from .emulation import unavailable_reason

    reason = unavailable_reason()
    return f"CPU emulation is not available: {reason}" if reason else None


# backend → factory of the detectors that see syncs on it, and the device pipelines run on under it
_SYNC_DETECTORS: dict[str, Callable[[str, bool], list[Detector]]] = {"cuda": _cuda_sync_detectors}
_DEVICES: dict[str, Callable[[], torch.device]] = {"cuda": lambda: torch.device("cuda")}
_UNAVAILABLE: dict[str, Callable[[], str | None]] = {}


def register_sync_backend(
    name: str,
    factory: Callable[[str, bool], list[Detector]],
    device: Callable[[], torch.device],
    unavailable: Callable[[], str | None] | None = None,
) -> None:
    """Add a backend: its sync detectors, its execution device, and why it cannot run here (None: it can)."""
    _SYNC_DETECTORS[name] = factory
    _DEVICES[name] = device
    if unavailable is not None:
        _UNAVAILABLE[name] = unavailable


# Registering costs nothing: the device is created when a test first asks for it.
register_sync_backend("emulate", _emulated_sync_detectors, _emulated_device, _emulation_unavailable)


def execution_device(backend: str) -> torch.device:
    """The device a pipeline runs on under `backend` ('auto' resolved first)."""
    return _DEVICES[resolve(backend)]()


def generator(device: torch.device | str, seed: int) -> torch.Generator:
    """A seeded generator on `device`. The emulated device cannot have a torch.Generator of its own, so it
    gets a CPU generator that reports the emulated device (diffusers samples where the generator is)."""
    from .emulation import DEVICE_TYPE

    kind = device.type if isinstance(device, torch.device) else str(device).split(":")[0]
    if kind == DEVICE_TYPE:
        from .emulation import generator as emulated_generator

        return emulated_generator(seed)
    return torch.Generator(device=device).manual_seed(seed)


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
