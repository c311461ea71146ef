"""The syncs check: which detectors see syncs on each backend.

cuda: torch's sync debug mode, explicit synchronize calls, and (opt-in) the profiler confirming each one.
emulate: the stand-in device's own op hook, and explicit synchronize calls. No profiler confirmation there: the
emulated device has no CUDA syncs for a profiler to see.
"""

from __future__ import annotations

from ..guard_options import GuardOptions
from .base import Detector
from .explicit_sync import ExplicitSyncDetector


def detectors(options: GuardOptions) -> list[Detector]:
    if options.backend == "cuda":
        from .cuda_sync import CudaSyncDetector

        found: list[Detector] = [CudaSyncDetector(options), ExplicitSyncDetector(options)]
        if options.profile:
            from .profiler_sync import ProfilerSyncDetector

            found.append(ProfilerSyncDetector(options))
        return found
    from .emulated import EmulatedSyncDetector

    return [EmulatedSyncDetector(options), ExplicitSyncDetector(options)]
